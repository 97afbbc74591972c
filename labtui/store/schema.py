"""Schema of the labtui DuckDB store: tables, views and the version check.

Timestamps are TIMESTAMPTZ (converted from the events' epoch floats), so SQL
users see real times.  The schema version lives in the `meta` table; a file
written by a newer labtui is refused rather than guessed at.
"""

from __future__ import annotations

import duckdb

from labtui.store.errors import StoreError, damaged, first_line

#: 2 added results.placement (where an isolation run put the attacker) and
#: made the slowdown view group by it; 3 made the slowdown view's samples
#: repetitions (each repetition's values averaged first), not instances; 4 took
#: the median of a repetition's values; 5 added results.run and takes the median
#: over a worker's runs of the mean over the instances of each (REPETITION_VALUES); 6 added
#: sessions.tags and sessions.note (`labtui run --tag KEY=VALUE --note TEXT`); 7 renamed events.kind to
#: events.category (a session's `kind` is its experiment kind); 8 added steps.held_s; 9 added the observer table
#: (labtui's own memory and CPU while it measures) and the observer_share view.
SCHEMA_VERSION = 9

STATUSES = ("running", "completed", "failed", "aborted", "crashed")


_STATUS_CHECK = ", ".join(f"'{s}'" for s in STATUSES)

#: labtui's own share of the host (ObserverSample): the run process, and its helper processes summed.
OBSERVER_DDL = """
CREATE TABLE IF NOT EXISTS observer (
    session_id TEXT,
    ts TIMESTAMPTZ,
    rss_bytes BIGINT,
    cpu_s DOUBLE,
    helper_rss_bytes BIGINT,
    helper_cpu_s DOUBLE
);
"""

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
    message TEXT,
    tags JSON,
    note TEXT
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
    held_s DOUBLE,
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
    placement TEXT,
    run INTEGER
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
    category TEXT,
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
""" + OBSERVER_DDL

VIEWS = ("slowdown", "results_by_step", "observer_share")
#: THE value of a repetition at each condition (placement, background) of a figure.  First the mean
#: over what was measured at once in each of its worker's runs (the instances of one concurrent step:
#: a run, `run` 0), then the median over those runs, one after another at that step (`run` 1, 2, ...):
#: one run that a host daemon preempted does not move the repetition, a starved instance still
#: counts, and the instances of one step are never counted as independent samples.  A non-finite
#: value keeps the plain mean (nan or inf shows, as it would in the mean).  `raw` counts the values.
REPETITION_VALUES = """
SELECT session_id, benchmark, metric, unit, better, placement, background, repetition, min(step) AS step,
       CASE WHEN bool_and(isfinite(value)) THEN median(value) ELSE avg(value) END AS value, sum(raw) AS raw
FROM (SELECT session_id, benchmark, metric, unit, better, coalesce(placement, '') AS placement, background,
             repetition, coalesce(run, 0) AS run_number, min(step) AS step, avg(value) AS value,
             count(value) AS raw
      FROM results
      GROUP BY session_id, benchmark, metric, unit, better, coalesce(placement, ''), background, repetition,
               coalesce(run, 0))
