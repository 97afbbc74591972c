"""labtui-qemu (launcher.c), the unikraft backend's helper on the host, as the backend calls it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labtui.backends.kit import (
    BackendError,
    CommandResult,
    Host,
    HostError,
    chunks,
    ensure_program,
    last_line,
    tab_records,
)

SOURCE = Path(__file__).resolve().parent / "launcher.c"
NAME = "labtui-qemu"
#: Handles per helper call.
BATCH = 256
#: Time a helper call may take beyond its own waits (a killed QEMU may take 10 s to be reaped).
SLACK_S = 30.0


class Helper:
    """Builds labtui-qemu on the host once and runs its subcommands."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self._path = ""

    async def path(self) -> str:
        """The helper's path on the host, compiled (and cached) on first use."""
        if not self._path:
            self._path = await ensure_program(self.host, SOURCE, NAME)
        return self._path

    async def run(self, args: Sequence[str], *, timeout: float) -> CommandResult:
        """Run `labtui-qemu ARGS...`; BackendError when it cannot be started."""
        return await run_on(self.host, [await self.path(), *args], timeout=timeout)

    def error(self, command: str, result: CommandResult) -> BackendError:
        """The error for a helper call that did not answer as expected."""
        return BackendError(
            f"labtui-qemu {command} on host {self.host.name} exited {result.returncode}: "
            f"{last_line(result.stderr, skip_warnings=True)}"
        )

    async def kill(self, dirs: Sequence[str], *, grace: float) -> list[str]:
        """End the QEMU of each state directory (QMP quit first when grace > 0); the problems."""
        problems: list[str] = []
        orderly = ["--qmp"] if grace > 0 else []
        for chunk in chunks(list(dirs), BATCH):
            result = await self.run(["kill", *orderly, "--grace", f"{grace:g}", *chunk], timeout=grace + SLACK_S)
            records = tab_records(result.stdout)
            if len(records) != len(chunk):
                raise self.error("kill", result)
            problems += [f"{f[0]} {f[1]}: {f[2]}" for f in records if f[0] in ("refused", "failed")]
        return problems

    async def kraft_rm(self, machine_id: str, argv: Sequence[str], *, force: bool, grace: float) -> tuple[int, str]:
        """Run a kraft rm ARGV for machine_id, then end what is left of its QEMU until none exists.

        Returns kraft's exit status and stderr; BackendError when a QEMU of the machine would not go.
        """
        orderly = ["--force"] if force else ["--grace", f"{grace:g}"]
        result = await self.run(["kraft-rm", *orderly, machine_id, "--", *argv], timeout=grace + 2 * SLACK_S)
        records = tab_records(result.stdout)
        if len(records) != 1:
            raise self.error("kraft-rm", result)
        if records[0][0] != "removed":
            raise BackendError(f"unikraft backend on host {self.host.name}: machine {machine_id}: {records[0][-1]}")
        return int(records[0][2]), result.stderr

    async def memory(self, handles: Sequence[str]) -> list[int | None]:
        """Pss (else RSS) of the QEMU of each handle; None when it is gone."""
        used: list[int | None] = []
        for chunk in chunks(list(handles), BATCH):
            result = await self.run(["mem", *chunk], timeout=SLACK_S)
            records = tab_records(result.stdout)
            if len(records) != len(chunk):
                raise self.error("mem", result)
            refused = [f"{f[1]}: {f[2]}" for f in records if f[0] == "refused"]
            if refused:
                raise BackendError(f"unikraft backend on host {self.host.name}: memory of " + "; ".join(refused))
            used += [int(f[2]) if f[0] == "mem" and int(f[2]) >= 0 else None for f in records]
        return used


async def run_on(host: Host, argv: list[str], *, timeout: float, input: bytes | None = None) -> CommandResult:
    """host.run with a HostError (not started, timed out) turned into a BackendError naming the host."""
    try:
        return await host.run(argv, timeout=timeout, input=input)
    except HostError as exc:
        raise BackendError(f"unikraft backend on host {host.name}: {exc}") from exc
