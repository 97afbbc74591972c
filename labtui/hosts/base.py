"""The host interface: where commands run, files move and resources are sampled.

Backends talk to a host only through this interface, so every backend works on
every host (the local machine, an SSH host, a simulated host).
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from labtui.core.events import ResourceSample
from labtui.hosts.errors import CommandTimeout as CommandTimeout  # re-exported: callers import both from here
from labtui.hosts.errors import HostError as HostError

if TYPE_CHECKING:
    from labtui.hosts.config import HostConfig


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def check(self) -> CommandResult:
        """Return self, or raise HostError naming the command and its stderr."""
        if self.returncode != 0:
            detail = (self.stderr or self.stdout).strip().splitlines()
            tail = detail[-1] if detail else "no output"
            raise HostError(f"{self.argv[0]} exited {self.returncode}: {tail}")
        return self


@dataclass(frozen=True, slots=True)
class Facts:
    """What a host is: recorded per session so results can be compared later."""

    os: str
    kernel: str
    arch: str
    cpu_model: str
    cores: int
    mem_total_bytes: int


class Host(abc.ABC):
    """A machine labtui drives. Subclasses: LocalHost, SSHHost."""

    name: str

    @abc.abstractmethod
    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60.0,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        """Run argv (never a shell string) and collect its output; kill it after timeout."""

    @abc.abstractmethod
    def stream(self, argv: Sequence[str], *, timeout: float | None = None) -> AsyncIterator[str]:
        """Run argv and yield its stdout line by line (without the newline)."""

    @abc.abstractmethod
    async def put_file(self, local_path: str, remote_path: str, *, mode: int = 0o644) -> None:
        """Copy a file from the controller to this host."""

    @abc.abstractmethod
    async def get_file(self, remote_path: str, local_path: str) -> None:
        """Copy a file from this host to the controller."""

    @abc.abstractmethod
    async def sample(self) -> ResourceSample:
        """Read the host's resources now; CPU availability covers the time since the last reading."""

    async def samples(self, interval: float = 1.0, *,
                      before: Callable[[], Awaitable[None]] | None = None) -> AsyncIterator[ResourceSample]:
        """Yield a resource sample every interval seconds until the consumer stops; each sample waits for
        `before` first (a run's quiet window: no sample is taken while labtui measures)."""
        await self.sample()  # prime the CPU counters so the first yield covers one interval
        next_at = time.monotonic() + interval
        while True:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            if before is not None:
                await before()
            next_at = max(next_at + interval, time.monotonic())
            yield await self.sample()

    @abc.abstractmethod
    async def facts(self) -> Facts:
        """Describe the host (OS, kernel, CPU, memory)."""

    @abc.abstractmethod
    async def unix_socket_path(self, remote_path: str) -> str:
        """A path on the controller whose connections reach remote_path on the host.

        LocalHost returns the path itself; an SSH host forwards a local socket
        through its connection (how the Docker API is reached on a remote host).
        """

    @contextlib.asynccontextmanager
    async def connect(self, address: str, port: int) -> AsyncIterator[tuple[Any, Any]]:
        """A TCP connection from this host to address:port, as (reader, writer); closed on exit.

        The local machine connects directly; an SSH host forwards the connection
        through its own (how a guest behind Domain-0 is reached).  Failing to
        connect, or the connection failing in use, raises HostError (or OSError).
        """
        try:
            reader, writer = await asyncio.open_connection(address, port)
        except OSError as exc:
            raise HostError(f"host {self.name}: cannot connect to {address}:{port}: {exc}") from exc
        try:
            yield reader, writer
        finally:
            writer.close()

    @abc.abstractmethod
    def ssh_login(self, config: HostConfig) -> Host:
        """An SSH host for a machine reached from this one (a guest behind it), as config describes it.

        From the local machine the login connects directly; an SSH host tunnels it
        through its own connection, which closing the login leaves open.
        """

    @abc.abstractmethod
    def terminal_argv(self, argv: Sequence[str]) -> list[str]:
        """The argv that runs argv on this host attached to the controller's terminal (an interactive session).

        The controller runs it in the foreground with the terminal it has: the local machine runs argv itself,
        an SSH host wraps it in ``ssh -t`` so that the far end gets a pseudo-terminal.
        """

    @property
    @abc.abstractmethod
    def runtime_dir(self) -> str:
        """A private directory on the host for labtui's binaries and state."""

    async def close(self) -> None:
        """Release connections; the default has nothing to release."""
