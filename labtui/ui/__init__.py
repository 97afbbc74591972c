"""The Textual console.  Only this package imports Textual; engine, store and backends never do.

Importing the package is cheap: the app and its views load when the console opens.
"""

from __future__ import annotations

import gc
from pathlib import Path


def open_console(db_path: Path | None = None, backend: str = "process", host: str = "local") -> int:
    """Open the console (see labtui.ui.app.open_console).

    The cyclic garbage collector is off from here until the first frame is drawn (LabApp.on_ready turns it
    back on): its passes over the objects Textual creates while it loads and lays out took 49-65 ms of the
    0.5 s to that frame, and nothing made before it is garbage.
    """
    gc.disable()
    try:
        from labtui.ui.app import open_console as run

        return run(db_path, backend, host)
    finally:
        gc.enable()


__all__ = ["open_console"]
