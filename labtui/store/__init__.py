"""The labtui DuckDB store: one writer task, read-only SQL for everyone else.

Imports only labtui.core.events (never the engine or the UI).  The names below
load their modules (and so DuckDB, polars and pyarrow) on first use: a run's
measuring process imports ``labtui.store.journal`` and ``labtui.store.errors``
and never pays for the store itself (docs/performance.md, "A lean run").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from labtui.store.bulk import record_session
    from labtui.store.crashes import controller_name, crashed_sessions, mark_crashed_sessions
    from labtui.store.errors import SessionExists, StoreError, UnknownSession
    from labtui.store.reader import (
        QueryResult,
        connect_readonly,
        fetch_frame,
        list_sessions,
        readable_now,
        resolve_session,
        run_sql,
        session_ids,
        slowdown_frame,
    )
    from labtui.store.schema import REPETITION_VALUES, SCHEMA_VERSION, ensure_schema
    from labtui.store.writer import StoreWriter, record_events

#: Each public name, by the module that defines it.
_HOMES = {
    "controller_name": "crashes", "crashed_sessions": "crashes", "mark_crashed_sessions": "crashes",
    "record_session": "bulk",
    "SessionExists": "errors", "StoreError": "errors", "UnknownSession": "errors",
    "QueryResult": "reader", "connect_readonly": "reader", "fetch_frame": "reader", "list_sessions": "reader",
    "readable_now": "reader", "resolve_session": "reader", "run_sql": "reader", "session_ids": "reader",
    "slowdown_frame": "reader",
    "REPETITION_VALUES": "schema", "SCHEMA_VERSION": "schema", "ensure_schema": "schema",
    "StoreWriter": "writer", "record_events": "writer",
}

__all__ = [
    "REPETITION_VALUES", "SCHEMA_VERSION", "QueryResult", "SessionExists", "StoreError", "StoreWriter", "UnknownSession",
    "connect_readonly", "controller_name", "crashed_sessions", "ensure_schema", "fetch_frame", "list_sessions",
    "mark_crashed_sessions", "readable_now", "record_events", "record_session", "resolve_session", "run_sql",
    "session_ids", "slowdown_frame",
]


def __getattr__(name: str) -> Any:
    """Load a public name's module on first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