GROUP BY session_id, benchmark, metric, unit, better, placement, background, repetition
"""
#: THE definition of slowdown (labtui.store.frames.slowdown_table runs it over live results too).
#: A sample is a repetition's value (REPETITION_VALUES); mean, std and n are across repetitions;
#: the baseline is the session's first condition of the metric.
SLOWDOWN_SELECT = f"""
WITH per_repetition AS ({REPETITION_VALUES}), stats AS (
    SELECT session_id, benchmark, metric, unit, better, placement, background,
           min(step) AS step, avg(value) AS mean, stddev_samp(value) AS std, count(value) AS n
    FROM per_repetition
    GROUP BY session_id, benchmark, metric, unit, better, placement, background
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
FROM based
"""
#: labtui's own share over each session: its peak resident memory (MiB) and its mean CPU share (CPU
#: seconds per second of the session's samples, 1.0 being one core busy), from the first and last samples.
#: Helpers are summed at each sample, so a helper that ended before the last sample takes its CPU with it.
OBSERVER_SHARE_DDL = """
CREATE VIEW IF NOT EXISTS observer_share AS
SELECT session_id, count(*) AS samples, min(ts) AS first_ts, max(ts) AS last_ts,
       epoch(max(ts)) - epoch(min(ts)) AS span_s,
       max(rss_bytes) / 1048576.0 AS max_rss_mib,
       (arg_max(cpu_s, ts) - arg_min(cpu_s, ts)) / nullif(epoch(max(ts)) - epoch(min(ts)), 0) AS cpu_share,
       max(helper_rss_bytes) / 1048576.0 AS max_helper_rss_mib,
       (arg_max(helper_cpu_s, ts) - arg_min(helper_cpu_s, ts)) / nullif(epoch(max(ts)) - epoch(min(ts)), 0)
           AS helper_cpu_share
FROM observer
GROUP BY session_id;
"""
VIEWS_DDL = f"""
CREATE VIEW IF NOT EXISTS slowdown AS {SLOWDOWN_SELECT};
CREATE VIEW IF NOT EXISTS results_by_step AS
SELECT session_id, repetition, step, background, benchmark, metric, unit, better,
       count(value) AS n, avg(value) AS mean, stddev_samp(value) AS std,
       min(value) AS min, max(value) AS max
FROM results
GROUP BY session_id, repetition, step, background, benchmark, metric, unit, better;
""" + OBSERVER_SHARE_DDL

_META_DDL = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)"


def schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The schema version recorded in the file, or None when it has none."""
    has_meta = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
        "AND schema_name = 'main' AND table_name = 'meta'"
    ).fetchall()[0][0]
    if not has_meta:
        return None
    try:
        rows = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        return int(rows[0][0]) if rows else None
    except (duckdb.Error, ValueError, TypeError) as exc:
        raise StoreError(f"its meta table holds no labtui schema version ({first_line(str(exc))})") from exc


def check_version(con: duckdb.DuckDBPyConnection, path: object) -> int | None:
    """Return the file's schema version; StoreError when it is newer than this code, or damaged."""
    try:
        version = schema_version(con)
    except StoreError as exc:
        if exc.__cause__ is not None and (broken := damaged(path, exc.__cause__)):
            raise broken from exc.__cause__
        raise StoreError(f"store {path} is not a labtui store: {exc}") from exc.__cause__
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"store {path} has schema version {version}, newer than this labtui "
            f"understands ({SCHEMA_VERSION}); upgrade labtui to use it"
        )
    return version


def check_store(con: duckdb.DuckDBPyConnection, path: object, *, allow_empty: bool) -> int | None:
    """The labtui schema version of an open file; StoreError when it is not a labtui store.

    A file with no tables or views at all is None (a new store) when
    `allow_empty`; any other file without labtui's `meta` version is refused,
    and so is a version newer than this code.
    """
    version = check_version(con, path)
    if version is not None:
        return version
    names = [
        name for (name,) in con.execute(
            "SELECT schema_name || '.' || table_name FROM duckdb_tables() "
            "WHERE database_name = current_database() AND NOT internal "
            "UNION ALL SELECT schema_name || '.' || view_name FROM duckdb_views() "
            "WHERE database_name = current_database() AND NOT internal ORDER BY 1"
        ).fetchall()
    ]
    if not names:
        if allow_empty:
            return None
        raise StoreError(f"store {path} is an empty DuckDB database, not a labtui store")
    shown = ", ".join(n.removeprefix("main.") for n in names[:5]) + (", ..." if len(names) > 5 else "")
    raise StoreError(
        f"store {path} is a DuckDB database but not a labtui store (it has {shown} and no labtui "
        "schema version); labtui will not write to it"
    )


