"""`labtui export`: every table's rows of one session, as parquet or CSV files (0600, see labtui.core.outputs)."""

from __future__ import annotations

import os
from pathlib import Path

from labtui.core.outputs import PrivateOutput
from labtui.store import fetch_frame

#: The store's tables that carry a session_id, in the order the docs list them.
SESSION_TABLES = ("sessions", "steps", "instances", "results", "resources", "observer", "events", "hosts")
EXPORT_FORMATS = ("parquet", "csv")


def export_session(db: str | os.PathLike[str], session_id: str, out: Path, fmt: str) -> dict[str, Path]:
    """Write `<out>/<table>.<fmt>` for every table (0600, `out` made 0700); return each table's file."""
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"format must be parquet or csv, got {fmt!r}")
    frames = {table: fetch_frame(db, f"SELECT * FROM {table} WHERE session_id = ?", [session_id])
              for table in SESSION_TABLES}
    with PrivateOutput(out) as output:
        return {table: output.write(f"{table}.{fmt}", frame.write_parquet if fmt == "parquet" else frame.write_csv)
                for table, frame in frames.items()}
