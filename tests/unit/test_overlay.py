"""Readers read what a journal holds past its watermark, merged as the next feed would write it."""

from __future__ import annotations

from pathlib import Path

from store_events import T0, full_session, result, started

from labtui.core.events import SessionEnded, StepEnded, StepStarted
from labtui.store import StoreWriter, list_sessions, run_sql
from labtui.store.feed import feed
from labtui.store.journal import Journal, journal_paths, read_events
from labtui.store.overlay import behind_note


def one(db: Path, sql: str) -> tuple:
    return run_sql(db, sql).rows[0]


def test_a_running_sessions_journal_is_read_before_any_feed(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    StoreWriter.open(db).close()
    journal = Journal.create(db, "s1")  # held by this process: a live run, which no reader adopts
    try:
        for event in full_session()[:-1]:  # everything but its end
            journal.append(event)
        assert one(db, "SELECT status, (SELECT count(*) FROM results), (SELECT count(*) FROM steps), "
                       "(SELECT count(*) FROM resources), (SELECT count(*) FROM events) FROM sessions") == (
            "running", 1, 1, 1, 1)
        assert run_sql(db, "SELECT 1").from_journals == {"s1": 10}
        sessions = list_sessions(db)
        assert sessions.select("session_id", "status", "steps", "results", "in_store").rows() == [
            ("s1", "running", 1, 1, False)]
        assert journal_paths(db) == [journal.path] and len(read_events(journal.path, 0, 100)) == 10
    finally:
        journal.close()


def test_a_part_fed_journal_is_merged_by_key_and_nothing_counts_twice(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    writer = StoreWriter.open(db)
    journal = Journal.create(db, "s1")
    try:
        for event in (started(), StepStarted("s1", 1, 1, 2, 0, ts=T0 + 1), result(1.0, 0)):
            journal.append(event)
        feed(writer, [journal.path], wait=10)  # the store has these three rows and the watermark
        for event in (result(2.0, 0), StepEnded("s1", 1, 1, 0, ok=True, ts=T0 + 6),
                      SessionEnded("s1", "completed", "done", ts=T0 + 7)):
            journal.append(event)
        # the step's start comes from the store, its end from the journal; one row either way
        assert one(db, "SELECT count(*), any_value(epoch(started_at)), any_value(epoch(ended_at)), "
                       "bool_and(ok) FROM steps") == (1, T0 + 1, T0 + 6, True)
        assert one(db, "SELECT count(*), sum(value) FROM results") == (2, 3.0)
        assert one(db, "SELECT status, message, suite FROM sessions") == ("completed", "done", "boot")
        # the store's own views read the merged rows too
        assert one(db, "SELECT count(*) FROM results_by_step WHERE session_id = 's1'")[0] >= 1
        assert run_sql(db, "SELECT 1").from_journals == {"s1": 3}
        feed(writer, [journal.path], wait=10)
        assert run_sql(db, "SELECT 1").from_journals == {}
        assert one(db, "SELECT count(*), sum(value) FROM results") == (2, 3.0)
        assert list_sessions(db)["in_store"].to_list() == [True]
    finally:
        journal.close()
        writer.close()


def test_the_note_names_the_sessions_and_why_they_come_from_journals() -> None:
    assert behind_note(["b"]) == ("session b is read from the journal: the store has not caught up yet "
                                  "(another program holds it, or the run has not fed it yet)")
    assert behind_note(["d", "c", "b", "a"]).startswith("4 sessions (a, b, c, ...) are read from the journal")
