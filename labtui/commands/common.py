"""Helpers shared by the CLI commands: resolving the store and the backends."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from labtui.core.paths import default_db_path
from labtui.hosts import Host

if TYPE_CHECKING:  # the backends load plugins: only the commands that use them pay for it
    from labtui.backends.base import Backend

DEFAULT_BACKEND = "process"


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
