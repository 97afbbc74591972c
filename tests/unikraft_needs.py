"""What the Unikraft test modules need on the machine, said once: QEMU and Unikraft's sources."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from plugins.unikraft import sources


def unikraft_missing(*, sqlite: bool = False) -> str:
    """Why Unikraft unikernels cannot be built and booted here ("" when they can); sqlite: the sqlite probe too."""
    if shutil.which("qemu-system-x86_64") is None:
        return "qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
    if not (sources.sources_dir() / "SHA256SUMS").is_file() and not os.environ.get(sources.SOURCES_ENV):
        return f"no Unikraft sources at {sources.sources_dir()} (the vendored release beside the repository)"
    if sqlite and not Path("/usr/include/sqlite3.h").exists():
        return "no libsqlite3-dev (the sqlite probe links libsqlite3.a)"
    return ""


def needs_unikraft(what: str, *, sqlite: bool = False) -> pytest.MarkDecorator:
    """A module's pytestmark: skip without QEMU or Unikraft's sources, except in CI, which must run `what`."""
    missing = unikraft_missing(sqlite=sqlite)
    if missing and os.environ.get("LABTUI_CI"):
        raise RuntimeError(f"CI must run the {what}: {missing}")
    return pytest.mark.skipif(bool(missing), reason=missing or "-")
