"""Schema of the labtui DuckDB store: tables, views and the version check.

Timestamps are TIMESTAMPTZ (converted from the events' epoch floats), so SQL
users see real times.  The schema version lives in the `meta` table; a file
written by a newer labtui is refused rather than guessed at.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

#: 2 added results.placement (where an isolation run put the attacker) and
#: made the slowdown view group by it.
SCHEMA_VERSION = 2

STATUSES = ("running", "completed", "failed", "aborted", "crashed")


class StoreError(Exception):
    """A store could not be opened, read or written; the message says why."""


_STATUS_CHECK = ", ".join(f"'{s}'" for s in STATUSES)

TABLES_DDL = f"""
CREATE TABLE IF NOT EXISTS sessions (
    session_id TEXT PRIMARY KEY,
    suite TEXT,
    kind TEXT,
    backend TEXT,
    host TEXT,
    status TEXT CHECK (status IN ({_STATUS_CHECK})),
    started_at TIMESTAMPTZ,
    ended_at TIMESTAMPTZ,
    config JSON,
    pid INTEGER,
    controller TEXT,
    message TEXT
);
CREATE TABLE IF NOT EXISTS steps (
    session_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    step INTEGER NOT NULL,
    steps INTEGER,
    background INTEGER,
    started_at TIMESTAMPTZ,
    ended_at TIMESTAMPTZ,
    ok BOOLEAN,
    PRIMARY KEY (session_id, repetition, step)
);
CREATE TABLE IF NOT EXISTS instances (
    session_id TEXT NOT NULL,
    instance_id TEXT NOT NULL,
    host TEXT,
    backend TEXT,
    role TEXT,
    name TEXT,
    created_at TIMESTAMPTZ,
    ready_at TIMESTAMPTZ,
    destroyed_at TIMESTAMPTZ,
    boot_s DOUBLE,
    state TEXT,
    PRIMARY KEY (session_id, instance_id)
);
CREATE TABLE IF NOT EXISTS results (
    session_id TEXT NOT NULL,
    repetition INTEGER,
    step INTEGER,
    background INTEGER,
    host TEXT,
    instance_id TEXT,
    benchmark TEXT,
    metric TEXT,
    value DOUBLE,
    unit TEXT,
    better TEXT CHECK (better IN ('higher', 'lower')),
    ts TIMESTAMPTZ,
    placement TEXT
);
CREATE TABLE IF NOT EXISTS resources (
    session_id TEXT,
    host TEXT,
    ts TIMESTAMPTZ,
    cpu_avail DOUBLE,
    mem_avail DOUBLE,
    swap_avail DOUBLE,
    mem_used_bytes BIGINT,
    load1 DOUBLE,
    instances INTEGER
);
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT,
    ts TIMESTAMPTZ,
    level TEXT,
    kind TEXT,
    message TEXT
);
CREATE TABLE IF NOT EXISTS hosts (
    session_id TEXT NOT NULL,
    host TEXT NOT NULL,
    os TEXT,
    kernel TEXT,
    arch TEXT,
    cpu_model TEXT,
    cores INTEGER,
    mem_total_bytes BIGINT,
    backend TEXT,
    backend_version TEXT,
    isolation TEXT,
    ts TIMESTAMPTZ,
    PRIMARY KEY (session_id, host)
);
"""

VIEWS = ("slowdown", "results_by_step")
VIEWS_DDL = """
CREATE VIEW IF NOT EXISTS slowdown AS
WITH stats AS (
    SELECT session_id, benchmark, metric, unit, better, background, placement,
           min(step) AS step,
           avg(value) AS mean, stddev_samp(value) AS std, count(value) AS n
    FROM results
    GROUP BY session_id, benchmark, metric, unit, better, background, placement
), based AS (
    SELECT *, first_value(mean) OVER (
        PARTITION BY session_id, benchmark, metric, unit, better ORDER BY step, background
    ) AS mean0
    FROM stats
)
SELECT session_id, benchmark, metric, unit, better, background, mean, std, n,
       mean / nullif(mean0, 0) AS normalized,
       CASE better
           WHEN 'higher' THEN (1 - mean / nullif(mean0, 0)) * 100
           ELSE (mean / nullif(mean0, 0) - 1) * 100
       END AS slowdown_pct,
       placement, step
FROM based;
CREATE VIEW IF NOT EXISTS results_by_step AS
SELECT session_id, repetition, step, background, benchmark, metric, unit, better,
       count(value) AS n, avg(value) AS mean, stddev_samp(value) AS std,
       min(value) AS min, max(value) AS max
FROM results
GROUP BY session_id, repetition, step, background, benchmark, metric, unit, better;
"""

_META_DDL = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)"


def connect(
    path: Path, *, read_only: bool, config: dict[str, Any] | None = None
) -> duckdb.DuckDBPyConnection:
    """Open `path` with DuckDB; StoreError when another connection holds its lock."""
    try:
        return duckdb.connect(str(path), read_only=read_only, config=config or {})
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise StoreError(f"cannot open store {path}: {exc}") from exc
        raise StoreError(
            f"store {path} is in use by a running labtui session (another process holds its lock)"
        ) from exc
    except duckdb.ConnectionException as exc:
        raise StoreError(
            f"store {path} is in use by a running labtui session in this process "
            f"(it is already open with other settings): {exc}"
        ) from exc


def schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The schema version recorded in the file, or None when it has none."""
    has_meta = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = 'meta'"
    ).fetchall()[0][0]
    if not has_meta:
        return None
    rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    return int(rows[0][0]) if rows else None


def check_version(con: duckdb.DuckDBPyConnection, path: object) -> int | None:
    """Return the file's schema version; StoreError when it is newer than this code."""
    version = schema_version(con)
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"store {path} has schema version {version}, newer than this labtui "
            f"understands ({SCHEMA_VERSION}); upgrade labtui to use it"
        )
    return version


def _migrate(con: duckdb.DuckDBPyConnection, version: int) -> None:
    """Bring a file of an older schema version up to date (views are recreated after)."""
    for view in VIEWS:
        con.execute(f"DROP VIEW IF EXISTS {view}")
    if version < 2:
        con.execute("ALTER TABLE results ADD COLUMN placement TEXT")


def ensure_schema(con: duckdb.DuckDBPyConnection, path: object = "") -> None:
    """Create missing tables and views, migrate older files, record SCHEMA_VERSION in `meta`."""
    version = check_version(con, path)
    if version == SCHEMA_VERSION:
        return
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(_META_DDL)
        con.execute(TABLES_DDL)
        if version is not None:
            _migrate(con, version)
        con.execute(VIEWS_DDL)
        con.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)]
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
