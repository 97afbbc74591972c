"""The DuckDB store against real files: writer, schema, views, read-only SQL."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from store_events import T0, full_session, observed, result, started

from labtui.core.events import (
    InstanceDestroyed,
    Log,
    SessionEnded,
    StepEnded,
    StepStarted,
)
from labtui.core.liveness import session_lock
from labtui.store import (
    SCHEMA_VERSION,
    StoreError,
    StoreWriter,
    connect_readonly,
    fetch_frame,
    list_sessions,
    record_events,
    resolve_session,
    run_sql,
    session_ids,
    slowdown_frame,
)
from labtui.store import access as access_module
from labtui.store import crashes as crashes_module
from labtui.store.delete import delete_sessions

REPO = Path(__file__).resolve().parents[2]


def one(path: Path, sql: str) -> tuple:
    return run_sql(path, sql).rows[0]


def test_round_trip(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    assert record_events(db, full_session()) == []
    session = fetch_frame(db, "SELECT *, epoch(started_at) AS s0, epoch(ended_at) AS s1 "
                              "FROM sessions").row(0, named=True)
    assert session["status"] == "completed"
    assert session["message"] == "all good"
    assert session["controller"] == crashes_module.controller_name()
    assert session["pid"] == os.getpid()
    assert (session["s0"], session["s1"]) == (T0, T0 + 7)
    assert one(db, "SELECT config->>'$.steps[1]' FROM sessions") == ("4",)
    assert one(db, "SELECT typeof(started_at) FROM sessions") == ("TIMESTAMP WITH TIME ZONE",)
    assert one(db, "SELECT ended_at - started_at FROM sessions") == (timedelta(seconds=7),)
    assert one(db, "SELECT steps, background, ok, epoch(ended_at) - epoch(started_at) "
                   "FROM steps") == (2, 0, True, 5.0)
    assert one(db, "SELECT role, name, boot_s, state, epoch(created_at), epoch(ready_at), "
                   "epoch(destroyed_at) FROM instances") == (
        "probe", "probe-1", 1.5, "destroyed", T0 + 2, T0 + 3.5, T0 + 6)
    assert one(db, "SELECT value, unit, better FROM results") == (1.5, "s", "lower")
    assert one(db, "SELECT session_id, swap_avail, instances, mem_used_bytes FROM resources") == (
        "s1", None, 1, 1 << 30)
    assert one(db, "SELECT level, category, message FROM events") == ("info", "step", "step 1 done")
    assert one(db, "SELECT cores, mem_total_bytes, isolation FROM hosts") == (
        8, 16 << 30, "namespaces")
    assert one(db, "SELECT value FROM meta WHERE key = 'schema_version'") == (str(SCHEMA_VERSION),)


def test_instance_row_upserted_across_flushes(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    with StoreWriter.open(db) as writer:
        for event in full_session()[:4]:
            writer.add(event)
        assert writer.flush() == 4
        writer.add(full_session()[4])
        assert writer.flush() == 1
        writer.add(InstanceDestroyed("s1", "i1", ts=T0 + 9))
        writer.add(StepEnded("s1", 1, 1, 0, ok=False, ts=T0 + 9))
        writer.flush()
        assert writer.flush() == 0
    assert one(db, "SELECT count(*), any_value(name), any_value(boot_s), any_value(state), "
                   "epoch(any_value(destroyed_at)) FROM instances") == (
        1, "probe-1", 1.5, "destroyed", T0 + 9)
    assert one(db, "SELECT count(*), any_value(steps), any_value(ok) FROM steps") == (1, 2, False)


def test_failed_flush_drops_only_its_batch(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    with StoreWriter.open(db) as writer:
        writer.add(started())
        writer.add(SessionEnded("s1", "bogus"))  # type: ignore[arg-type]
        with pytest.raises(StoreError, match="could not write 1 rows .*CHECK constraint"):
            writer.flush()
        assert writer.pending == 0
        writer.add(started("s2"))
    assert session_ids(db) == ["s2"]


def test_file_and_directory_are_private(tmp_path: Path) -> None:
    db = tmp_path / "new" / "lab.duckdb"
    record_events(db, full_session())
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    wal = db.with_name(db.name + ".wal")
    assert not wal.exists() or stat.S_IMODE(wal.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.with_name(db.name + ".lock").stat().st_mode) == 0o600  # the writers' turnstile


def test_slowdown_lower_is_better(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    # a sample is a repetition: repetition 1's two instances, measured at once (run 0), average to 0.8 first
    record_events(db, [started(), result(0.7, 0), result(0.9, 0), replace(result(1.2, 0), repetition=2),
                       result(1.5, 4, step=2), replace(result(1.5, 4, step=2), repetition=2)])
    frame = slowdown_frame(db, "s1")
    assert frame["background"].to_list() == [0, 4]
    assert frame["n"].to_list() == [2, 2]
    assert frame["mean"].to_list() == pytest.approx([1.0, 1.5])
    assert frame["std"][0] == pytest.approx(0.2828427125)  # of the repetitions 0.8 and 1.2
    assert frame["normalized"].to_list() == pytest.approx([1.0, 1.5])
    assert frame["slowdown_pct"].to_list() == pytest.approx([0.0, 50.0])


def test_slowdown_higher_is_better(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, [started(), result(100, 2, "higher", metric="ops"),
                       result(80, 8, "higher", step=2, metric="ops"),
                       result(2.0, 2, metric="boot"), result(3.0, 8, step=2, metric="boot")])
    ops = slowdown_frame(db, "s1", metric="ops")
    assert ops["normalized"].to_list() == pytest.approx([1.0, 0.8])
    assert ops["slowdown_pct"].to_list() == pytest.approx([0.0, 20.0])
    assert ops["std"].to_list() == [None, None]
    assert len(slowdown_frame(db, "s1")) == 4
    assert slowdown_frame(db, "other").is_empty()


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("INSERT INTO events VALUES ('x', now(), 'info', 'k', 'm')", "INSERT"),
        ("COPY results TO '/tmp/labtui-stolen.csv'", "COPY"),
        ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH"),
        ("EXPORT DATABASE '/tmp/labtui-export'", "EXPORT"),
        ("INSTALL httpfs", "INSTALL"),  # DuckDB's LOAD kind; the message says what was typed
        ("LOAD json", "LOAD"),
        ("/* a comment */ DROP TABLE results", "DROP"),
        ("WITH x AS (SELECT 1 AS a) INSERT INTO sessions (session_id) SELECT 'y' FROM x", "INSERT"),
        ("with x as (select 1) delete from results", "DELETE"),
        ("SET threads = 1", "SET"),
        ("CALL pragma_version()", "CALL"),
        ("PRAGMA table_info('results')", "PRAGMA"),
        ("CREATE TABLE x AS SELECT 1", "CREATE"),
        ("UPDATE sessions SET status = 'failed'", "UPDATE"),
        ("DELETE FROM results", "DELETE"),
        ("DROP TABLE results", "DROP"),
    ],
)
def test_run_sql_rejects_non_reads(tmp_path: Path, sql: str, kind: str) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, full_session())
    with pytest.raises(StoreError, match=f"{kind} statements are not allowed"):
        run_sql(db, sql)
    assert one(db, "SELECT count(*) FROM results") == (1,)
    assert not Path("/tmp/labtui-stolen.csv").exists()


@pytest.mark.parametrize(
    "sql",
    ["SELECT * FROM sessions", "FROM results", "SHOW TABLES", "DESCRIBE results",
     "SUMMARIZE results", "EXPLAIN SELECT * FROM results", "WITH x AS (SELECT 1 AS a) FROM x",
     "SELECT * FROM slowdown;"],
)
def test_run_sql_allows_reads(tmp_path: Path, sql: str) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, full_session())
    answer = run_sql(db, sql)
    assert answer.columns and not answer.truncated


def test_run_sql_refuses_files_and_many_statements(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, full_session())
    with pytest.raises(StoreError, match="disabled by configuration"):
        run_sql(db, "SELECT * FROM read_csv('/etc/passwd')")
    with pytest.raises(StoreError, match="one SQL statement"):
        run_sql(db, "SELECT 1; SELECT 2")
    with pytest.raises(StoreError, match="syntax error"):
        run_sql(db, "SELEC 1")


def test_run_sql_caps_rows(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, [started()] + [result(float(i), 0, ts=T0 + i) for i in range(1000)])
    answer = run_sql(db, "SELECT value, ts FROM results ORDER BY value", limit=500)
    assert answer.columns == ["value", "ts"]
    assert len(answer.rows) == 500 and answer.truncated and answer.total_known == 501
    assert answer.rows[-1][0] == 499.0
    assert answer.rows[0][1].timestamp() == T0
    exact = run_sql(db, "SELECT * FROM results", limit=1000)
    assert not exact.truncated and exact.total_known == 1000
    # streamed: fetching everything would never end, so the test waits (generously) for an answer
    huge = _within(120, lambda: run_sql(db, "SELECT * FROM range(1000000000000)", limit=10))
    assert huge.truncated and len(huge.rows) == 10


def _within(timeout: float, fn):
    """fn() in a daemon thread; fails when it has not returned within `timeout` seconds."""
    answer: list = []
    thread = threading.Thread(target=lambda: answer.append(fn()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert answer, f"no answer within {timeout} s"
    return answer[0]


def test_missing_store(tmp_path: Path) -> None:
    missing = tmp_path / "nope.duckdb"
    with pytest.raises(StoreError, match=str(missing)):
        run_sql(missing, "SELECT 1")
    assert not missing.exists()


def _spawn(code: str) -> subprocess.Popen[str]:
    """A Python child running `code`; it prints 'ready' when it has done its work."""
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def _kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.stdout is not None
    proc.stdout.close()


def test_open_writer_does_not_lock_readers_out(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, full_session())
    holder = _spawn(f"""
        import time
        from labtui.store import StoreWriter
        writer = StoreWriter.open({str(db)!r})
        print("ready", flush=True)
        time.sleep(60)
    """)
    try:
        assert session_ids(db) == ["s1"]  # the writer holds the file only while it flushes
    finally:
        _kill(holder)


def test_reader_reports_a_store_held_by_another_program(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, full_session())
    monkeypatch.setattr(access_module, "READ_WAIT_S", 0.3)
    holder = _spawn(f"""
        import time, duckdb
        con = duckdb.connect({str(db)!r})
        print("ready", flush=True)
        time.sleep(60)
    """)
    try:
        with pytest.raises(StoreError, match=rf"{db} is in use by .*PID {holder.pid}.*not released for 0.3 s"):
            connect_readonly(db)
    finally:
        _kill(holder)
    assert session_ids(db) == ["s1"]


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, [])
    con = duckdb.connect(str(db))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    con.close()
    with pytest.raises(StoreError, match="newer than this labtui"):
        StoreWriter.open(db)
    with pytest.raises(StoreError, match="newer than this labtui"):
        connect_readonly(db)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_crashed_sessions_are_marked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A session is alive while its running-lock is held, whatever its recorded pid says (a pid is reused)."""
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))
    db = tmp_path / "lab.duckdb"
    dead = _dead_pid()
    record_events(db, [
        started("dead", pid=dead), result(1.0, 0, session_id="dead", ts=T0 + 30),
        Log("dead", "info", "step", "last words", ts=T0 + 40),
        started("alive", pid=dead), started("elsewhere", pid=dead), started("quiet", pid=dead),
        started("reused"),  # its pid (ours) is alive, but no process holds its lock
    ])
    con = duckdb.connect(str(db))
    con.execute("UPDATE sessions SET controller = 'other-host' WHERE session_id = 'elsewhere'")
    con.close()
    before = time.time()
    with session_lock("alive"), StoreWriter.open(db) as writer:
        assert writer.crashed == ["dead", "quiet", "reused"]
    rows = dict(fetch_frame(db, "SELECT session_id, status FROM sessions").iter_rows())
    assert rows == {"dead": "crashed", "quiet": "crashed", "reused": "crashed", "alive": "running",
                    "elsewhere": "running"}
    assert one(db, "SELECT epoch(ended_at), message FROM sessions WHERE session_id = 'dead'") == (
        T0 + 40, f"controller process {dead} ended without closing the session")
    assert one(db, "SELECT epoch(ended_at) FROM sessions WHERE session_id = 'quiet'")[0] >= before


