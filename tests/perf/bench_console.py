"""Console speed, measured in a real pseudo-terminal (the bytes a terminal would draw).

    python tests/perf/bench_console.py [--quick]

- keypress to screen, p95, with 1000 instances listed and 10 samples/s arriving: < 100 ms.
  The console runs in a pty with the Instances view listing 1000 instances while a feeder
  publishes 10 host samples per second into the Run view; each `down` key is timed from
  its write to the pty until the redrawn row under the new cursor is read back.
- idle console CPU, `labtui` with nothing running (it samples the host every second): < 5% of a core.
- `labtui` to a drawn screen: < 2 s.
"""

from __future__ import annotations

import argparse
import ctypes
import asyncio
import fcntl
import os
import pty
import signal
import select
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
from common import report  # noqa: E402

SIZE = (160, 50)
ROWS = 1000
DOWN = b"\x1b[B"


PR_SET_PDEATHSIG = 1


class Pty:
    """A child process on a pseudo-terminal of a fixed size; output is read and kept."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[1], SIZE[0], 0, 0))
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

    def drain(self, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            self.read(end - time.perf_counter())

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
    """In the child: be killed when the benchmark dies, even by a timeout's SIGKILL."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def env_for(tmp: Path) -> dict[str, str]:
    return {"LABTUI_RUNTIME_DIR": str(tmp / "runtime"), "LABTUI_STATE_DIR": str(tmp / "state")}


# --- the console child for the latency benchmark -------------------------------------------------


def child() -> None:
    """The console with 1000 listed instances and 10 samples/s, on this process's terminal."""
    from labtui.backends import Instance, Labels, open_backend
    from labtui.events import ResourceSample, SessionStarted, StepStarted
    from labtui.hosts import get_host
    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import InstancesView
    from labtui.ui.inventory import Found

    backend = open_backend("process", get_host("local"))
    now = time.time()
    found = [Found(backend, Instance(Labels("20260101-000000-bench0", "background", f"ba{i:04d}"), f"lab-ba{i:04d}",
                                     "process", "local", "running", now - i), 1_000_000 + i, i % 7 == 0)
             for i in range(ROWS)]

    class Bench(LabApp):
        async def on_mount(self) -> None:
            queue: asyncio.Queue = asyncio.Queue()
            self.run_view.model.reset("boot-scaling", "process", "local", 1, 101)
            queue.put_nowait(SessionStarted("20260101-000000-bench0", "boot-scaling", "scaling", "process", "local",
                                            {}, os.getpid()))
            queue.put_nowait(StepStarted("20260101-000000-bench0", 1, 0, 101, 0))
            self.run_view.follow(queue)
            view = self.query_one(InstancesView)
            view.show(found, ["process"], [])
            self.call_after_refresh(self.action_show_tab, "tab-instances")  # after LabApp.on_mount's focus
            self.run_worker(self.feed(queue), group="bench")

        async def feed(self, queue: asyncio.Queue) -> None:
            i = 0
            while True:
                await asyncio.sleep(0.1)
                i += 1
                queue.put_nowait(ResourceSample("local", 0.5 + (i % 10) / 40, 0.7, 1.0, 2**30, 0.4,
                                                session_id="20260101-000000-bench0", instances=i))

    Bench(Path(tempfile.gettempdir()) / "labtui-bench-unused.duckdb", idle_sampling=False).run()


# --- measurements -------------------------------------------------------------------------------------


def keypress_latency(presses: int, tmp: Path) -> list[float]:
    term = Pty([sys.executable, str(Path(__file__).resolve()), "--child"], env_for(tmp))
    try:
        term.wait_for(b"1000 instance(s)", 30)
        term.drain(1.0)
        latencies = []
        for k in range(1, presses + 1):
            term.drain(0.05 + (k % 7) * 0.013)  # vary the phase against the 100 ms drain and the samples
            os.write(term.master, DOWN)
            latencies.append(term.wait_for(f"lab-ba{k:04d}".encode(), 5))
        return latencies
    finally:
        term.close()


def startup(tmp: Path) -> float:
    term = Pty([sys.executable, "-m", "labtui", "--db", str(tmp / "lab.duckdb")], env_for(tmp))
    try:
        return term.wait_for(b"no run yet", 30)
    finally:
        term.close()


def idle_cpu(seconds: float, tmp: Path) -> float:
    term = Pty([sys.executable, "-m", "labtui", "--db", str(tmp / "lab.duckdb")], env_for(tmp))
    try:
        term.wait_for(b"no run yet", 30)
        term.drain(2.0)
        before, start = term.cpu_seconds(), time.perf_counter()
        term.drain(seconds)
        return (term.cpu_seconds() - before) / (time.perf_counter() - start)
    finally:
        term.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer presses, shorter idle window")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return 0
    with tempfile.TemporaryDirectory(prefix="labtui-bench-") as name:
        tmp = Path(name)
        latencies = keypress_latency(30 if args.quick else 120, tmp)
        p95 = statistics.quantiles(latencies, n=20)[-1] * 1000
        report("console keypress to screen p95 (1000 instances, 10 samples/s)", p95, "ms", "target 100 ms",
               p95 / 100, p95 < 100)
        report("console keypress to screen median", statistics.median(latencies) * 1000, "ms", "target 100 ms",
               statistics.median(latencies) * 1000 / 100)
        share = idle_cpu(5.0 if args.quick else 20.0, tmp) * 100
        report("console idle CPU", share, "% of a core", "target 5%", share / 5, share < 5)
        starts = [startup(tmp) for _ in range(1 if args.quick else 3)]
        first = statistics.median(starts)
        report("labtui to a drawn screen", first, "s", "target 2 s", first / 2, first < 2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
