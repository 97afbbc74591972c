"""Helpers shared by the CLI commands: resolving the store and the backends."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from labtui.core.paths import default_db_path

if TYPE_CHECKING:  # the backends load plugins, a Host asyncio: only the commands that use them pay for it
    from labtui.backends.base import Backend
    from labtui.hosts import Host

DEFAULT_BACKEND = "process"
#: Seconds a backend's check may take when a command picks the usable backends.
CHECK_TIMEOUT_S = 30.0


def db_path(args) -> Path:
    """--db wins, then LABTUI_DB, then sessions/lab.duckdb in the current directory."""
    return Path(args.db) if getattr(args, "db", None) else default_db_path()


def backends_for(args, host: Host) -> list[Backend]:
    """The backend named by --backend, or every built-in one that imports."""
    from labtui.backends.base import BackendUnavailable, backend_names, open_backend

    if args.backend:
        return [open_backend(args.backend, host)]
    found = []
    for name in backend_names():
        try:
            found.append(open_backend(name, host))
        except BackendUnavailable:
            continue
    return found


async def usable_backends(backends: list[Backend]) -> list[Backend]:
    """The backends that can run on their host, in order; the others are left out without a word.

    Listing commands without --backend use these, so that a backend not installed on the host
    (xl, zoneadm) is not reported on every call: `labtui backends` says why it is not usable.  A
    backend whose check itself fails, or does not answer in CHECK_TIMEOUT_S, is kept, so that its
    listing reports what is wrong.
    """
    import asyncio  # here: `labtui import` and the other commands without backends never load it

    async def usable(backend: Backend) -> tuple[bool, str]:
        try:
            availability = await asyncio.wait_for(backend.check(), CHECK_TIMEOUT_S)
        except Exception:  # kept: its own listing says what fails
            return True, ""
        return availability.usable, availability.reason

    verdicts = await asyncio.gather(*(usable(b) for b in backends))
    if backends and not any(ok for ok, _ in verdicts):
        host = backends[0].host.name
        why = dict(zip((b.name for b in backends), (reason for _, reason in verdicts)))
        first = why.get(DEFAULT_BACKEND) or verdicts[0][1]
        print(f"no backend is usable on host {host}: {first} (labtui backends --host {host} says more)",
              file=sys.stderr)
    return [b for b, (ok, _) in zip(backends, verdicts) if ok]
