"""The labtui DuckDB store: one writer task, read-only SQL for everyone else.

Imports only labtui.core.events (never the engine or the UI).
"""

from labtui.store.crashes import controller_name, crashed_sessions, mark_crashed_sessions
from labtui.store.errors import StoreError, UnknownSession
from labtui.store.reader import (
    QueryResult,
    connect_readonly,
    fetch_frame,
    list_sessions,
    resolve_session,
    run_sql,
    session_ids,
    slowdown_frame,
)
from labtui.store.schema import REPETITION_VALUES, SCHEMA_VERSION, ensure_schema
from labtui.store.writer import StoreWriter, record_events

__all__ = [
    "REPETITION_VALUES",
    "SCHEMA_VERSION",
    "QueryResult",
    "StoreError",
    "UnknownSession",
    "StoreWriter",
    "connect_readonly",
    "controller_name",
    "crashed_sessions",
    "ensure_schema",
    "fetch_frame",
    "list_sessions",
    "mark_crashed_sessions",
    "record_events",
    "resolve_session",
    "run_sql",
    "session_ids",
    "slowdown_frame",
]
