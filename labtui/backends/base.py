"""The backend contract and the registry of backend plugins.

A backend says *what* an instance is (a process tree, a container, a zone, a
domain, a unikernel); the host it is given says *where*.  Every backend
registers its class under the ``labtui.backends`` entry-point group: the
built-in ones (the packages in ``plugins/``) in labtui's own ``pyproject.toml``,
third-party ones in theirs.  Listing backends reads only that metadata: a
plugin's code is imported when it is chosen.
"""

from __future__ import annotations

import abc
import asyncio
import builtins
import importlib.metadata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from labtui.core.errors import BackendError
from labtui.core.paths import bundled_dir
from labtui.core.words import name_list

if TYPE_CHECKING:
    from labtui.hosts.base import CommandResult, Host

ENTRY_POINT_GROUP = "labtui.backends"

# Capability names a backend may declare.
PINNING = "pinning"
CPU_LIMIT = "cpu_limit"  # honours InstanceSpec.cpu_cap
CPU_WEIGHT = "cpu_weight"  # honours InstanceSpec.cpu_weight
MEM_LIMIT = "mem_limit"
TMPFS = "tmpfs"
EXEC = "exec"
NETWORKING = "networking"
HOST_TOOL = "host_tool"  # runs InstanceSpec.tool, an executable on the host
STDERR = "stderr"  # honours InstanceSpec.capture_stderr


class BackendUnavailable(BackendError):
    exit_status = 2  # refused before anything started

    """A backend cannot be used here; the message gives the reason."""


@dataclass(frozen=True, slots=True)
class Labels:
    """Lab labels every instance carries in the backend's own metadata."""

    session: str
    role: str
    instance: str


@dataclass(frozen=True, slots=True)
class InstanceSpec:
    """What to create.

    ``program`` names a probe (``hello``, ``sleeper``, ...) or, for image-based
    backends, ``image`` names an image; ``tool`` (backends with HOST_TOOL) is the
    absolute path of a real tool on the host, run with ``args``.  ``wait`` says when create returns:
    ``"exit"`` after the instance ran to completion (boot time = create to
    exit), ``"ready"`` once it is running.  ``capture_output`` (with
    ``wait="exit"``) returns what the instance printed on stdout in
    ``Instance.output``, and with ``capture_stderr`` (backends with STDERR) what it
    printed on stderr as well, as one stream (real tools print results there);
    ``start_at`` (epoch seconds on the host's clock) holds the program back
    until that time, so instances created by separate calls start together.
    ``ports`` are TCP ports the instance serves; a backend that can reach them
    publishes each on 127.0.0.1 only and records the host port it got in
    ``Instance.details["ports"]`` (instance port -> host port).
    ``cpu_weight`` is a relative CPU weight on cgroup v2's ``cpu.weight`` scale
    (1-10000, 100 is everyone's default share; None leaves the backend's
    default); ``cpu_cap`` caps the instance at that many CPUs (0.25 is a
    quarter of one CPU), whatever else is idle.
    """

    labels: Labels
    program: str | None = None
    image: str | None = None
    args: tuple[str, ...] = ()
    tool: str | None = None
    wait: str = "ready"
    cpus: str | None = None
    mem_limit_bytes: int | None = None
    timeout_s: float = 60.0
    capture_output: bool = False
    capture_stderr: bool = False
    start_at: float | None = None
    ports: tuple[int, ...] = ()
    cpu_weight: int | None = None
    cpu_cap: float | None = None


@dataclass(slots=True)
class Instance:
    """An instance a backend created or found.

    Times are epoch seconds; ``boot_s`` is measured by the backend as precisely
    as it can (create request to ready, or to exit for ``wait="exit"``), and
    ``ready_at`` of a ``wait="exit"`` instance is when it exited.
    """

    labels: Labels
    name: str
    backend: str
    host: str
    state: str
    created_at: float | None = None
    ready_at: float | None = None
    boot_s: float | None = None
    exit_code: int | None = None
    handle: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    #: What the instance printed on stdout, when the spec asked to capture it.
    output: str | None = None


