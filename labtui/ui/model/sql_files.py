"""`ctrl+o` / `ctrl+s` in the SQL editor: a query read from or written to a .sql file, errors in one plain line."""

from __future__ import annotations

import os
from contextlib import suppress
from pathlib import Path

#: A bigger file is refused: the editor is for queries, not dumps.
MAX_BYTES = 1_000_000
SUFFIX = ".sql"


class QueryFileError(ValueError):
    """The file could not be read or written; the message names the path and why."""


def query_path(typed: str) -> Path:
    """A path as typed in the prompt: `~` expanded, relative to the working directory, made absolute."""
    return Path(os.path.abspath(Path(typed.strip()).expanduser()))


def read_query(path: Path) -> str:
    """The text of a query file (UTF-8, at most MAX_BYTES)."""
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise QueryFileError(f"cannot open {path}: {size:,} bytes, more than the editor takes ({MAX_BYTES:,})")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise QueryFileError(f"cannot open {path}: not UTF-8 text") from exc
    except OSError as exc:
        raise QueryFileError(f"cannot open {path}: {_why(exc)}") from exc


def write_query(path: Path, text: str) -> None:
    """Write a query to a .sql file (replacing it), in full or not at all."""
    if path.suffix.lower() != SUFFIX:
        raise QueryFileError(f"cannot save to {path}: a query is saved to a {SUFFIX} file (end the name with {SUFFIX})")
    if not path.parent.is_dir():
        raise QueryFileError(f"cannot save to {path}: no such directory {path.parent}")
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        with suppress(OSError):
            tmp.unlink()
        raise QueryFileError(f"cannot save to {path}: {_why(exc)}") from exc


def _why(exc: OSError) -> str:
    """An OSError's reason in lower case ('no such file or directory', 'permission denied')."""
    return (exc.strerror or str(exc)).lower()
