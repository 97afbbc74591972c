"""Read side of the labtui store: read-only connections, guarded SQL, frames.

Every function opens its own read-only connection and closes it before
returning.  Connections refuse file system access outside the store and lock
their configuration, so a query can read the store and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import duckdb
import polars as pl
import pyarrow as pa

from labtui.store.access import check_file, connect
from labtui.store.errors import StoreError, UnknownSession, damaged
from labtui.store.feed import sync_quietly
from labtui.store.overlay import behind, overlay_journals
from labtui.store.schema import SCHEMA_VERSION, check_store, read_as_current

_READ_CONFIG = {"enable_external_access": False, "lock_configuration": True}
_ALLOWED = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})
#: First words of the statements allowed (and of writes dressed as them: WITH ... INSERT).
_READ_WORDS = frozenset({"SELECT", "FROM", "WITH", "SHOW", "DESCRIBE", "SUMMARIZE", "EXPLAIN", "VALUES", "TABLE"})


@dataclass(frozen=True, slots=True)
class QueryResult:
    """At most `limit` rows of a query.

    total_known counts the rows seen: exact when not truncated, a lower bound
    (limit + 1) when truncated.
    """

    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool
    total_known: int
    #: {session id: rows} read from journals the store has not caught up with (labtui.store.overlay).
    from_journals: dict[str, int] = field(default_factory=dict)


def connect_readonly(path: str | os.PathLike[str], *, wait: float | None = None) -> duckdb.DuckDBPyConnection:
    """Open the store read-only; StoreError if it is missing, not a labtui store, or busy too long.

    A writer holds the file only while it flushes, so a busy file is retried
    for up to `wait` seconds (READ_WAIT_S).  Close the connection soon: while it is
    open, writers wait.  Journals of finished or crashed sessions are moved in
    first when the store is free (labtui.store.feed.sync_quietly); rows still in a
    journal after that (the store is held, or a run has not fed them yet) are read
    from it (labtui.store.overlay).
    """
    path = Path(path).expanduser()
    if not path.is_file() and not path.is_dir():
        raise StoreError(f"no labtui store at {path}")
    check_file(path)  # a directory is said to be one
    sync_quietly(path)
    con = connect(path, read_only=True, config=_READ_CONFIG, wait=wait)
    try:
        version = check_store(con, path, allow_empty=False)
        if version == SCHEMA_VERSION:
            overlay_journals(con, path)
        elif version is not None:
            read_as_current(con, version)  # journals are read once the next writer has migrated the file
    except duckdb.Error as exc:
        con.close()
        raise damaged(path, exc) or StoreError(f"cannot read store {path}: {exc}") from exc
    except BaseException:
        con.close()
        raise
    return con


def readable_now(path: str | os.PathLike[str]) -> bool:
    """Whether a reader gets the store at once: only a read-only holder, or none, has it."""
    try:
        connect(Path(path), read_only=True, config=_READ_CONFIG, wait=0.0).close()
    except StoreError:
        return False
    return True


@contextmanager
def _reading(path: str | os.PathLike[str]) -> Iterator[duckdb.DuckDBPyConnection]:
    con = connect_readonly(path)
    try:
        yield con
    except duckdb.Error as exc:
        raise damaged(path, exc) or StoreError(str(exc)) from exc
    finally:
        con.close()


def read_statement(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """The single read statement in `sql`; StoreError for anything else."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise StoreError(str(exc)) from exc
    if len(statements) != 1:
        raise StoreError(f"expected one SQL statement, got {len(statements)}")
    kind = statements[0].type
    if kind not in _ALLOWED:
        first = statements[0].query.split(None, 1)[0].upper() if statements[0].query.strip() else ""
        # INSTALL is of DuckDB's LOAD kind: say what was typed, unless a read could start so (WITH ... INSERT)
        named = first if first.isalpha() and first not in _READ_WORDS else kind.name
        raise StoreError(
            f"{named} statements are not allowed: the store is read-only here "
            "(use SELECT, FROM, WITH, SHOW, DESCRIBE, SUMMARIZE or EXPLAIN)"
        )
    return statements[0].query


def run_sql(path: str | os.PathLike[str], sql: str, limit: int = 500) -> QueryResult:
    """Run one read-only statement, fetching at most `limit` + 1 rows."""
    with _reading(path) as con:
        return query_result(con, sql, limit)


