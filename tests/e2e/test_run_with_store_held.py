"""Another program holds the store (a notebook, the DuckDB CLI, Harlequin): a run goes on regardless.

A real `labtui run` records into its journal while a plain `duckdb.connect(path, read_only=True)` in
another process holds the store for longer than the run.  The run exits with its usual status and
says in one line where its rows are; once the holder lets go, the next labtui command moves every
row in, exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import cli_run
import pytest

from labtui.store.journal import journal_paths, read_events

pytestmark = pytest.mark.slow

RUN = ["boot-scaling", "--set", "scale.steps=10", "--set", "suite.repetitions=1"]
#: Longer than a run: 60 s was how long a run once waited for each flush before it failed and spun.
HOLD_S = 90.0


def labtui(*args: str, db: Path, **kwargs) -> subprocess.CompletedProcess:
    return cli_run.labtui("--db", str(db), *args, env={**os.environ, "COLUMNS": "200"}, timeout=600, **kwargs)


def hold(db: Path, seconds: float) -> subprocess.Popen:
    """Another process holding the store read-only, as a notebook does; returns once it holds it."""
    # a notebook's connect fails while the run's feeder writes a step into the store; the user tries again
    holder = subprocess.Popen([sys.executable, "-c", """
import duckdb, sys, time
deadline = time.monotonic() + 30
while True:
    try:
        con = duckdb.connect(sys.argv[1], read_only=True)
        break
    except duckdb.IOException:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.05)
print('held', flush=True)
time.sleep(float(sys.argv[2]))
""", str(db), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def journalled(db: Path) -> Counter:
    """What the run's journals hold, by kind (results, steps, instances), before the store has them."""
    kinds: Counter = Counter()
    for path in journal_paths(db):
        for _, event in read_events(path, 0, 10**9):
            kinds[type(event).__name__] += 1
    return kinds


def stored(db: Path, session: str) -> tuple:
    out = labtui("sql", "--format", "json",
                 "SELECT (SELECT count(*) FROM results WHERE session_id = '{0}') AS results, "
                 "(SELECT count(*) FROM steps WHERE session_id = '{0}') AS steps, "
                 "(SELECT count(*) FROM instances WHERE session_id = '{0}') AS instances, "
                 "(SELECT status FROM sessions WHERE session_id = '{0}') AS status, "
                 "(SELECT count(*) FROM instances WHERE session_id = '{0}' AND destroyed_at IS NULL "
                 "AND state <> 'exited') AS open".format(session), db=db)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)[0]
    return row["results"], row["steps"], row["instances"], row["status"], row["open"]


def session_of(stderr: str) -> str:
    return stderr.split("session ")[1].split()[0]


@pytest.fixture
def db(tmp_path: Path, runtime_dir: Path) -> Path:
    """A store that exists (another program can only hold a file that is there)."""
    path = tmp_path / "lab.duckdb"
    first = labtui("run", "boot-scaling", "--profile", "quick", db=path)
    assert first.returncode == 0, first.stderr
    return path


def test_a_run_completes_while_another_program_holds_the_store_and_every_row_lands_once(db: Path) -> None:
    holder = hold(db, HOLD_S)
    try:
        run = labtui("run", *RUN, db=db)
        assert holder.poll() is None, "the holder let go before the run ended: the test proves nothing"
        assert run.returncode == 0, run.stderr
        assert "labtui store sync" in run.stderr and f"{db.name}.journals" in run.stderr
        kinds = journalled(db)
        session = session_of(run.stderr)
        assert "boot_time" in run.stdout, "the run's table is drawn from its journal: " + run.stdout
        # labtui's readers read the journal while the store is held, and say so
        listed = labtui("sessions", "--format", "json", db=db)
        assert listed.returncode == 0, listed.stderr
        mine = [s for s in json.loads(listed.stdout) if s["session_id"] == session]
        assert [(s["status"], s["steps"], s["in_store"]) for s in mine] == [("completed", 11, False)]
        assert f"session {session} is read from the journal" in listed.stderr
        shown = labtui("sessions", db=db)
        assert "completed*" in shown.stdout and "not caught up" in shown.stderr
        counted = labtui("sql", "--format", "json", f"SELECT count(*) AS n FROM steps WHERE session_id = '{session}'", db=db)
        assert counted.returncode == 0 and json.loads(counted.stdout) == [{"n": 11}], counted.stderr
        assert "not caught up" in counted.stderr
        assert journalled(db) == kinds, "a reader moved or changed the journal while the store was held"
    finally:
        holder.kill()
        holder.wait()
    results, steps, instances, status, still_open = stored(db, session)  # this command moves the journal in
    assert (results, steps, status, still_open) == (kinds["Result"], 11, "completed", 0)
    assert instances == kinds["InstanceCreating"]
    assert journal_paths(db) == []
    assert stored(db, session)[:3] == (results, steps, instances)  # a second reader moves nothing twice


def test_a_store_held_from_mid_run_delays_only_the_store(db: Path) -> None:
    run = subprocess.Popen([sys.executable, "-m", "labtui", "--db", str(db), "run", *RUN], stderr=subprocess.PIPE,
                           stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 120
    while not journal_paths(db):
        assert run.poll() is None and time.monotonic() < deadline, "the run never started its journal"
        time.sleep(0.05)
    holder = hold(db, 3600)
    try:
        _, err = run.communicate(timeout=600)
        assert run.returncode == 0, err
        sync = labtui("store", "sync", "--wait", "1", db=db)
        assert sync.returncode == 2 and "in use by" in sync.stderr  # still held: nothing moved, nothing lost
    finally:
        holder.kill()
        holder.wait()
    sync = labtui("store", "sync", db=db)
    assert sync.returncode == 0 and sync.stdout.startswith("1 journal(s)"), sync.stdout + sync.stderr
    results, steps, _, status, still_open = stored(db, session_of(err))
    assert (steps, status, still_open) == (11, "completed", 0) and results > 0


def test_sigterm_while_the_store_is_held_tears_down_and_the_rows_land_later(db: Path) -> None:
    holder = hold(db, 3600)
    try:
        run = subprocess.Popen([sys.executable, "-m", "labtui", "--db", str(db), "run", *RUN,
                                "--set", "scale.steps=40"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        deadline = time.monotonic() + 120
        while journalled(db)["StepEnded"] < 2:
            assert run.poll() is None and time.monotonic() < deadline, "the run never reached its second step"
            time.sleep(0.1)
        run.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        _, err = run.communicate(timeout=120)
        ended_after = time.monotonic() - signalled
        assert run.returncode == 128 + signal.SIGTERM, err
        assert "labtui store sync" in err
    finally:
        holder.kill()
        holder.wait()
    session = session_of(err)
    _, _, instances, status, still_open = stored(db, session)
    assert (status, still_open) == ("aborted", 0) and instances > 0, f"ended {ended_after:.1f} s after SIGTERM"
    left = labtui("instances", "--session", session, "--format", "json", db=db)
    assert json.loads(left.stdout) == []
