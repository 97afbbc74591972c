"""Helpers shared by the CLI commands: resolving the store, host and backend."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from labtui.hosts import Host, HostError, get_host
from labtui.paths import default_db_path

if TYPE_CHECKING:  # the backends load plugins: only the commands that use them pay for it
    from labtui.backends import Backend

DEFAULT_BACKEND = "process"


class UsageError(Exception):
    """Bad input on the command line; printed as one line, exit status 2."""


def db_path(args) -> Path:
    """--db wins, then LABTUI_DB, then sessions/lab.duckdb in the current directory."""
    return Path(args.db) if getattr(args, "db", None) else default_db_path()


def host_from(name: str) -> Host:
    try:
        return get_host(name)
    except HostError as exc:
        raise UsageError(str(exc)) from None


def backend_from(name: str, host: Host) -> Backend:
    from labtui.backends import BackendUnavailable, open_backend

    try:
        return open_backend(name, host)
    except BackendUnavailable as exc:
        raise UsageError(str(exc)) from None


def backends_for(args, host: Host) -> list[Backend]:
    """The backend named by --backend, or every built-in one that imports."""
    from labtui.backends import BackendUnavailable, backend_names, open_backend

    if args.backend:
        return [backend_from(args.backend, host)]
    found = []
    for name in backend_names():
        try:
            found.append(open_backend(name, host))
        except BackendUnavailable:
            continue
    return found