def query_result(con: duckdb.DuckDBPyConnection, sql: str, limit: int) -> QueryResult:
    """One read statement on a connection of `connect_readonly`, at most `limit` + 1 rows fetched."""
    query = read_statement(con, sql)
    reader = con.sql(query).to_arrow_reader(limit + 1)
    try:
        columns = list(reader.schema.names)
        rows = _first_rows(reader, limit + 1)
    finally:
        reader.close()
    return QueryResult(columns, rows[:limit], len(rows) > limit, len(rows), behind(con))


def _first_rows(reader: Any, count: int) -> list[tuple[Any, ...]]:
    """Up to `count` rows from an Arrow record batch reader, as tuples."""
    rows: list[tuple[Any, ...]] = []
    for batch in reader:
        batch = batch.slice(0, count - len(rows))
        rows.extend(zip(*(_python_values(column) for column in batch.columns)))
        if len(rows) >= count:
            break
    return rows


def _python_values(column: pa.Array) -> list[Any]:
    """A column as Python values; DuckDB INTERVALs become timedeltas (a month is 30 days)."""
    if not pa.types.is_interval(column.type):
        return column.to_pylist()
    return [
        None if v is None else timedelta(days=v.months * 30 + v.days, microseconds=v.nanoseconds // 1000)
        for v in column.to_pylist()
    ]


def fetch_frame(
    path: str | os.PathLike[str], sql: str, params: Sequence[Any] | None = None
) -> pl.DataFrame:
    """Run trusted SQL (labtui's own) and return the whole result as a polars frame."""
    with _reading(path) as con:
        return cast(pl.DataFrame, pl.from_arrow(con.sql(sql, params=params).to_arrow_table()))  # a Table gives a DataFrame


_SESSIONS_SQL = """
SELECT s.session_id, s.suite, s.backend, s.host, s.status, s.started_at, s.ended_at,
       (SELECT count(*) FROM steps t WHERE t.session_id = s.session_id) AS steps,
       (SELECT count(*) FROM results r WHERE r.session_id = s.session_id) AS results,
       (SELECT string_agg(key || '=' || (value ->> '$'), ' ' ORDER BY key)
        FROM json_each(s.tags)) AS tags,
       s.note
FROM sessions s
ORDER BY s.started_at DESC NULLS LAST, s.session_id
"""


def list_sessions(path: str | os.PathLike[str]) -> pl.DataFrame:
    """Every session, newest first, with its step and result counts.

    `in_store` is false for a session read (in part) from its journal: the store
    has not caught up with it yet (labtui.store.overlay).
    """
    with _reading(path) as con:
        frame = cast(pl.DataFrame, pl.from_arrow(con.sql(_SESSIONS_SQL).to_arrow_table()))
        pending = behind(con)
    return frame.with_columns(in_store=~pl.col("session_id").is_in(list(pending)))


def marked_status(sessions: pl.DataFrame) -> pl.DataFrame:
    """`list_sessions` for a person: the status of a session read from its journal marked with a *,
    in place of the `in_store` column."""
    return sessions.with_columns(
        status=pl.when(pl.col("in_store")).then(pl.col("status")).otherwise(pl.col("status") + "*")
    ).drop("in_store")


def slowdown_frame(
    path: str | os.PathLike[str], session_id: str, metric: str | None = None
) -> pl.DataFrame:
    """The slowdown view for one session (optionally one metric), by step (placement) and background."""
    return fetch_frame(
        path,
        "SELECT * FROM slowdown WHERE session_id = ? AND (? IS NULL OR metric = ?) "
        "ORDER BY benchmark, metric, step, background",
        [session_id, metric, metric],
    )


def session_ids(path: str | os.PathLike[str]) -> list[str]:
    """All session ids, oldest first."""
    frame = fetch_frame(path, "SELECT session_id FROM sessions ORDER BY started_at, session_id")
    return frame["session_id"].to_list()


def resolve_session(path: str | os.PathLike[str], prefix: str) -> str:
    """The one session id equal to or starting with `prefix`; UnknownSession when none or several are, StoreError
    when the store cannot be read."""
    ids = session_ids(path)
    if prefix in ids:
        return prefix
    matches = [sid for sid in ids if sid.startswith(prefix)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UnknownSession(f"no session id starts with {prefix!r} in {path}")
    raise UnknownSession(f"{prefix!r} is ambiguous; it matches: {', '.join(matches)}")
