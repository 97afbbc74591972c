"""`labtui export`: every table's rows of one session, as parquet or CSV files."""

from __future__ import annotations

import os
from pathlib import Path

from labtui.store import fetch_frame

#: The store's tables that carry a session_id, in the order the docs list them.
SESSION_TABLES = ("sessions", "steps", "instances", "results", "resources", "events", "hosts")
EXPORT_FORMATS = ("parquet", "csv")


def export_session(db: str | os.PathLike[str], session_id: str, out: Path, fmt: str) -> dict[str, Path]:
    """Write `<out>/<table>.<fmt>` for every table; return each table's file."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format must be parquet or csv, got {fmt!r}")
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for table in SESSION_TABLES:
        frame = fetch_frame(db, f"SELECT * FROM {table} WHERE session_id = ?", [session_id])
        path = out / f"{table}.{fmt}"
        if fmt == "parquet":
            frame.write_parquet(path)
        else:
            frame.write_csv(path)
        written[table] = path
    return written
