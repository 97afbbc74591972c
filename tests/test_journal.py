"""A session's journal and its feed into the store: every event kept, each row landing exactly once."""

from __future__ import annotations

import asyncio
import math
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from test_store import full_session, result, started

from labtui.core.events import InstanceDestroying, InstanceReady, Result, StepEnded
from labtui.core.liveness import session_lock
from labtui.session import feeder as feeder_module
from labtui.session.feeder import StoreFeeder
from labtui.store import StoreError, StoreWriter, run_sql
from labtui.store import feed as feed_module
from labtui.store.feed import feed, sync_store
from labtui.store.journal import Journal, adopted, journal_paths, read_events


def counts(db: Path) -> tuple:
    return run_sql(db, "SELECT (SELECT count(*) FROM sessions), (SELECT count(*) FROM results), "
                       "(SELECT count(*) FROM resources), (SELECT count(*) FROM events), "
                       "(SELECT count(*) FROM steps), (SELECT count(*) FROM instances)").rows[0]


def journal_of(db: Path, events: list) -> Journal:
    journal = Journal.create(db, "s1")
    for event in events:
        journal.append(event)
    return journal


def test_every_kind_of_event_comes_back_from_the_journal_as_it_went_in(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    events = [*full_session(), InstanceDestroying("s1", "i1", ts=5.0)]
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


async def test_the_feeder_feeds_at_a_step_end_without_waiting_for_its_timer(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(feeder_module, "FEED_INTERVAL_S", 3600.0)
    db = tmp_path / "lab.duckdb"
    journal = journal_of(db, [])
    feeder = StoreFeeder(StoreWriter.open(db), [journal], lambda level, text: None)
    events: asyncio.Queue = asyncio.Queue()
    task = asyncio.create_task(feeder.run(events))
    for event in (started(), result(1.0, 0)):
        journal.append(event)
        events.put_nowait(event)
    await _until(lambda: counts(db)[0] == 1)  # SessionStarted is due at once
    journal.append(result(2.0, 0))
    events.put_nowait(result(2.0, 0))
    await asyncio.sleep(0.5)
    assert counts(db)[1] == 1  # a result alone waits for the timer (an hour)
    end = StepEnded("s1", repetition=1, step=1, background=0)
    journal.append(end)
    events.put_nowait(end)
    await _until(lambda: counts(db)[1] == 2)
    events.put_nowait(None)
    await asyncio.wait_for(task, 60)
    assert not journal.path.exists()  # drained by the last feed, then deleted
    assert feeder.left_in_journals is None


async def test_a_feeder_whose_store_is_held_leaves_the_rows_in_the_journal_and_says_where(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setattr(feeder_module, "FINAL_FEED_WAIT_S", 0.2)
    db = tmp_path / "lab.duckdb"
    StoreWriter.open(db)
    journal = journal_of(db, [started(), replace(result(1.0, 0), value=3.0)])
    said: list[tuple[str, str]] = []
    feeder = StoreFeeder(StoreWriter(db, []), [journal], lambda level, text: said.append((level, text)))
    events: asyncio.Queue = asyncio.Queue()
    holder = await asyncio.create_subprocess_exec(
        "python", "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
        "time.sleep(3600)", str(db), stdout=asyncio.subprocess.PIPE)
    try:
        assert holder.stdout is not None and await holder.stdout.readline() == b"held\n"
        events.put_nowait(None)
        await asyncio.wait_for(feeder.run(events), 60)
        assert feeder.left_in_journals is not None and "labtui store sync" in feeder.left_in_journals
        assert said[-1] == ("warning", feeder.left_in_journals)
        assert journal.path.exists()
    finally:
        holder.kill()
        await holder.wait()
    assert run_sql(db, "SELECT value FROM results").rows == [(3.0,)]  # the reader moved it in
    assert journal_paths(db) == []


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
