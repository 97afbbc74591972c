"""A program on a pseudo-terminal, driven as a terminal drives it: bytes in, output read back.

Pilot hands keys to a Textual app as messages, in an order and at moments a terminal never does;
the console's key tests and benchmarks that must hold for a real terminal use this instead.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PR_SET_PDEATHSIG = 1


class Pty:
    """A child process on a pseudo-terminal of `size` (columns, rows); output is read and kept."""

    def __init__(self, argv: list[str], env: dict[str, str], size: tuple[int, int] = (160, 50)) -> None:
        self.started = time.perf_counter()
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        clean = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=REPO, start_new_session=True,
                                     env={**clean, "TERM": "xterm-256color", **env}, preexec_fn=_die_with_parent)
        os.close(slave)
        self.master = master
        self.seen = b""

    def read(self, timeout: float) -> bytes:
        """Whatever arrives within timeout (empty when nothing does)."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return b""
        try:
            data = os.read(self.master, 1 << 16)
        except OSError:
            return b""
        self.seen = (self.seen + data)[-(1 << 20):]
        return data

    def write(self, data: bytes) -> None:
        """Type `data` (a key's bytes, as the terminal sends them)."""
        os.write(self.master, data)

    def wait_for(self, marker: bytes, timeout: float) -> float:
        """Seconds until marker appears in newly read output."""
        start = time.perf_counter()
        tail = b""
        while True:
            left = timeout - (time.perf_counter() - start)
            if left <= 0:
                raise TimeoutError(f"{marker!r} not seen within {timeout} s")
            tail = (tail + self.read(min(left, 0.05)))[-(1 << 18):]
            if marker in tail:
                return time.perf_counter() - start

    def since_start(self, marker: bytes, timeout: float) -> float:
        """Seconds from the process's start until marker is read back."""
        self.wait_for(marker, timeout)
        return time.perf_counter() - self.started

    def drain(self, seconds: float) -> None:
        """Read (and keep) output for `seconds`, so the child never blocks on a full terminal."""
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.read(max(0.0, end - time.perf_counter()))

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        os.close(self.master)


def _die_with_parent() -> None:
    """In the child: be killed when the test or benchmark dies, even by a timeout's SIGKILL."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
