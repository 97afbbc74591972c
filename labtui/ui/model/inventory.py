"""Finding labtui instances across usable backends (no Textual; used by the Instances view)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass

from labtui.backends.base import Backend, BackendError, Instance, Usage, backend_names, open_backend
from labtui.core.liveness import session_is_running
from labtui.hosts.base import Host

#: States an instance only passes through; one still in such a state after STUCK_AFTER_S is stuck.
TRANSITIONAL = frozenset({"creating", "created", "starting", "restarting", "stopping", "removing", "destroying",
                          "zombie"})
STUCK_AFTER_S = 60.0


@dataclass(frozen=True, slots=True)
class Found:
    """One listed instance, with its memory, whether its session has gone, and its CPU time so far.

    ``cpu_ns`` is None where the backend reports none; ``read_at`` is when it was read (time.monotonic()).
    """

    backend: Backend
    instance: Instance
    memory: int | None
    orphan: bool
    cpu_ns: int | None = None
    read_at: float = 0.0

    @property
    def key(self) -> str:
        return f"{self.backend.name}:{self.instance.host}:{self.instance.name}"


async def usable_backends(host: Host) -> tuple[list[Backend], list[str]]:
    """Every backend that imports and says it is usable on host, plus notes on the others."""
    backends, notes = [], []
    for name in backend_names():
        try:
            backend = open_backend(name, host)
            availability = await backend.check()
        except (BackendError, OSError) as exc:
            notes.append(f"{name}: {exc}")
            continue
        if availability.usable:
            backends.append(backend)
        else:
            notes.append(f"{name}: {availability.reason}")
    return backends, notes


async def inventory(backends: list[Backend]) -> tuple[list[Found], list[str]]:
    """List every lab-labelled instance with its memory and CPU time (one usage_many per backend); orphans are
    flagged."""
    listings = await asyncio.gather(*(b.list(None) for b in backends), return_exceptions=True)
    found: list[Found] = []
    notes: list[str] = []
    running: dict[str, bool] = {}
    for backend, listing in zip(backends, listings):
        if isinstance(listing, BaseException):
            notes.append(f"{backend.name}: cannot list: {listing}")
            continue
        try:
            usage = await backend.usage_many(listing)
        except Exception as exc:  # usage is optional; say why it is missing
            notes.append(f"{backend.name}: no memory or CPU figures: {exc}")
            usage = [Usage(None)] * len(listing)
        read_at = time.monotonic()
        for instance, used in zip(listing, usage):
            sid = instance.labels.session
            if sid not in running:
                running[sid] = session_is_running(sid)
            found.append(Found(backend, instance, used.memory_bytes, not running[sid], used.cpu_ns, read_at))
    return found, notes


class CpuShares:
    """Each instance's share of one CPU between its last two readings, as top's %CPU (1.0: one CPU, all the time).

    None on an instance's first reading, where its backend reports no CPU time, and where the time went back (a
    new instance under the same name).
    """

    def __init__(self) -> None:
        #: Instance key -> (CPU ns, read_at, share) of its last reading.
        self._last: dict[str, tuple[int, float, float | None]] = {}

    def update(self, found: Iterable[Found]) -> None:
        """Take a listing's readings; instances no longer listed are forgotten."""
        last: dict[str, tuple[int, float, float | None]] = {}
        for f in found:
            if f.cpu_ns is None:
                continue
            before = self._last.get(f.key)
            if before is not None and before[1] == f.read_at:  # the same reading shown again
                last[f.key] = before
                continue
            share = None
            if before is not None and f.read_at > before[1] and f.cpu_ns >= before[0]:
                share = (f.cpu_ns - before[0]) / 1e9 / (f.read_at - before[1])
            last[f.key] = (f.cpu_ns, f.read_at, share)
        self._last = last

    def share(self, key: str) -> float | None:
        """The instance's share of a CPU between its last two readings, None when there is none."""
        entry = self._last.get(key)
        return entry[2] if entry is not None else None


def flags(found: Found, now: float, destroy_error: str | None = None, stuck_after: float = STUCK_AFTER_S) -> list[str]:
    """Why an instance needs attention: orphaned, stuck in a transitional state, or a failed destroy."""
    out = ["orphan"] if found.orphan else []
    instance = found.instance
    if instance.state in TRANSITIONAL and instance.created_at and now - instance.created_at > stuck_after:
        out.append(f"stuck {instance.state}")
    if destroy_error:
        out.append("destroy failed")
    return out


def destroy_errors(keys: dict[str, str], errors: list[str]) -> dict[str, str]:
    """Match a cleanup report's errors ("name: why") to instance keys (key -> name); key -> error."""
    matched: dict[str, str] = {}
    for key, name in keys.items():
        for error in errors:
            if error.startswith(f"{name}: "):
                matched[key] = error
    return matched
