"""A session's journal and its feed into the store: every event kept, each row landing exactly once."""

from __future__ import annotations

import asyncio
import math
import os
import re
import sqlite3
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
from store_events import T0, full_session, in_file, observed, result, started

from labtui.core.events import (
    InstanceCreating,
    InstanceDestroyed,
    InstanceDestroying,
    InstanceReady,
    Log,
    Result,
    SessionEnded,
)
from labtui.core.liveness import session_lock
from labtui.store import StoreError, StoreWriter, run_sql
from labtui.store import feed as feed_module
from labtui.store.feed import Synced, feed, sync_store
from labtui.store.journal import (
    Journal,
    adopted,
    decode,
    journal_dir,
    journal_paths,
    lock_path,
    pending,
    read_events,
)


def counts(db: Path) -> tuple:
    """Rows in the store file (the journals' rows are not counted until a feed moves them in)."""
    return in_file(db, "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM results), "
                       "(SELECT count(*) FROM resources), (SELECT count(*) FROM events), "
                       "(SELECT count(*) FROM steps), (SELECT count(*) FROM instances)")


def journal_of(db: Path, events: list) -> Journal:
    journal = Journal.create(db, "s1")
    for event in events:
        journal.append(event)
    return journal


def test_every_kind_of_event_comes_back_from_the_journal_as_it_went_in(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    events = [*full_session(), InstanceDestroying("s1", "i1", ts=5.0), observed(5, 1.25, helper_cpu_s=0.5)]
    journal = journal_of(db, events[:3])
    journal.append_all(events[3:])
    try:
        assert [event for _, event in read_events(journal.path, 0, 1000)] == events
        assert [seq for seq, _ in read_events(journal.path, 4, 1000)] == list(range(5, len(events) + 1))
    finally:
        journal.close()


def test_a_boot_time_that_was_not_measured_stays_nan(tmp_path: Path) -> None:
    journal = journal_of(tmp_path / "lab.duckdb", [InstanceReady("s1", "i1", 1.0, 2.0, float("nan"), "exited")])
    try:
        (_, event), = read_events(journal.path, 0, 10)
        assert isinstance(event, InstanceReady) and math.isnan(event.boot_s)
    finally:
        journal.close()


def test_a_journal_is_private_to_its_user(tmp_path: Path) -> None:
    journal = journal_of(tmp_path / "lab.duckdb", [started()])
    try:
        assert journal.path.parent.stat().st_mode & 0o777 == 0o700
        assert journal.path.stat().st_mode & 0o777 == 0o600
    finally:
        journal.close()


def test_a_feed_moves_each_row_once_however_often_it_runs(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    writer = StoreWriter.open(db)
    journal = journal_of(db, full_session())
    try:
        feed(writer, [journal.path], wait=10)
        feed(writer, [journal.path], wait=10)
        assert counts(db) == (1, 1, 1, 1, 1, 1)
        journal.append(result(2.0, 0))
        fed = feed(writer, [journal.path], wait=10)
        assert (fed.rows, fed.drained) == (1, [journal.path])
        assert counts(db) == (1, 2, 1, 1, 1, 1)
    finally:
        journal.close()


def test_a_feed_cut_short_commits_neither_its_rows_nor_its_watermark(tmp_path: Path, monkeypatch) -> None:
    """Rows and watermark go in one transaction: a failure between them must leave both out, or the
    next feed would skip rows (watermark without rows) or land them twice (rows without watermark)."""
    db = tmp_path / "lab.duckdb"
    writer = StoreWriter.open(db)
    journal = journal_of(db, full_session())

    def failing(key: str, seq: int):
        def fail(con) -> None:
            raise StoreError("the disk filled up between the rows and the watermark")
        return fail

    try:
        with monkeypatch.context() as patch:
            patch.setattr(feed_module, "_advance", failing)
            with pytest.raises(StoreError):
                feed(writer, [journal.path], wait=10)
        assert counts(db) == (0, 0, 0, 0, 0, 0)
        feed(writer, [journal.path], wait=10)
        assert counts(db) == (1, 1, 1, 1, 1, 1)
    finally:
        journal.close()


def test_a_journal_in_use_is_not_adopted_and_a_closed_one_is(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))
    db = tmp_path / "lab.duckdb"
    StoreWriter.open(db)
    journal = journal_of(db, [started(), result(1.0, 0)])
    with adopted(journal.path) as mine:
        assert not mine
    assert sync_store(db, wait=10).in_use == 1
    assert counts(db)[:2] == (0, 0)  # its writer still owns it
    journal.close()
    with session_lock("s1"):  # its controller lives on after closing the journal
        synced = sync_store(db, wait=10)
    assert (synced.journals, synced.rows, synced.crashed) == (1, 2, [])
    assert counts(db)[:2] == (1, 1)
    assert journal_paths(db) == []


def test_a_crashed_sessions_journal_is_moved_in_and_its_session_marked_crashed(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    StoreWriter.open(db)
    dead = _dead_pid()
    journal = journal_of(db, [started(pid=dead), result(1.0, 0)])
    journal.close()  # as the kernel does for a process killed with SIGKILL
    assert run_sql(db, "SELECT session_id, status FROM sessions").rows == [("s1", "crashed")]
    assert counts(db)[1] == 1
    assert journal_paths(db) == []


def test_readers_move_finished_journals_in_before_they_read(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    StoreWriter.open(db)
    journal_of(db, full_session()).close()
    assert run_sql(db, "SELECT status FROM sessions").rows == [("completed",)]
    assert counts(db) == (1, 1, 1, 1, 1, 1)


def test_results_are_fed_in_batches_without_losing_one(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(feed_module, "FEED_BATCH_ROWS", 7)
    db = tmp_path / "lab.duckdb"
    journal = journal_of(db, [started()])
    journal.append_all([replace(result(float(i), 0), value=float(i)) for i in range(30)])
    try:
        feed(StoreWriter.open(db), [journal.path], wait=10)
        assert run_sql(db, "SELECT count(*), sum(value) FROM results").rows == [(30, float(sum(range(30))))]
    finally:
        journal.close()


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


async def _until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


def test_a_result_row_carries_every_field_through_the_feed(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    row = Result("s1", 2, 3, 40, "local", "i9", "bench", "boot", 0.5, "s", "lower", ts=100.0, placement="alone", run=2)
    journal = journal_of(db, [started(), row])
    try:
        feed(StoreWriter.open(db), [journal.path], wait=10)
    finally:
        journal.close()
    assert run_sql(db, "SELECT repetition, step, background, instance_id, metric, value, placement, run "
                       "FROM results").rows == [(2, 3, 40, "i9", "boot", 0.5, "alone", 2)]


def test_labtuis_own_usage_goes_from_the_journal_through_the_feed_into_the_observer_table(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    journal = journal_of(db, [started(), observed(0, 2.0, 60, 0.5, 30), observed(10, 4.5, 90, 1.5, 20),
                              observed(20, 7.0, 70, 2.5, 25)])
    try:
        assert feed(StoreWriter.open(db), [journal.path], wait=10).rows == 4
    finally:
        journal.close()
    assert run_sql(db, "SELECT session_id, epoch(ts), rss_bytes, cpu_s, helper_rss_bytes, helper_cpu_s FROM observer "
                       "ORDER BY ts").rows == [
        ("s1", T0, 60 << 20, 2.0, 30 << 20, 0.5), ("s1", T0 + 10, 90 << 20, 4.5, 20 << 20, 1.5),
        ("s1", T0 + 20, 70 << 20, 7.0, 25 << 20, 2.5)]
    assert run_sql(db, "SELECT session_id, samples, span_s, max_rss_mib, cpu_share, max_helper_rss_mib, helper_cpu_share "
                       "FROM observer_share").rows == [("s1", 3, 20.0, 90.0, 0.25, 30.0, 0.1)]


async def test_a_journal_that_cannot_take_a_sample_still_ends_the_session_and_tears_down(runtime_dir: Path) -> None:
    """A full disk fails the sampler's record; its failure, raised again while the session ended, once skipped
    the teardown and the session's end, so the bus never closed and the run hung (CI's full-disk test)."""
    from labtui.backends.base import open_backend
    from labtui.core.events import ResourceSample, SessionEnded
    from labtui.engine import SessionRunner
    from labtui.hosts.local import LocalHost
    from labtui.suites import load_suite

    class NoRoomForSamples:
        def append(self, event) -> None:
            if isinstance(event, ResourceSample):
                raise StoreError("cannot append to the journal: database or disk is full")

        def append_all(self, events) -> None:
            pass

    # the session waits for a quiet host (recording nothing) while its sampler records: the sampler fails first
    suite = load_suite("boot-scaling", ["scale.steps=30", "scale.per_step=2", "suite.repetitions=1",
                                        "sampling.quiet_timeout_s=5", "sampling.settle_s=5", "sampling.interval_s=0.1"])
    backend = open_backend("process", LocalHost())
    runner = SessionRunner(suite, backend, LocalHost())
    runner.ctx.journal = NoRoomForSamples()
    events = runner.bus.subscribe()
    status = await asyncio.wait_for(runner.run(), 300)
    seen = []
    while (event := await asyncio.wait_for(events.get(), 60)) is not None:  # the bus closes
        seen.append(event)
    assert status == "failed" and isinstance(runner.ctx.lost, StoreError)
    assert isinstance(seen[-1], SessionEnded) and "disk is full" in seen[-1].message
    assert await backend.list(runner.session_id) == []


async def test_a_journal_that_fills_on_a_batchs_first_outcome_leaves_none_of_the_batch_running(
        runtime_dir: Path) -> None:
    """A full disk on the first InstanceReady of a batch of background instances once hid the rest of the batch
    from the teardown: created, never destroyed (CI's full-disk test left `ba102` running)."""
    from labtui.backends.base import open_backend
    from labtui.core.events import InstanceReady
    from labtui.engine import SessionRunner
    from labtui.hosts.local import LocalHost
    from labtui.suites import load_suite

    class FullAtTheFirstBackgroundOutcome:
        def append(self, event) -> None:
            if isinstance(event, InstanceReady) and event.instance_id.startswith("ba"):
                raise StoreError("cannot append to the journal: database or disk is full")

        def append_all(self, events) -> None:
            pass

    suite = load_suite("boot-scaling", ["scale.steps=2", "scale.per_step=4", "suite.repetitions=1",
                                        "sampling.quiet_timeout_s=0"])
    backend = open_backend("process", LocalHost())
    runner = SessionRunner(suite, backend, LocalHost())
    runner.ctx.journal = FullAtTheFirstBackgroundOutcome()
    status = await asyncio.wait_for(runner.run(), 300)
    assert status == "failed" and isinstance(runner.ctx.lost, StoreError)
    assert runner.ctx.live == []
    assert await backend.list(runner.session_id) == []  # all 4 of the batch were torn down


# --- appending: counts, failures, ownership ------------------------------------------------------------------


def test_the_journal_counts_the_rows_this_process_appended(tmp_path: Path) -> None:
    journal = journal_of(tmp_path / "lab.duckdb", [])
    try:
        assert journal.appended == 0
        journal.append(started())
        journal.append_all([result(1.0, 0), result(2.0, 0)])
        assert journal.appended == 3
    finally:
        journal.close()


def test_a_failed_batch_leaves_no_transaction_open_behind_it(tmp_path: Path) -> None:
    """append_all rolls back a batch that failed half-way: the next append is committed on its own."""
    journal = journal_of(tmp_path / "lab.duckdb", [])
    try:
        with pytest.raises(TypeError):
            journal.append_all([started(), object()])  # type: ignore[list-item]
        journal.append(result(1.0, 0))
        assert [type(event).__name__ for _, event in read_events(journal.path, 0, 10)] == ["Result"]
    finally:
        journal.close()


def test_a_journal_takes_appends_from_another_thread(tmp_path: Path) -> None:
    journal = journal_of(tmp_path / "lab.duckdb", [])
    try:
        worker = threading.Thread(target=journal.append, args=(started(),))
        worker.start()
        worker.join()
        assert [event for _, event in read_events(journal.path, 0, 10)] == [started()]
    finally:
        journal.close()


def test_an_append_that_sqlite_refuses_is_a_store_error_naming_the_journal(tmp_path: Path) -> None:
    journal = journal_of(tmp_path / "lab.duckdb", [started()])
    journal.close()
    with pytest.raises(StoreError, match=f"^cannot append to the journal {re.escape(str(journal.path))}: "):
        journal.append(result(1.0, 0))


def test_a_journal_that_cannot_be_created_is_a_store_error_saying_why(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    db = tmp_path / "file" / "lab.duckdb"
    with pytest.raises(StoreError) as failed:
        Journal.create(db, "s1")
    assert str(failed.value) == f"cannot create the journal {db}.journals/s1.sqlite: a file is in the way"


def test_a_session_journal_is_owned_by_one_writer_only(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    journal = journal_of(db, [])
    try:
        with pytest.raises(StoreError, match="^cannot create the journal .*s1.sqlite: "):
            Journal.create(db, "s1")
    finally:
        journal.close()


def test_the_lock_and_the_write_ahead_log_are_private_too(tmp_path: Path) -> None:
    journal = journal_of(tmp_path / "lab.duckdb", [started()])
    try:
        wal = journal.path.with_name(journal.path.name + "-wal")
        assert lock_path(journal.path).stat().st_mode & 0o777 == 0o600
        assert wal.exists() and wal.stat().st_mode & 0o777 == 0o600
    finally:
        journal.close()


def test_closing_twice_closes_nothing_else(tmp_path: Path) -> None:
    """The second close finds the lock already let go: it must not close a descriptor it no longer owns."""
    journal = journal_of(tmp_path / "lab.duckdb", [started()])
    journal.close()
    spare = [os.dup(0), os.dup(1)]
    try:
        journal.close(delete=True)
        for fd in (0, 1, 2, *spare):
            os.fstat(fd)  # still open
        assert journal.path.exists()  # a closed journal is no longer ours to delete
    finally:
        for fd in spare:
            os.close(fd)


# --- reading: missing and half-made journals -----------------------------------------------------------------


def test_reading_a_missing_journal_fails_and_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "gone.sqlite"
    with pytest.raises(sqlite3.Error):
        read_events(missing, 0, 10)
    assert list(tmp_path.iterdir()) == []


def test_a_journal_its_writer_is_still_creating_reads_as_empty(tmp_path: Path) -> None:
    half_made = tmp_path / "s1.sqlite"
    sqlite3.connect(half_made).close()  # the file exists, its table not yet
    assert read_events(half_made, 0, 10) == []


def test_a_journal_whose_lock_file_is_gone_is_not_adopted(tmp_path: Path) -> None:
    journal = journal_of(tmp_path / "lab.duckdb", [started()])
    journal.close()
    lock_path(journal.path).unlink()  # removed by whoever fed it last
    with adopted(journal.path) as mine:
        assert mine is False


# --- what the journals tell reconcile and cleanup (pending) --------------------------------------------------


def _journal(db: Path, session: str, events: list) -> Journal:
    journal = Journal.create(db, session)
    journal.append_all(events)
    return journal


def test_pending_follows_each_instance_row_from_its_intent_to_its_end(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    journal = _journal(db, "s1", [
        started(),
        InstanceCreating("s1", "i1", "hostA", "process", "probe", "probe-1"),
        InstanceCreating("s1", "i2", "hostB", "docker", "probe", "probe-2"),
        InstanceCreating("s1", "i3", "hostC", "process", "probe", "probe-3"),
        InstanceCreating("s1", "i4", "", "process", "probe", "probe-4"),
        InstanceReady("s1", "i1", 1.0, 2.0, 1.0, "running"),
        InstanceReady("s1", "i2", 1.0, 2.0, 1.0, "exited"),
        InstanceDestroying("s1", "i3"),
        InstanceReady("s1", "i9", 1.0, 2.0, 1.0, "running"),  # no intent journalled: no row to move on
        InstanceDestroying("s1", "i8"),
        InstanceDestroyed("s1", "i4"),
    ])
    try:
        found = pending(db)
    finally:
        journal.close()
    assert found.statuses == {"s1": "running"}
    assert found.open_rows == {("s1", "i1"): ("hostA", "process", "running"),
                               ("s1", "i3"): ("hostC", "process", "destroying")}
    assert found.recorded == {("s1", "i1"), ("s1", "i2"), ("s1", "i3"), ("s1", "i4")}
    assert found.closed == {("s1", "i4")}
    assert found.hosts == {"hostA", "hostC"}
    assert found.crashed == set()  # its writer holds the journal


def test_pending_calls_a_session_crashed_only_when_its_writer_is_gone_before_its_end(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    _journal(db, "s1", [started("s1")]).close()  # the writer died before the end
    _journal(db, "s2", [started("s2"), SessionEnded("s2", "completed")]).close()
    _journal(db, "s3", [SessionEnded("s3", "failed")]).close()  # its start in no journal: not this one's session
    live = _journal(db, "s4", [started("s4")])
    try:
        found = pending(db)
    finally:
        live.close()
    assert found.statuses == {"s1": "running", "s2": "completed", "s3": "failed", "s4": "running"}
    assert found.crashed == {"s1"}


def test_pending_skips_journals_it_cannot_read_and_reads_the_others(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    _journal(db, "s1", [started("s1")]).close()
    unknown = _journal(db, "s2", [started("s2")])
    unknown.close()
    con = sqlite3.connect(unknown.path)
    con.execute("INSERT INTO events (kind, body) VALUES ('SessionEnded', '{\"ended\": 1}')")  # its fields missing
    con.commit()
    con.close()
    (journal_dir(db) / "s3.sqlite").write_text("not a database")
    sqlite3.connect(journal_dir(db) / "s4.sqlite").close()  # a journal being created
    assert set(pending(db).statuses) == {"s1"}


def test_a_feed_of_a_journal_it_cannot_read_is_a_store_error_naming_it(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    journal = journal_of(db, [started()])
    try:
        con = sqlite3.connect(journal.path)
        con.execute("INSERT INTO events (kind, body) VALUES ('NoSuchEvent', '{}')")
        con.commit()
        con.close()
        with pytest.raises(StoreError, match=f"^cannot read the journal {re.escape(str(journal.path))}: "):
            feed(StoreWriter.open(db), [journal.path], wait=10)
    finally:
        journal.close()


def test_a_sync_counts_what_it_moved_and_the_journals_left_to_their_writers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))
    db = tmp_path / "lab.duckdb"
    StoreWriter.open(db)
    assert sync_store(db, wait=10) == Synced(0, 0, [], 0)
    live = _journal(db, "s1", [started("s1")])
    try:
        assert sync_store(db, wait=10) == Synced(0, 0, [], 1)
        _journal(db, "s2", [started("s2"), result(1.0, 0, session_id="s2"), SessionEnded("s2", "completed")]).close()
        assert sync_store(db, wait=10) == Synced(1, 2, [], 1)  # its session row (started, then ended) and result
    finally:
        live.close()


def test_a_log_line_journalled_before_category_was_named_so_is_read_back() -> None:
    """A journal left by a crash under an older labtui holds Log bodies with `kind`: they decode as `category`."""
    body = '{"session_id": "s1", "level": "info", "kind": "teardown", "message": "bye", "ts": 1.0}'
    assert decode("Log", body) == Log("s1", "info", "teardown", "bye", ts=1.0)
