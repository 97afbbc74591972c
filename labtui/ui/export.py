"""Export a query result to CSV or Parquet through polars."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl


def result_frame(columns: Sequence[str], rows: Sequence[Sequence[object]]) -> pl.DataFrame:
    """A frame from a result's column names and rows (duplicate names get a suffix)."""
    names: list[str] = []
    for name in columns:
        unique, i = name, 1
        while unique in names:
            i += 1
            unique = f"{name}_{i}"
        names.append(unique)
    return pl.DataFrame([list(r) for r in rows], schema=names, orient="row", infer_schema_length=None)


def export(frame: pl.DataFrame, path: Path) -> Path:
    """Write frame to path as Parquet (.parquet/.pq) or CSV (anything else)."""
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix.lower() in (".parquet", ".pq"):
        frame.write_parquet(path)
    else:
        frame.write_csv(path)
    return path