@dataclass(frozen=True, slots=True)
class Usage:
    """What one instance uses, read in one go: memory charged to it and its cumulative CPU time.

    Either is None where the backend reports none (or the instance is gone); ``cpu_ns`` only
    grows while the instance runs, so two readings give its share of a CPU between them.
    """

    memory_bytes: int | None
    cpu_ns: int | None = None


@dataclass(frozen=True, slots=True)
class Availability:
    usable: bool
    reason: str
    version: str = ""


class Backend(abc.ABC):
    """The contract every backend plugin implements."""

    name: str = ""
    capabilities: frozenset[str] = frozenset()
    #: How many creates a step may have in flight at once.
    max_parallel_creates: int = 8
    #: Without the exec capability: what would give it on this host (shown when a suite needs exec).
    exec_hint: str = ""
    #: The suite's ``[backend]`` settings this backend takes (``configure`` refuses any other that is set).
    settings: frozenset[str] = frozenset()

    def __init__(self, host: Host) -> None:
        self.host = host

    def configure(self, settings: Mapping[str, object]) -> None:
        """Take a run's ``[backend]`` settings (None: not set); one this backend does not take is a BackendError."""
        for key, value in settings.items():
            if value is not None and key not in self.settings:
                takes = ", ".join(f"backend.{k}" for k in sorted(self.settings)) or "no [backend] settings"
                raise BackendError(f"backend {self.name} has no setting backend.{key} (set to {value!r}); it takes "
                                   f"{takes}")

    @abc.abstractmethod
    async def check(self) -> Availability:
        """Say whether this backend can run on its host, and why not."""

    async def prepare(self, programs: Iterable[str]) -> None:
        """Build or fetch what the named programs need before a run (default: nothing)."""

    def check_invocations(self, invocations: Iterable[tuple[str, tuple[str, ...]]]) -> None:
        """BackendError in one line for a (program, args) this backend cannot run as meant (default: none).

        Called before anything is built or started, so a suite that cannot run here stops at once.
        """

    def check_images(self, images: Iterable[str]) -> None:
        """BackendError in one line when this backend cannot run instances from images, or not from one of these
        (default: accepts every one; whether an image exists is for prepare_images to find).

        Called before anything is created, so a suite whose images cannot run here is refused at once.
        """

    async def prepare_images(self, images: Iterable[str]) -> None:
        """Build or find every image a run names, so a missing one fails before any instance starts.

        The default does nothing: backends without images, or whose images are
        checked at create time, need not override it.
        """

    @abc.abstractmethod
    async def create(self, spec: InstanceSpec) -> Instance:
        """Create one instance; return it with its measured boot time."""

    @abc.abstractmethod
    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        """End an instance and everything it started; force skips the orderly path."""

    @abc.abstractmethod
    async def list(self, session: str | None = None) -> list[Instance]:
        """Find lab-labelled instances on the host (orphans included)."""

    async def logs(self, instance: Instance) -> str | None:
        """The instance's log or console output so far, where the backend keeps one; None where it keeps none."""
        return None

    async def exec(self, instance: Instance, argv: Sequence[str], *, timeout: float = 60.0) -> CommandResult:
        """Run argv inside an instance, where the backend can."""
        raise BackendError(f"backend {self.name} cannot exec inside instances")

    async def stage(self, instance: Instance, paths: Sequence[str]) -> builtins.list[str]:
        """Make host files (programs) usable inside an instance; return each one's path there.

        The default suits backends whose instances see the host's files (processes,
        zones with the runtime dir mounted): the paths are unchanged.
        """
        return list(paths)

    async def clock_offset_ns(self, instance: Instance) -> int:
        """How far the instance's CLOCK_REALTIME is ahead of the host's (0 where they share one clock).

        Backends whose instances keep clocks of their own (virtual machines)
        measure it, so that starts and times read inside compare with the host's.
        """
        return 0

    @abc.abstractmethod
    async def memory_bytes(self, instance: Instance) -> int | None:
        """Memory charged to one instance (None when it is gone)."""

    async def isolation(self) -> str:
        """Describe the isolation this backend applies on its host (for the record)."""
        return ""

    async def create_many(self, specs: Sequence[InstanceSpec]) -> builtins.list[Instance]:
        """Create several instances with at most max_parallel_creates in flight."""
        gate = asyncio.Semaphore(self.max_parallel_creates)

        async def one(spec: InstanceSpec) -> Instance:
            async with gate:
                return await self.create(spec)

        return list(await asyncio.gather(*(one(s) for s in specs)))

    async def memory_many(self, instances: Sequence[Instance]) -> builtins.list[int | None]:
        """Memory of several instances (default: memory_bytes one by one, bounded)."""
        gate = asyncio.Semaphore(self.max_parallel_creates)

        async def one(instance: Instance) -> int | None:
            async with gate:
                return await self.memory_bytes(instance)

        return list(await asyncio.gather(*(one(i) for i in instances)))

    async def usage_many(self, instances: Sequence[Instance]) -> builtins.list[Usage]:
        """Memory and CPU time of several instances, each read in the same call.

        The default is memory_many with no CPU time: a backend that can read both at once overrides it.
        """
        return [Usage(memory) for memory in await self.memory_many(instances)]

    async def shell_argv(self, instance: Instance) -> builtins.list[str]:
        """The argv that opens an interactive session in the instance, run on the controller with its terminal.

        Built with ``self.host.terminal_argv`` so that it reaches the instance's host (``ssh -t`` for an SSH host).
        A backend with no such session raises BackendError saying why, in one line (the default).
        """
        raise BackendError(f"the {self.name} backend offers no interactive shell in its instances")

    async def destroy_many(self, instances: Sequence[Instance], *, force: bool = False) -> None:
        """Destroy several instances, at most max_parallel_creates at a time."""
        gate = asyncio.Semaphore(self.max_parallel_creates)

        async def one(instance: Instance) -> None:
            async with gate:
                await self.destroy(instance, force=force)

        await asyncio.gather(*(one(i) for i in instances))


