"""The Textual console.  Only this package imports Textual; engine, store and backends never do.

Importing the package is cheap: the app and its views load when the console opens.
"""

from __future__ import annotations

from pathlib import Path


def open_console(db_path: Path | None = None, backend: str = "process", host: str = "local") -> int:
    """Open the console (see labtui.ui.app.open_console)."""
    from labtui.ui.app import open_console as run

    return run(db_path, backend, host)


__all__ = ["open_console"]
