"""Finding labtui instances across usable backends (no Textual; used by the Instances view)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from labtui.backends.base import Backend, BackendError, Instance, backend_names, open_backend
from labtui.core.liveness import session_is_running
from labtui.hosts.base import Host

#: States an instance only passes through; one still in such a state after STUCK_AFTER_S is stuck.
TRANSITIONAL = frozenset({"creating", "created", "starting", "restarting", "stopping", "removing", "destroying",
                          "zombie"})
STUCK_AFTER_S = 60.0


@dataclass(frozen=True, slots=True)
class Found:
    """One listed instance, with its memory and whether its session has gone."""

    backend: Backend
    instance: Instance
    memory: int | None
    orphan: bool

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
    """List every lab-labelled instance with its memory; orphans are flagged."""
    listings = await asyncio.gather(*(b.list(None) for b in backends), return_exceptions=True)
    found: list[Found] = []
    notes: list[str] = []
    running: dict[str, bool] = {}
    for backend, listing in zip(backends, listings):
        if isinstance(listing, BaseException):
            notes.append(f"{backend.name}: cannot list: {listing}")
            continue
        try:
            memory = await backend.memory_many(listing)
        except Exception as exc:  # memory is optional; say why it is missing
            notes.append(f"{backend.name}: no memory figures: {exc}")
            memory = [None] * len(listing)
        for instance, mem in zip(listing, memory):
            sid = instance.labels.session
            if sid not in running:
                running[sid] = session_is_running(sid)
            found.append(Found(backend, instance, mem, not running[sid]))
    return found, notes


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
