"""Moving journals into the store: in one transaction per batch, exactly once.

Each journal's watermark (the last sequence number moved) is kept in the
store's ``meta`` table (``journal:<session id>``) and advanced in the same
transaction as the rows it covers.  A feed cut short anywhere (a ``kill -9``, a
full disk) either committed the rows and their watermark or neither, so no row
is lost and none lands twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from labtui.store.crashes import mark_crashed_sessions
from labtui.store.errors import StoreError
from labtui.store.journal import WATERMARK_PREFIX, adopted, journal_paths, read_events, remove, watermark_key
from labtui.store.schema import ensure_schema
from labtui.store.writer import StoreWriter

#: Most journal rows moved in one transaction.
FEED_BATCH_ROWS = 50_000

@dataclass
class Fed:
    """What one feed moved: rows, and the journals it emptied (nothing left past their watermark)."""

    rows: int = 0
    drained: list[Path] = field(default_factory=list)


def _advance(key: str, seq: int) -> Callable[[duckdb.DuckDBPyConnection], None]:
    """The watermark update that goes into the same transaction as the rows it covers."""
    def advance(con: duckdb.DuckDBPyConnection) -> None:
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, str(seq)])
    return advance


def _feed_into(con: duckdb.DuckDBPyConnection, writer: StoreWriter, journals: Sequence[Path]) -> Fed:
    """Move every row past each journal's watermark into the attached store."""
    marks = dict(con.execute(f"SELECT key, value FROM meta WHERE key LIKE '{WATERMARK_PREFIX}%'").fetchall())
    fed = Fed()
    for journal in journals:
        key, after = watermark_key(journal), int(marks.get(watermark_key(journal), 0))
        while True:
            try:
                rows = read_events(journal, after, FEED_BATCH_ROWS)
            except Exception as exc:  # sqlite3.Error, a row this labtui cannot read
                raise StoreError(f"cannot read the journal {journal}: {exc}") from exc
            if not rows:
                fed.drained.append(journal)
                break
            for _, event in rows:
                writer.add(event)
            after = rows[-1][0]
            fed.rows += writer.write_buffered(con, then=_advance(key, after))
    return fed


def feed(writer: StoreWriter, journals: Sequence[Path], *, wait: float | None) -> Fed:
    """One writing turn on the store: move what `journals` hold past their watermarks.

    StoreBusy when the store stays held by another program for `wait` seconds:
    nothing moved, the journals keep everything.
    """
    with writer.attached(wait) as con:
        return _feed_into(con, writer, journals)


@dataclass
class Synced:
    """What `sync_store` did: journals moved in (and deleted), rows, sessions marked crashed, journals in use."""

    journals: int = 0
    rows: int = 0
    crashed: list[str] = field(default_factory=list)
    in_use: int = 0


def sync_store(store: Path, *, wait: float | None) -> Synced:
    """Move every journal whose writer finished or died into `store`, then delete it.

    Sessions whose controller died before recording their end are marked
    crashed.  Journals still being written are left to their owners.  StoreBusy
    when the store is held for `wait` seconds.
    """
    with contextlib.ExitStack() as held:
        paths = journal_paths(store)
        orphans = [path for path in paths if held.enter_context(adopted(path))]
        synced = Synced(in_use=len(paths) - len(orphans))
        if not orphans:
            return synced
        writer = StoreWriter(store, [])
        with writer.attached(wait) as con:
            ensure_schema(con, store)
            fed = _feed_into(con, writer, orphans)
            synced.crashed = mark_crashed_sessions(con)
            _forget_gone_journals(con, store)
        for path in fed.drained:
            remove(path)
    synced.journals, synced.rows = len(fed.drained), fed.rows
    return synced


def _forget_gone_journals(con: duckdb.DuckDBPyConnection, store: Path) -> None:
    """Drop the watermarks of journals deleted since (listed under the writing turn, so none is being fed)."""
    present = [watermark_key(path) for path in journal_paths(store)]
    con.execute(f"DELETE FROM meta WHERE key LIKE '{WATERMARK_PREFIX}%' AND NOT list_contains(?, key)", [present])


def sync_quietly(store: Path) -> None:
    """`sync_store` without waiting and without complaint: a reader's courtesy before it reads."""
    if not journal_paths(store):
        return
    with contextlib.suppress(StoreError, OSError):
        sync_store(store, wait=0.0)