def _migrate(con: duckdb.DuckDBPyConnection, version: int) -> None:
    """Bring a file of an older schema version up to date (views are recreated after)."""
    for view in VIEWS:
        con.execute(f"DROP VIEW IF EXISTS {view}")
    if version < 2:
        con.execute("ALTER TABLE results ADD COLUMN placement TEXT")
    if version < 5:
        con.execute("ALTER TABLE results ADD COLUMN IF NOT EXISTS run INTEGER")
    if version < 6:
        con.execute("ALTER TABLE sessions ADD COLUMN IF NOT EXISTS tags JSON")
        con.execute("ALTER TABLE sessions ADD COLUMN IF NOT EXISTS note TEXT")
    if version < 7 and _has_column(con, "events", "kind"):  # `kind` was also a session's experiment kind
        con.execute("ALTER TABLE events RENAME COLUMN kind TO category")
    if version < 8:
        con.execute("ALTER TABLE steps ADD COLUMN IF NOT EXISTS held_s DOUBLE")
    if version < 9:
        con.execute(OBSERVER_DDL)  # TABLES_DDL has made it already; the step is named here all the same


def _has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    """Whether the file's own table (not a temporary view) has the column."""
    return bool(con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = 'main' "
        "AND table_name = ? AND column_name = ?", [table, column]).fetchall()[0][0])


def read_as_current(con: duckdb.DuckDBPyConnection, version: int) -> None:
    """Let a read-only connection to a store of an older schema version read it as the current one.

    A reader cannot migrate the file (the next writer does), so temporary views stand in: ``results``
    with the columns it lacks as NULL, an empty ``observer`` before schema 9, and the current views over
    them.  Without them the run table, reports and compare would mix the file's old view definitions
    with today's SQL, and a query of labtui's own share would fail on a file older than its table.
    """
    if version >= SCHEMA_VERSION:
        return
    database = con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
    quoted = '"' + str(database).replace('"', '""') + '"'
    missing = {
        "results": (["NULL::TEXT AS placement"] if version < 2 else []) + (["NULL::INTEGER AS run"] if version < 5 else []),
        "sessions": ["NULL::JSON AS tags", "NULL::TEXT AS note"] if version < 6 else [],
        "steps": ["NULL::DOUBLE AS held_s"] if version < 8 else [],
    }
    renamed = {"events": "RENAME (kind AS category)"} if version < 7 and _has_column(con, "events", "kind") else {}
    tables = {name for (name,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'"
    ).fetchall()}
    for table in sorted(set(missing) | set(renamed)):
        # a column the file has already (a table created by a newer labtui than its version says) is not added
        added = "".join(f", {column}" for column in missing.get(table, [])
                        if not _has_column(con, table, column.rsplit(" AS ", 1)[1]))
        # a file so old, or so bare, that it lacks the table has nothing to add
        if (added or table in renamed) and table in tables:
            con.execute(f"CREATE TEMP VIEW {table} AS SELECT * {renamed.get(table, '')}{added} FROM {quoted}.main.{table}")
    if version < 9 and "observer" not in tables:  # nobody recorded labtui's own share before schema 9
        con.execute("CREATE TEMP VIEW observer AS SELECT NULL::TEXT AS session_id, NULL::TIMESTAMPTZ AS ts, "
                    "NULL::BIGINT AS rss_bytes, NULL::DOUBLE AS cpu_s, NULL::BIGINT AS helper_rss_bytes, "
                    "NULL::DOUBLE AS helper_cpu_s WHERE false")
    temporary = "CREATE TEMP VIEW"
    if missing["results"]:
        con.execute(VIEWS_DDL.replace("CREATE VIEW IF NOT EXISTS", temporary))
    elif version < 9:
        con.execute(OBSERVER_SHARE_DDL.replace("CREATE VIEW IF NOT EXISTS", temporary))


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
