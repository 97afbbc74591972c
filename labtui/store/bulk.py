"""A session whose rows DuckDB loads itself, recorded by SQL in one transaction (`labtui import`).

StoreWriter buffers events and writes them as Arrow batches; a bulk load has
DuckDB read its files straight into the tables, and needs neither Arrow nor
the writer's several DuckDBs.  Here one in-memory DuckDB checks the store
read-only (as StoreWriter.open does), then, in one writing turn, attaches it,
brings its schema up to date and, in one transaction, marks crashed sessions,
runs the load and writes the session's row, completed: when the load fails,
nothing of it is recorded.  Closing the DuckDB checkpoints the file.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from pathlib import Path

import duckdb

from labtui.core.events import SessionStarted
from labtui.store.access import attach, check_writable, memory_connection, writing_turn
from labtui.store.crashes import controller_name, mark_crashed_sessions
from labtui.store.errors import SessionExists, StoreError, damaged, first_line
from labtui.store.journal import journal_paths
from labtui.store.schema import SCHEMA_VERSION, check_store, ensure_schema

_SESSION_SQL = (
    "INSERT INTO sessions (session_id, suite, kind, backend, host, status, started_at, ended_at, config, pid, "
    "controller, message) VALUES (?, ?, ?, ?, ?, 'completed', to_timestamp(?), to_timestamp(?), ?, ?, ?, ?)"
)


def record_session(path: Path, started: SessionStarted, load: Callable[[duckdb.DuckDBPyConnection], str]) -> None:
    """Record `started`'s session and the rows `load` inserts into the existing store at `path`, all or nothing.

    `load` runs inside the transaction, with the store as the default
    database, and returns the message of the session's end.  SessionExists
    when the store or a journal beside it has the session already; whatever
    `load` raises rolls the transaction back and is raised as it is; a DuckDB
    error of the store is a StoreError.
    """
    con = memory_connection()
    try:
        check_writable(path, con=con)
        with writing_turn(path):
            attach(con, path, "lab")
            try:
                con.execute("USE lab")
                if check_store(con, path, allow_empty=True) != SCHEMA_VERSION:
                    ensure_schema(con, path)
                _refuse_existing(con, path, started.session_id)
                _in_one_transaction(con, started, load)
            except duckdb.Error as exc:
                raise damaged(path, exc) or StoreError(
                    f"could not record session {started.session_id} in {path}: {first_line(str(exc))}") from exc
            finally:
                con.close()  # checkpoints the store and lets go of it, inside the writing turn
    finally:
        con.close()


def _in_one_transaction(con: duckdb.DuckDBPyConnection, started: SessionStarted,
                        load: Callable[[duckdb.DuckDBPyConnection], str]) -> None:
    con.execute("BEGIN TRANSACTION")
    try:
        mark_crashed_sessions(con)
        message = load(con)
        con.execute(_SESSION_SQL, [
            started.session_id, started.suite, started.kind, started.backend, started.host, started.ts,
            time.time(), json.dumps(started.config, sort_keys=True, default=str), started.pid,
            controller_name(), message,
        ])
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):  # COMMIT itself may have ended it
            con.execute("ROLLBACK")
        raise


def _refuse_existing(con: duckdb.DuckDBPyConnection, path: Path, session_id: str) -> None:
    in_store = con.execute("SELECT count(*) FROM sessions WHERE session_id = ?", [session_id]).fetchall()[0][0]
    if in_store or any(journal.stem == session_id for journal in journal_paths(path)):
        raise SessionExists(f"session {session_id!r} already exists in {path}; choose another --session name")
