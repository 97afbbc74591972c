"""The feed from the store's own process: when it runs, and that it keeps out of every quiet window."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
from store_events import in_file, result, started

from labtui.core.events import StepEnded
from labtui.engine.quiet import Observer, QuietWindows
from labtui.session import feeder as feeder_module
from labtui.session.feeder import StoreFeeder
from labtui.session.store_child import NICENESS
from labtui.session.store_process import StoreProcess
from labtui.store import StoreWriter, run_sql
from labtui.store.errors import StoreBusy
from labtui.store.journal import Journal, journal_paths


def results_in(db: Path) -> int:
    return int(in_file(db, "SELECT count(*) FROM results")[0])


async def _until(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.05)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[StoreProcess]:
    process = await StoreProcess.start()
    try:
        assert await process.open(tmp_path / "lab.duckdb", 5.0) is None
        yield process
    finally:
        await process.close()


def journal_in(tmp_path: Path) -> Journal:
    return Journal.create(tmp_path / "lab.duckdb", "s1")


async def test_the_feeder_feeds_at_a_step_end_without_waiting_for_its_timer(tmp_path: Path, monkeypatch,
                                                                             store: StoreProcess) -> None:
    monkeypatch.setattr(feeder_module, "FEED_INTERVAL_S", 3600.0)
    db = tmp_path / "lab.duckdb"
    journal = journal_in(tmp_path)
    feeder = StoreFeeder(store, db, [journal], lambda level, text: None, QuietWindows())
    events: asyncio.Queue = asyncio.Queue()
    task = asyncio.create_task(feeder.run(events))
    for event in (started(), result(1.0, 0)):
        journal.append(event)
        events.put_nowait(event)
    await _until(lambda: results_in(db) == 1)  # SessionStarted is due at once
    journal.append(result(2.0, 0))
    events.put_nowait(result(2.0, 0))
    await asyncio.sleep(0.5)
    assert results_in(db) == 1  # a result alone waits for the timer (an hour)
    end = StepEnded("s1", repetition=1, step=1, background=0)
    journal.append(end)
    events.put_nowait(end)
    await _until(lambda: results_in(db) == 2)
    events.put_nowait(None)
    await asyncio.wait_for(task, 60)
    assert not journal.path.exists()  # drained by the last feed, then deleted
    assert feeder.left_in_journals is None


async def test_no_feed_starts_while_a_window_is_open_and_one_due_starts_as_it_closes(
        tmp_path: Path, store: StoreProcess) -> None:
    db = tmp_path / "lab.duckdb"
    journal = journal_in(tmp_path)
    quiet = QuietWindows()
    feeder = StoreFeeder(store, db, [journal], lambda level, text: None, quiet)
    events: asyncio.Queue = asyncio.Queue()
    task = asyncio.create_task(feeder.run(events))
    async with quiet.window():
        for event in (started(), result(1.0, 0), StepEnded("s1", repetition=1, step=1, background=0)):
            journal.append(event)
            events.put_nowait(event)
        await asyncio.sleep(1.0)
        assert await asyncio.to_thread(results_in, db) == 0  # due, but the window holds it
    await _until(lambda: results_in(db) == 1)  # the window closed: the feed that came due runs
    events.put_nowait(None)
    await asyncio.wait_for(task, 60)


async def test_a_window_waits_for_a_feed_under_way_and_pauses_one_that_runs_on(tmp_path: Path, monkeypatch,
                                                                              store: StoreProcess) -> None:
    db = tmp_path / "lab.duckdb"
    quiet = QuietWindows()
    feeder = StoreFeeder(store, db, [journal_in(tmp_path)], lambda level, text: None, quiet)
    release = asyncio.Event()

    async def slow_feed(wait: float) -> list[Path]:
        await release.wait()
        return []

    monkeypatch.setattr(feeder_module, "HOLD_WAIT_S", 0.2)
    feeder._feeding = asyncio.ensure_future(slow_feed(0.0))
    began = time.monotonic()
    async with quiet.window():
        assert time.monotonic() - began >= 0.2  # it waited for the feed first ...
        await _until(lambda: _state(store.pid) == "T", 5)  # ... then stopped the store's process for the window
    await _until(lambda: _state(store.pid) != "T", 5)
    release.set()
    await feeder._feeding


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


async def test_the_store_process_yields_once_the_store_is_open(tmp_path: Path) -> None:
    process = await StoreProcess.start()
    try:
        assert os.getpriority(os.PRIO_PROCESS, process.pid) == os.getpriority(os.PRIO_PROCESS, 0)
        await process.open(tmp_path / "lab.duckdb", 5.0)
        assert os.getpriority(os.PRIO_PROCESS, process.pid) == NICENESS
    finally:
        await process.close()


def test_the_store_process_ends_when_its_parent_is_killed_even_while_paused(tmp_path: Path) -> None:
    script = (
        "import asyncio, os, signal, sys\n"
        "from labtui.session.store_process import StoreProcess\n"
        "async def main():\n"
        "    p = await StoreProcess.start()\n"
        "    await p.open(__import__('pathlib').Path(sys.argv[1]), 5.0)\n"
        "    p.pause()\n"
        "    print(p.pid, flush=True)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "asyncio.run(main())\n"
    )
    parent = subprocess.run([sys.executable, "-c", script, str(tmp_path / "lab.duckdb")], capture_output=True,
                            text=True, timeout=60)
    child = int(parent.stdout.split()[0])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and _state(child) != "Z":
        assert time.monotonic() < deadline, f"store process {child} outlived its parent ({_state(child)})"
        time.sleep(0.05)


async def test_a_store_error_in_the_child_is_raised_in_the_parent_without_duckdb(tmp_path: Path) -> None:
    not_a_store = tmp_path / "notes.duckdb"
    not_a_store.write_text("hello")
    process = await StoreProcess.start()
    try:
        with pytest.raises(Exception) as caught:
            await process.open(not_a_store, 1.0)
        assert "notes.duckdb" in str(caught.value) and type(caught.value).__module__.startswith("labtui.")
    finally:
        await process.close()


async def test_a_feeder_whose_store_is_held_leaves_the_rows_in_the_journal_and_says_where(
    tmp_path: Path, monkeypatch, store: StoreProcess
) -> None:
    monkeypatch.setattr(feeder_module, "FINAL_FEED_WAIT_S", 0.2)
    db = tmp_path / "lab.duckdb"
    journal = journal_in(tmp_path)
    for event in (started(), replace(result(1.0, 0), value=3.0)):
        journal.append(event)
    said: list[tuple[str, str]] = []
    feeder = StoreFeeder(store, db, [journal], lambda level, text: said.append((level, text)), QuietWindows())
    events: asyncio.Queue = asyncio.Queue()
    holder = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); "
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


async def test_a_store_held_at_the_start_is_a_notice_not_a_refusal(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    StoreWriter.open(db)
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(3600)", str(db)], stdout=subprocess.PIPE)
    process = await StoreProcess.start()
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        notice = await process.open(db, 0.2)
        assert notice is not None and "catches up once it is free" in notice
        with pytest.raises(StoreBusy):
            await process.feed([], 0.2)
    finally:
        holder.kill()
        holder.wait()
        await process.close()


async def test_windows_of_several_sessions_hold_once_and_release_after_the_last() -> None:
    quiet = QuietWindows()
    calls: list[str] = []

    async def hold() -> None:
        calls.append("hold")
        await asyncio.sleep(0.05)

    quiet.observe(Observer(hold, lambda: calls.append("release")))

    async def measure(seconds: float) -> None:
        async with quiet.window():
            calls.append("in")
            await asyncio.sleep(seconds)

    await asyncio.gather(measure(0.1), measure(0.2))
    assert calls == ["hold", "in", "in", "release"]
    assert not quiet.is_open and quiet.opened == 2
