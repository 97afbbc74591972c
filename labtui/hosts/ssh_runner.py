"""A long-lived command runner on an SSH host: commands without a login shell each.

Every SSH exec request starts the user's login shell, which reads its rc files
(on some hosts that alone costs 100 ms of CPU).  A runner is one such session,
started once, that turns into a POSIX ``sh`` loop: it reads one command per line,
runs it with ``sh -c`` (output to two private files, stdin from /dev/null),
and answers with the child's PID, then the exit status and both outputs,
length-prefixed.  One runner runs one command at a time; a connection keeps
its idle runners for the next commands.

Protocol, runner to controller: ``S <runner pid>`` once, then per command
``P <pid>`` and ``R <status> <stdout bytes> <stderr bytes>`` followed by
exactly those bytes.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Sequence

import asyncssh

#: The runner loop; $1 is the private runtime dir where it keeps its two output files.
RUNNER_SCRIPT = r"""o="$1/.runner-$$.out"; e="$1/.runner-$$.err"
trap 'rm -f "$o" "$e"' EXIT
printf 'S %s\n' $$
while IFS= read -r cmd; do
  sh -c "$cmd" </dev/null >"$o" 2>"$e" &
  printf 'P %s\n' $!
  wait $!
  rc=$?
  printf 'R %s %s %s\n' "$rc" $(wc -c <"$o") $(wc -c <"$e")
  cat "$o" "$e"
done
"""


class RunnerError(Exception):
    """The runner's channel broke or answered out of protocol; the runner is unusable."""

    def __init__(self, message: str, exit_status: int | None = None) -> None:
        super().__init__(message)
        self.exit_status = exit_status


def one_line_command(argv: Sequence[str]) -> str:
    """``exec ARGV`` as one line of sh: each word quoted, newlines inside words spelled ``$nl``."""
    words = [shlex.quote(str(w)) for w in argv]
    if not any("\n" in w for w in words):
        return "exec " + " ".join(words)
    # shlex.quote puts any word holding a newline inside single quotes: close them around $nl
    words = [w.replace("\n", "'\"$nl\"'") for w in words]
    return "nl=$(printf '\\nx'); nl=${nl%x}; exec " + " ".join(words)


class Runner:
    """One runner process on the host, reached through its SSH channel."""

    def __init__(self, proc: asyncssh.SSHClientProcess, pid: int) -> None:
        self.proc = proc
        self.pid = pid  # leads the session's process group: killing -pid ends it and its command

    @classmethod
    async def start(cls, conn: asyncssh.SSHClientConnection, launch: str) -> Runner:
        """Start a runner with the remote command launch (which runs RUNNER_SCRIPT)."""
        proc = await conn.create_process(launch, encoding=None)
        try:
            line = await proc.stdout.readline()
            words = line.split()
            if len(words) == 2 and words[0] == b"S" and words[1].isdigit():
                return cls(proc, int(words[1]))
            proc.stdin.write_eof()
            await proc.wait_closed()
            err = (await proc.stderr.read()).decode(errors="replace").strip()
        except BaseException:  # cancelled or timed out: the session must not outlive us
            proc.close()
            raise
        raise RunnerError(err or f"runner did not start: {line[:200]!r}", proc.returncode)

    @property
    def usable(self) -> bool:
        return self.proc.returncode is None and not self.proc.is_closing()

    def files(self, runtime_dir: str) -> list[str]:
        """The two output files this runner keeps in runtime_dir (left behind if it is killed)."""
        return [f"{runtime_dir}/.runner-{self.pid}.out", f"{runtime_dir}/.runner-{self.pid}.err"]

    async def run(self, command: str) -> tuple[int, bytes, bytes]:
        """Run one line of sh. Returns (status, stdout, stderr)."""
        try:
            self.proc.stdin.write(command.encode() + b"\n")
            await self._line(b"P")
            status, out_len, err_len = (int(w) for w in await self._line(b"R"))
            out = await self.proc.stdout.readexactly(out_len) if out_len else b""
            err = await self.proc.stdout.readexactly(err_len) if err_len else b""
        except (asyncssh.Error, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            self.close()
            raise RunnerError(str(exc) or type(exc).__name__) from exc
        return status, out, err

    async def _line(self, tag: bytes) -> list[bytes]:
        line = await self.proc.stdout.readline()
        words = line.split()
        if not words or words[0] != tag:
            raise ValueError(f"runner answered {line[:200]!r}, expected {tag.decode()}")
        return words[1:]

    def close(self) -> None:
        """Close the channel; the loop ends at its next read (a running command finishes first)."""
        self.proc.close()