@dataclass(frozen=True, slots=True)
class BackendInfo:
    """A backend as listed, before any of its code is imported."""

    name: str
    source: str  # "builtin" (labtui's own entry points) or the distribution that provides it
    entry_point: importlib.metadata.EntryPoint


def builtin_plugins_dir() -> Path:
    """The built-in backends' package directory (``plugins``), for the sources they build on the host."""
    return bundled_dir("plugins")


def list_backends() -> list[BackendInfo]:
    """Every backend registered, built-in first, then by name, without importing any plugin code."""
    found: dict[str, BackendInfo] = {}
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist else "unknown"
        info = BackendInfo(ep.name, "builtin" if dist == "labtui" else dist, ep)
        if ep.name not in found or info.source == "builtin":  # a built-in backend of the same name wins
            found[ep.name] = info
    return sorted(found.values(), key=lambda b: (b.source != "builtin", b.name))


def backend_names() -> list[str]:
    return [b.name for b in list_backends()]


def load_backend_class(name: str) -> type[Backend]:
    """Import the chosen backend; unknown names and import failures become BackendUnavailable."""
    info = {b.name: b for b in list_backends()}.get(name)
    if info is None:
        available = name_list(backend_names(), "`labtui backends`") or (
            "none (labtui registers its own backends as entry points: install it, e.g. pip install -e .)")
        raise BackendUnavailable(f"unknown backend {name!r}; available: {available}")
    try:
        cls = info.entry_point.load()
    except Exception as exc:  # any import error is reported, not raised raw
        raise BackendUnavailable(f"backend {name} unavailable: {type(exc).__name__}: {exc}") from exc
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise BackendUnavailable(f"backend {name} unavailable: {cls!r} is not a labtui Backend")
    return cls


def open_backend(name: str, host: Host) -> Backend:
    """Instantiate backend name on host."""
    return load_backend_class(name)(host)
