"""Export a query result to CSV, JSON or Parquet through polars, as its file name asks; open a written file
on the desktop."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import polars as pl

from labtui.core.outputs import ExportError, PrivateOutput

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    import pyarrow as pa

#: The format each file name ending asks for.
FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet"}


def unique_names(columns: Sequence[str]) -> list[str]:
    """Column names with duplicates suffixed: a, a_2, a_3."""
    names: list[str] = []
    for name in columns:
        unique, i = name, 1
        while unique in names:
            i += 1
            unique = f"{name}_{i}"
        names.append(unique)
    return names


def result_frame(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> pl.DataFrame:
    """A frame from a result's column names and rows (duplicate names get a suffix)."""
    return pl.DataFrame([list(r) for r in rows], schema=unique_names(columns), orient="row", infer_schema_length=None)


def export_format(path: Path) -> str:
    """csv, json or parquet, from path's extension; anything else is refused in one line naming it."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        ending = f"extension {path.suffix!r}" if path.suffix else "no extension"
        raise ExportError(f"cannot export to {path}: {ending}; name the file .csv, .json or .parquet")
    return fmt


def export_arrow(table: pa.Table, path: Path) -> Path:
    """Write an Arrow result (the SQL grid's) to path as its extension asks; duplicate names get a suffix."""
    # from_arrow gives a DataFrame for a Table (a Series only for an Array)
    return export(cast(pl.DataFrame, pl.from_arrow(table.rename_columns(unique_names(table.column_names)))), path)


def export(frame: pl.DataFrame, path: Path) -> Path:
    """Write frame to path as CSV, JSON (a list of row objects) or Parquet, from its extension (see
    export_format); 0600, in directories made 0700."""
    path = path.expanduser()
    writers: dict[str, Callable[[BinaryIO], object]] = {
        "csv": frame.write_csv,
        "json": lambda file: file.write(frame.write_json().encode()),
        "parquet": frame.write_parquet,
    }
    write = writers[export_format(path)]
    with PrivateOutput(path.parent) as output:
        return output.write(path.name, write)


def open_in_desktop(path: Path) -> bool:
    """Open a file with the desktop's viewer when there is a desktop; never a text browser in our terminal."""
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or not shutil.which("xdg-open"):
        return False
    subprocess.Popen(["xdg-open", str(path)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL, start_new_session=True)
    return True
