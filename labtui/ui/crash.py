"""A console crash: the full traceback to a log file under the state directory, one line for stderr."""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

from labtui.core.outputs import ExportError, PrivateOutput
from labtui.ui.model.history import state_dir


def crash_dir() -> Path:
    """Where crash logs go: crashes/ in the state directory ($LABTUI_STATE_DIR or ~/.local/state/labtui)."""
    return state_dir() / "crashes"


def record_crash(error: BaseException, directory: Path | None = None) -> str:
    """Write error's traceback to console-<UTC time>-<pid>.log (0600); the line to print on stderr."""
    what = f"labtui: the console crashed: {type(error).__name__}: {_first_line(error)}"
    name = f"console-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{os.getpid()}.log"
    text = "".join(traceback.format_exception(error)).encode()
    try:
        with PrivateOutput(directory or crash_dir()) as output:
            log = output.write(name, lambda file: file.write(text))
    except ExportError as exc:
        return f"{what} (no crash log: {exc})"
    return f"{what} (traceback in {log})"


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else "(no message)"
