"""Readers see what the journals hold and the store does not yet: rows past each journal's watermark.

A run appends to its journal and a feeder moves the rows into the store when
the store is free (labtui.store.feed).  While another program holds the store,
or between two feeds of a running session, the store is behind its journals.
A reader's connection then gets, for each table the journals touch, a
temporary view of the same name: the store's rows with the journals' rows
merged in exactly as the next feed would write them (upserts by key, with a
missing value keeping the store's; appended rows added).  The store's own
views (slowdown, results_by_step, ...) bind to those temporary views, so every
query reads the sessions as they are.  Nothing is written to the file.

The sessions read this way are listed in the temporary table
``journal_sessions`` (session_id, rows): `behind` reads it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from labtui.store.errors import StoreError
from labtui.store.journal import WATERMARK_PREFIX, journal_paths, read_events, watermark_key
from labtui.store.shapes import TableShape
from labtui.store.writer import StoreWriter

#: Journal rows read per SQLite query.
_READ_ROWS = 50_000
#: The temporary table naming the sessions read from their journals.
BEHIND_TABLE = "journal_sessions"


def overlay_journals(con: duckdb.DuckDBPyConnection, store: Path) -> dict[str, int]:
    """Shadow the store's tables in `con` with the rows its journals hold past their watermarks.

    `con` is a read-only connection to `store` of the current schema.  Returns
    {session id: rows read from its journal}, empty (and nothing created) when
    the store has every row.
    """
    journals = journal_paths(store)
    if not journals:
        return {}
    marks = dict(con.execute(f"SELECT key, value FROM meta WHERE key LIKE '{WATERMARK_PREFIX}%'").fetchall())
    buffer = StoreWriter(store, [])
    behind: dict[str, int] = {}
    for journal in journals:
        after = int(marks.get(watermark_key(journal), 0))
        while rows := _events_after(journal, after):
            for _, event in rows:
                buffer.add(event)
            behind[journal.stem] = behind.get(journal.stem, 0) + len(rows)
            after = rows[-1][0]
    if not behind:
        return {}
    database = con.execute("SELECT current_database()").fetchall()[0][0]
    for shape, batch in buffer.take_batches():
        _shadow(con, str(database), shape, batch)
    con.execute(f"CREATE TEMP TABLE {BEHIND_TABLE} (session_id TEXT, rows BIGINT)")
    con.executemany(f"INSERT INTO {BEHIND_TABLE} VALUES (?, ?)", list(behind.items()))
    return behind


def behind(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """{session id: rows} that `con` reads from journals rather than from the store (see `overlay_journals`)."""
    exists = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = ?", [BEHIND_TABLE]
    ).fetchall()[0][0]
    if not exists:
        return {}
    return dict(con.execute(f"SELECT session_id, rows FROM {BEHIND_TABLE}").fetchall())


def _events_after(journal: Path, after: int) -> list[tuple[int, Any]]:
    """The next rows of a journal; none when it was fed and removed since it was listed."""
    if not journal.exists():
        return []
    try:
        return list(read_events(journal, after, _READ_ROWS))
    except sqlite3.OperationalError as exc:
        if not journal.exists():  # fed and removed between the check and the open: the store has its rows
            return []
        raise StoreError(f"cannot read the journal {journal}: {exc}") from None
    except StoreError as exc:
        raise StoreError(f"cannot read the journal {journal}: {exc}") from None


def _shadow(con: duckdb.DuckDBPyConnection, database: str, shape: TableShape, batch: Any) -> None:
    """A temporary view named like the table: the store's rows with the journals' merged in."""
    quoted = '"' + database.replace('"', '""') + '"'
    stored = f"{quoted}.main.{shape.name}"
    pending = f"_journal_{shape.name}"
    con.register("_journal_batch", batch)
    try:
        con.execute(f"CREATE TEMP TABLE {pending} AS SELECT * FROM _journal_batch")
    finally:
        con.unregister("_journal_batch")
    if not shape.key:
        con.execute(f"CREATE TEMP VIEW {shape.name} AS SELECT * FROM {stored} UNION ALL BY NAME SELECT * FROM {pending}")
        return
    same = " AND ".join(f"j.{k} = s.{k}" for k in shape.key)
    merged = ", ".join(
        f"j.{name}" if name in shape.key else f"coalesce(j.{name}, s.{name}) AS {name}" for name, _ in shape.columns
    )
    con.execute(
        f"CREATE TEMP VIEW {shape.name} AS "
        f"SELECT * FROM {stored} s WHERE NOT EXISTS (SELECT 1 FROM {pending} j WHERE {same}) "
        f"UNION ALL BY NAME SELECT {merged} FROM {pending} j LEFT JOIN {stored} s ON {same}"
    )


def behind_note(sessions: Iterable[str]) -> str:
    """One line saying which sessions were read from their journals, and why that is not an error."""
    ids = sorted(sessions)
    shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
    which = f"session {ids[0]} is" if len(ids) == 1 else f"{len(ids)} sessions ({shown}) are"
    return (f"{which} read from the journal: the store has not caught up yet "
            "(another program holds it, or the run has not fed it yet)")
