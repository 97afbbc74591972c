"""Deleting whole sessions from the store: every row of every table that carries their id, in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from labtui.store.writer import StoreWriter

#: Every table with rows of a session.
SESSION_TABLES = ("results", "resources", "observer", "events", "steps", "instances", "hosts", "sessions")


def delete_sessions(store: Path, session_ids: Sequence[str], *, wait: float | None = None) -> dict[str, int]:
    """Delete every row of `session_ids` (checked by the caller: not running) in one transaction; rows per table."""
    deleted: dict[str, int] = {}
    with StoreWriter(store, []).attached(wait) as con:
        con.execute("BEGIN TRANSACTION")
        try:
            for table in SESSION_TABLES:
                (count,) = con.execute(
                    f"SELECT count(*) FROM {table} WHERE list_contains(?, session_id)", [list(session_ids)]
                ).fetchone()  # type: ignore[misc]
                con.execute(f"DELETE FROM {table} WHERE list_contains(?, session_id)", [list(session_ids)])
                deleted[table] = count
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return deleted
