"""Files labtui writes for a person (exports, reports): 0600, in directories it creates 0700.

A write that fails (a full disk) is one `ExportError` line naming the path, and
the files and directories that call made are removed again.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from labtui.core.errors import LabError
from labtui.core.paths import make_private_dirs, remove_dirs


class ExportError(LabError):
    """An export or report could not be written (a full disk, a path in the way); one line naming the path."""


class PrivateOutput:
    """Files written into one directory: the directory and its missing parents made 0700, each file 0600.

    Used as a context manager; when the block fails, every file written and
    every directory created in it is removed, and an OSError becomes an ExportError.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._dirs: list[Path] = []
        self._files: list[Path] = []

    def __enter__(self) -> PrivateOutput:
        try:
            self._dirs = make_private_dirs(self.directory)
        except OSError as exc:
            raise _error(Path(exc.filename), exc) from None
        return self

    def write(self, name: str, write: Callable[[BinaryIO], object]) -> Path:
        """Write `name` in the directory through `write(file)`; the file is 0600 even if it existed."""
        path = self.directory / name
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            self._files.append(path)
            with os.fdopen(fd, "wb") as file:
                os.fchmod(fd, 0o600)
                write(file)
        except OSError as exc:
            raise _error(path, exc) from None
        except Exception as exc:  # a writer's own wrapping of an I/O error (polars: ComputeError)
            raise ExportError(f"cannot write {path}: {_reason(exc)}") from None
        return path

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is not None:
            self._undo()
        if isinstance(exc, OSError):
            raise _error(self.directory, exc) from None

    def _undo(self) -> None:
        for path in self._files:
            path.unlink(missing_ok=True)
        remove_dirs(self._dirs)  # each only if empty: nothing but this call's files went in
        self._files, self._dirs = [], []


def _reason(exc: Exception) -> str:
    """The last line of an error, e.g. polars' "...: underlying IO error: No space left on device (os error 28)"."""
    text = str(exc).strip()
    return text.splitlines()[-1] if text else type(exc).__name__


def _error(path: Path, exc: OSError) -> ExportError:
    return ExportError(f"cannot write {path}: {exc.strerror or exc}")