def test_flushed_step_survives_killed_writer(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    child = _spawn(f"""
        import os, time
        from labtui.core.events import SessionStarted, StepStarted, StepEnded, Result
        from labtui.store import StoreWriter
        w = StoreWriter.open({str(db)!r})
        w.add(SessionStarted("k1", "boot", "scaling", "process", "local", {{}}, os.getpid()))
        w.add(StepStarted("k1", 1, 1, 3, 0, ts={T0}))
        w.add(Result("k1", 1, 1, 0, "local", "i1", "b", "m", 2.0, "s", "lower", ts={T0 + 1}))
        w.add(StepEnded("k1", 1, 1, 0, ts={T0 + 2}))
        w.flush()
        w.add(StepStarted("k1", 1, 2, 3, 4, ts={T0 + 3}))
        print("ready", flush=True)
        time.sleep(60)
    """)
    _kill(child)
    with StoreWriter.open(db) as writer:
        assert writer.crashed == ["k1"]
    assert one(db, "SELECT count(*), epoch(max(ended_at)) FROM steps") == (1, T0 + 2)
    assert one(db, "SELECT status, epoch(ended_at) FROM sessions") == ("crashed", T0 + 2)
    assert one(db, "SELECT count(*) FROM results") == (1,)


def test_sessions_listing_and_prefixes(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, [started("abc123", ts=T0), started("abd456", ts=T0 + 10),
                       result(1.0, 0, session_id="abc123"), result(2.0, 0, session_id="abc123")])
    listing = list_sessions(db)
    assert listing["session_id"].to_list() == ["abd456", "abc123"]
    assert listing["results"].to_list() == [0, 2]
    assert listing.columns == ["session_id", "suite", "backend", "host", "status", "started_at",
                               "ended_at", "steps", "results", "tags", "note", "in_store"]
    assert session_ids(db) == ["abc123", "abd456"]
    assert resolve_session(db, "abc") == "abc123"
    assert resolve_session(db, "abd456") == "abd456"
    with pytest.raises(StoreError, match="abc123, abd456"):
        resolve_session(db, "ab")
    with pytest.raises(StoreError, match="no session id starts with 'zz'"):
        resolve_session(db, "zz")


# --- what the store-writer mutation run (tests/mutation, target store-writer) found untested ---------


def test_the_session_config_and_tags_are_stored_with_sorted_keys(tmp_path: Path) -> None:
    """Two runs of one suite store the same config text, whatever order the dict was built in."""
    db = tmp_path / "lab.duckdb"
    record_events(db, [replace(started(), config={"b": 1, "a": {"d": 2, "c": 3}}, tags={"rig": "b", "os": "a"})])
    assert one(db, "SELECT config FROM sessions") == ('{"a": {"c": 3, "d": 2}, "b": 1}',)
    assert one(db, "SELECT tags FROM sessions") == ('{"os": "a", "rig": "b"}',)  # so are its tags


def test_a_flush_leaves_no_batch_registered_on_its_connection(tmp_path: Path) -> None:
    """Each flush registers one Arrow batch per table: it must let go of them, or every batch stays in memory."""
    writer = StoreWriter.open(tmp_path / "lab.duckdb")
    try:
        for event in full_session():
            writer.add(event)
        writer.flush()
        assert writer._memory is not None
        views = writer._memory.execute("SELECT view_name FROM duckdb_views() WHERE view_name LIKE '_labtui%'")
        assert views.fetchall() == []
    finally:
        writer.close()




def test_a_flush_counts_every_buffered_row_and_stores_the_sessions_note(tmp_path: Path) -> None:
    """`pending` and flush's count are what a feed reports as rows moved; the note is the user's --note."""
    db = tmp_path / "lab.duckdb"
    with StoreWriter.open(db) as writer:
        writer.add(replace(started(), note="after the BIOS update"))
        writer.add(result(1.0, 0))
        writer.add(result(2.0, 4))
        assert writer.pending == 3
        assert writer.flush() == 3
        assert writer.pending == 0
    assert one(db, "SELECT note FROM sessions") == ("after the BIOS update",)


def test_a_version_6_store_reads_its_log_category_and_is_migrated_by_the_next_writer(tmp_path: Path) -> None:
    """Schema 7 renamed events.kind (a log line's category) to events.category: a reader of an older file reads
    `category` before any writer touched it, and the next writer renames the column in place."""
    db = tmp_path / "v6.duckdb"
    record_events(db, [Log("s1", "warning", "backend", "create failed", ts=T0)])
    with duckdb.connect(str(db)) as con:  # the file as labtui 6 left it
        con.execute("ALTER TABLE events RENAME COLUMN category TO kind")
        con.execute("UPDATE meta SET value = '6' WHERE key = 'schema_version'")
    assert run_sql(db, "SELECT level, category, message FROM events").rows == [("warning", "backend", "create failed")]
    assert one(db, "SELECT value FROM meta WHERE key = 'schema_version'") == ("6",)  # a reader leaves it as it is
    record_events(db, [Log("s1", "info", "step", "step 1 done", ts=T0 + 1)])
    assert one(db, "SELECT value FROM meta WHERE key = 'schema_version'") == (str(SCHEMA_VERSION),)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT category FROM events ORDER BY ts").fetchall() == [("backend",), ("step",)]


def test_a_version_7_store_reads_steps_held_as_null_and_the_next_writer_adds_the_column(tmp_path: Path) -> None:
    """Schema 8 added steps.held_s (how long the step gate held a manual run before the step)."""
    db = tmp_path / "v7.duckdb"
    record_events(db, [StepStarted("s1", 1, 0, 2, 0, ts=T0)])
    with duckdb.connect(str(db)) as con:  # the file as labtui 7 left it
        con.execute("ALTER TABLE steps DROP COLUMN held_s")
        con.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    assert run_sql(db, "SELECT step, held_s FROM steps").rows == [(0, None)]
    record_events(db, [StepStarted("s1", 1, 1, 2, 2, 12.5, ts=T0 + 20)])
    assert one(db, "SELECT value FROM meta WHERE key = 'schema_version'") == (str(SCHEMA_VERSION),)
    assert run_sql(db, "SELECT step, held_s FROM steps ORDER BY step").rows == [(0, None), (1, 12.5)]


def test_a_version_8_store_reads_an_empty_observer_and_the_next_writer_adds_the_table(tmp_path: Path) -> None:
    """Schema 9 added the observer table (labtui's own memory and CPU) and its observer_share view."""
    db = tmp_path / "v8.duckdb"
    record_events(db, [started()])
    with duckdb.connect(str(db)) as con:  # the file as labtui 8 left it
        con.execute("DROP VIEW observer_share")
        con.execute("DROP TABLE observer")
        con.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    assert run_sql(db, "SELECT count(*) FROM observer").rows == [(0,)]
    assert run_sql(db, "SELECT count(*) FROM observer_share").rows == [(0,)]
    assert one(db, "SELECT value FROM meta WHERE key = 'schema_version'") == ("8",)  # a reader leaves it as it is
    record_events(db, [observed(0, 1.0), observed(4, 3.0, rss_mib=100)])
    assert one(db, "SELECT value FROM meta WHERE key = 'schema_version'") == (str(SCHEMA_VERSION),)
    with duckdb.connect(str(db), read_only=True) as con:  # the file's own table and view, not a reader's stand-ins
        assert con.execute("SELECT count(*), max(rss_bytes) FROM observer").fetchall() == [(2, 100 << 20)]
        assert con.execute("SELECT max_rss_mib, cpu_share FROM observer_share").fetchall() == [(100.0, 0.5)]


def test_one_reading_of_labtuis_own_usage_has_no_share_yet(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, [started(), observed(3, 2.0, rss_mib=64)])
    assert run_sql(db, "SELECT samples, span_s, max_rss_mib, cpu_share, max_helper_rss_mib, helper_cpu_share "
                       "FROM observer_share").rows == [(1, 0.0, 64.0, None, 0.0, None)]


def test_deleting_a_session_deletes_its_observer_rows_and_no_others(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, [started("s1", pid=1), SessionEnded("s1", "completed"), observed(0, 1.0), observed(1, 2.0),
                       started("s2", pid=1), SessionEnded("s2", "completed"), observed(0, 1.0, session_id="s2")])
    assert delete_sessions(db, ["s1"])["observer"] == 2
    assert run_sql(db, "SELECT session_id, count(*) FROM observer GROUP BY ALL").rows == [("s2", 1)]


def test_a_crashed_session_ends_at_its_last_reading_of_labtuis_own_usage(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))
    db = tmp_path / "lab.duckdb"
    record_events(db, [started("dead", pid=_dead_pid()), result(1.0, 0, session_id="dead", ts=T0 + 30),
                       observed(45, 3.0, session_id="dead")])
    with StoreWriter.open(db) as writer:  # the next writer marks it
        assert writer.crashed == ["dead"]
    assert one(db, "SELECT status, epoch(ended_at) FROM sessions") == ("crashed", T0 + 45)
