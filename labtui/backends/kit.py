"""labtui's public plugin kit: the one labtui module a backend plugin imports.

A backend plugin (a built-in one, the package ``plugins.<name>``, or a
third-party package; both registered under the ``labtui.backends`` entry-point
group) imports labtui only from here, so labtui
can reorganise everything else without breaking a plugin.  For the built-in
plugins an import-linter contract in ``pyproject.toml`` holds them to it.

What the kit offers (see ``__all__``):

- The backend contract: ``Backend``, ``Availability``, ``Instance``,
  ``InstanceSpec``, ``Labels``, ``Usage`` (what ``usage_many`` returns), the capability names (``PINNING``,
  ``CPU_LIMIT``, ``CPU_WEIGHT``, ``MEM_LIMIT``, ``TMPFS``, ``EXEC``,
  ``NETWORKING``, ``HOST_TOOL``, ``STDERR``), and the errors ``BackendError`` and ``BackendUnavailable``.
- The host seam, the only way a plugin touches a machine: ``Host`` (run, stream,
  copy files, unix sockets, ``connect`` to a TCP port the host reaches,
  ``ssh_login`` into a machine behind it, ``terminal_argv`` for an interactive
  session there), ``CommandResult``, ``HostError``,
  ``CommandTimeout``, and ``HostConfig``/``GuestLogin``, a lab config's
  description of a machine and of the guests behind a host.
- Programs built on the host: ``ensure_program``, ``probe_source``,
  ``cached_name``, ``ProgramUnavailable``, ``ensure_kernel`` (the test
  unikernels), ``runat`` (labtui-runat: ``build``, ``at_ns``,
  ``closing_line``, ``complaint``, ``NAME``) and ``bundled_dir`` (the built-in
  ``suites``/``plugins`` directories).
- Parsing what hosts print: ``parse_kstat`` (illumos ``kstat -p``).
- Plumbing for backends that drive tools on their host: batching
  (``chunks``, ``gather_limited``, ``raise_first``), the tab-separated line
  protocol of labtui's C helpers (``tab_records``), lab instance names
  (``lab_name``), a tool's last line of output (``last_line``), and
  ``HostTools``, which runs a backend's commands under a deadline with
  failures worded the same way by every backend.

The kit imports only modules below the engine (the backend contract, hosts,
native programs), never the engine, store or faces, so importing it cannot
form a cycle with them.  Nothing heavy (asyncssh, Textual) is imported here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Sequence
from typing import TypeVar

from labtui.backends.base import (
    CPU_LIMIT,
    CPU_WEIGHT,
    EXEC,
    HOST_TOOL,
    MEM_LIMIT,
    NETWORKING,
    PINNING,
    STDERR,
    TMPFS,
    Availability,
    Backend,
    BackendError,
    BackendUnavailable,
    Instance,
    InstanceSpec,
    Labels,
    Usage,
)
from labtui.core.paths import bundled_dir
from labtui.hosts.base import CommandResult, CommandTimeout, Host, HostError
from labtui.hosts.config import GuestLogin, HostConfig
from labtui.hosts.illumos import parse_kstat
from labtui.programs import runat
from labtui.programs.kernels import ensure_kernel
from labtui.programs.native import ProgramUnavailable, cached_name, ensure_program, probe_source

__all__ = [
    "CPU_LIMIT",
    "CPU_WEIGHT",
    "EXEC",
    "HOST_TOOL",
    "MEM_LIMIT",
    "NETWORKING",
    "PINNING",
    "STDERR",
    "TMPFS",
    "Availability",
    "Backend",
    "BackendError",
    "BackendUnavailable",
    "CommandResult",
    "CommandTimeout",
    "GuestLogin",
    "Host",
    "HostConfig",
    "HostError",
    "HostTools",
    "Instance",
    "InstanceSpec",
    "Labels",
    "ProgramUnavailable",
    "Usage",
    "bundled_dir",
    "cached_name",
    "chunks",
    "ensure_kernel",
    "ensure_program",
    "gather_limited",
    "lab_name",
    "last_line",
    "parse_kstat",
    "probe_source",
    "raise_first",
    "runat",
    "tab_records",
]

T = TypeVar("T")


def chunks(items: Sequence[T], size: int) -> list[list[T]]:
    """items cut into lists of at most size."""
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


async def gather_limited(calls: list[Awaitable[T]], limit: int) -> list[T | BaseException]:
    """Await calls with at most limit in flight; exceptions are returned, not raised."""
    gate = asyncio.Semaphore(limit)

    async def one(call: Awaitable[T]) -> T:
        async with gate:
            return await call

    return await asyncio.gather(*(one(c) for c in calls), return_exceptions=True)


def raise_first(results: list[T | BaseException]) -> list[T]:
    """The results, or the first exception among them raised."""
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]


def tab_records(stdout: str) -> list[list[str]]:
    """The tab-separated records labtui's C helpers print, one per non-empty line."""
    return [line.split("\t") for line in stdout.splitlines() if line]


def lab_name(labels: Labels) -> str:
    """The name of a lab instance: labtui-<session>-<instance>."""
    return f"labtui-{labels.session}-{labels.instance}"


def last_line(text: str, *, skip_warnings: bool = False) -> str:
    """The last line of a tool's output (the one that usually says why), or 'no output'."""
    lines = text.strip().splitlines()
    if skip_warnings:
        lines = [line for line in lines if "warning:" not in line]
    return lines[-1] if lines else "no output"


class HostTools:
    """Runs one backend's commands on its host and words their failures."""

    def __init__(self, backend: str, host: Host, *, command_timeout_s: float | None = None) -> None:
        self.backend = backend
        self.host = host
        self.command_timeout_s = command_timeout_s
        self._programs: dict[str, str] = {}

    def fail(self, message: str) -> BackendError:
        """A BackendError naming the backend and the host."""
        return BackendError(f"{self.backend} backend on host {self.host.name}: {message}")

    async def run(self, argv: list[str], deadline: float) -> CommandResult:
        """Run argv with whatever time is left before deadline (time.monotonic())."""
        remaining = deadline - time.monotonic()
        if self.command_timeout_s is not None:
            remaining = min(remaining, self.command_timeout_s)
        if remaining <= 0:
            raise self.fail(f"no time left for {' '.join(argv[:3])}")
        try:
            return await self.host.run(argv, timeout=remaining)
        except CommandTimeout:
            raise self.fail(f"{' '.join(argv)} timed out after {remaining:.1f} s and was killed") from None
        except HostError as exc:
            raise self.fail(str(exc)) from exc

    def error(self, command: str, result: CommandResult) -> BackendError:
        """The error for a command that exited non-zero, with its last line of output."""
        return self.fail(f"{command} exited {result.returncode}: {last_line(result.stderr or result.stdout)}")

    async def program(self, probe: str) -> str:
        """The path of a probe built on the host (built once, then cached)."""
        if probe not in self._programs:
            try:
                self._programs[probe] = await ensure_program(self.host, probe_source(probe), probe)
            except (ProgramUnavailable, HostError) as exc:
                raise self.fail(f"building {probe}: {exc}") from exc
        return self._programs[probe]
