"""Where labtui finds its bundled files and keeps its data."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def bundled_dir(name: str) -> Path:
    """The built-in ``plugins`` or ``suites`` directory.

    In an installed wheel they live in ``labtui/_bundled``; in a source checkout
    (or an editable install) they sit beside the package.
    """
    installed = _PACKAGE / "_bundled" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def local_runtime_dir() -> Path:
    """labtui's private directory on this machine ($LABTUI_RUNTIME_DIR or /tmp/labtui-UID), created 0700."""
    path = Path(os.environ.get("LABTUI_RUNTIME_DIR") or f"/tmp/labtui-{os.getuid()}")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def default_db_path() -> Path:
    """The store: --db wins, then LABTUI_DB, then sessions/lab.duckdb here."""
    return Path(os.environ.get("LABTUI_DB") or Path.cwd() / "sessions" / "lab.duckdb")
