"""A cleanup whose store another program holds: the destroys are done and journalled, and the cleanup says
where they wait instead of failing (labtui.lifecycle.cleanup against the in-memory backend of
test_cleanup_selection, the store held by a second process as `duckdb` itself holds it)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_cleanup_selection import Shelf, dead_pid, inst, instance_rows, sid, started

from labtui.core.events import InstanceCreating, InstanceReady
from labtui.lifecycle import cleanup as cleanup_module
from labtui.lifecycle.cleanup import plan_cleanup, run_cleanup
from labtui.store import record_events
from labtui.store.feed import sync_store
from labtui.store.journal import journal_paths


@pytest.fixture(autouse=True)
def own_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))


@pytest.fixture
def holder() -> Iterator[list[subprocess.Popen]]:
    """Processes that hold a store (started by the test when it wants the store held); ended after it."""
    held: list[subprocess.Popen] = []
    yield held
    for process in held:
        process.kill()
        process.wait()


def hold(db: Path, held: list[subprocess.Popen]) -> None:
    process = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                                "print('held', flush=True); time.sleep(600)", str(db)], stdout=subprocess.PIPE)
    held.append(process)
    assert process.stdout is not None and process.stdout.readline() == b"held\n"


async def test_a_cleanup_of_a_held_store_destroys_journals_and_says_the_rows_wait(tmp_path, monkeypatch,
                                                                                   holder) -> None:
    monkeypatch.setattr(cleanup_module, "STORE_WAIT_S", 0.2)
    gone = sid()
    db = tmp_path / "held.duckdb"
    record_events(db, [started(gone, dead_pid()),
                       InstanceCreating(gone, "a", "local", "shelf", "background", f"labtui-{gone}-a"),
                       InstanceReady(gone, "a", created_at=1.0, ready_at=1.0, boot_s=0.0, state="running")])
    shelf = Shelf([inst(gone, "a")])
    plan = await plan_cleanup([shelf], db, session=gone, orphans=False)
    hold(db, holder)
    report = await run_cleanup(plan, db)
    assert report.destroyed == 1 and shelf.instances == []
    assert len(report.errors) == 1, report.errors
    assert report.errors[0].startswith("destroys not yet in the store: ")
    assert report.errors[0].endswith("(the next labtui command moves them in)")
    assert len(journal_paths(db)) == 1  # the destroys wait in the cleanup's journal
    holder[0].kill()
    holder[0].wait()
    sync_store(db, wait=10)
    assert instance_rows(db, gone) == {"a": ("cleaned", True)}
