"""One store, many processes: readers see a run's rows as it flushes, and two writers share the file.

Every wait here is for a condition, with a generous timeout; nothing asserts how fast.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest

from labtui.store import StoreWriter, list_sessions, run_sql

REPO = Path(__file__).resolve().parents[2]
WAIT_S = 240.0

#: A run's recording in its own process, as LabRun does it (a journal and its feeder): SessionStarted,
#: then `steps` steps of `per_step` results each (StepEnded feeds each), `pause` seconds apart (or,
#: when `pause` < 0, each after a line on stdin), then SessionEnded.  Prints "ready" once open.
WRITER = """
import asyncio, os, sys, time
from pathlib import Path
from labtui.core.events import Result, SessionEnded, SessionStarted, StepEnded, StepStarted
from labtui.engine.quiet import QuietWindows
from labtui.session.feeder import StoreFeeder
from labtui.session.store_process import StoreProcess
from labtui.store.journal import Journal

db, sid = Path(sys.argv[1]), sys.argv[2]
steps, per_step, pause = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])

async def main():
    store = await StoreProcess.start()
    await store.open(db, 5.0)
    journal = Journal.create(db, sid)
    feeder = StoreFeeder(store, db, [journal], lambda level, text: print(text, file=sys.stderr), QuietWindows())
    print("ready", flush=True)
    queue = asyncio.Queue()
    task = asyncio.create_task(feeder.run(queue))

    def record(event):
        journal.append(event)
        queue.put_nowait(event)

    record(SessionStarted(sid, "boot", "scaling", "process", "local", {}, os.getpid()))
    for step in range(steps):
        record(StepStarted(sid, 1, step, steps, step))
        for i in range(per_step):
            record(Result(sid, 1, step, step, "local", f"i{i}", "b", "m", float(i), "s", "lower"))
        record(StepEnded(sid, 1, step, step))
        if pause < 0:  # step by step: the test says when to go on
            await asyncio.to_thread(sys.stdin.readline)
        else:
            await asyncio.sleep(pause)
    record(SessionEnded(sid, "completed", "done"))
    queue.put_nowait(None)
    await task
    await store.close()
    print("done", flush=True)

asyncio.run(main())
"""


def _spawn(db: Path, sid: str, steps: int, per_step: int, pause: float) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), sid, str(steps), str(per_step), str(pause)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )


def _ready(proc: subprocess.Popen[str]) -> subprocess.Popen[str]:
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line == "ready", proc.stderr.read() if proc.stderr else line
    return proc


def _writer(db: Path, sid: str, steps: int, per_step: int, pause: float) -> subprocess.Popen[str]:
    return _ready(_spawn(db, sid, steps, per_step, pause))


def _finish(proc: subprocess.Popen[str]) -> None:
    """Wait for the writer, then read what it printed through the reader `_ready` used: communicate() reads the
    pipe itself and would miss a "done" that reader had already buffered with "ready"."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.close()
    proc.wait(timeout=WAIT_S)
    out, err = proc.stdout.read(), proc.stderr.read()
    assert proc.returncode == 0 and out.strip() == "done", err


def _count(db: Path, sql: str = "SELECT count(*) FROM results") -> int:
    return run_sql(db, sql).rows[0][0]


def test_another_process_sees_a_growing_count_while_a_run_writes(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    steps, per_step = 5, 20
    writer = _writer(db, "w1", steps, per_step, pause=-1)  # waits for a line after each step
    assert writer.stdin is not None
    try:
        for step in range(1, steps + 1):
            # this test process is the other process; the run is alive, waiting to go on
            deadline = time.monotonic() + WAIT_S
            while (count := _count(db)) < step * per_step:
                assert time.monotonic() < deadline, f"step {step}: still {count} results"
                time.sleep(0.02)
            assert count == step * per_step and writer.poll() is None
            assert list_sessions(db)["status"].to_list() == ["running"]
            writer.stdin.write("go\n")
            writer.stdin.flush()
    finally:
        _finish(writer)
    assert _count(db) == steps * per_step
    assert run_sql(db, "SELECT status FROM sessions").rows == [("completed",)]


def test_two_writers_into_one_store_both_complete(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    steps, per_step = 15, 50
    # both create the store at the same moment: one file, both writers use it
    writers = [_ready(w) for w in [_spawn(db, f"w{n}", steps, per_step, pause=0.0) for n in (1, 2)]]
    try:
        deadline = time.monotonic() + WAIT_S
        while any(w.poll() is None for w in writers):
            assert time.monotonic() < deadline
            _count(db)  # and a reader in between, all along
            time.sleep(0.02)
    finally:
        for w in writers:
            _finish(w)
    rows = run_sql(db, "SELECT session_id, count(*) FROM results GROUP BY 1 ORDER BY 1").rows
    assert rows == [("w1", steps * per_step), ("w2", steps * per_step)]
    assert run_sql(db, "SELECT session_id, status FROM sessions ORDER BY 1").rows == [
        ("w1", "completed"), ("w2", "completed")]
    assert run_sql(db, "SELECT count(*), count(ended_at) FROM steps").rows == [(2 * steps, 2 * steps)]


# --- the same through `labtui run` ------------------------------------------------------------

RUN = ["run", "boot-scaling", "--set", "scale.steps=4", "--set", "scale.per_step=2",
       "--set", "suite.repetitions=2"]
RESULTS_PER_RUN = 2 * 5 * 5  # 5 boot_times (worker.runs) per step (baseline + 4) of each repetition


def _labtui(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return cli_run.labtui(*args, env=env, cwd=REPO, timeout=WAIT_S)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="needs a C compiler")
def test_two_labtui_runs_into_one_store_while_another_process_reads(tmp_path: Path) -> None:
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "200"}
    db = tmp_path / "lab.duckdb"
    _labtui("backends", env=env)  # builds nothing; warms imports so both runs start together
    runs = [
        subprocess.Popen([sys.executable, "-m", "labtui", *RUN, "--db", str(db)], env=env, cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    counts: list[int] = []
    running: set[int] = set()
    try:
        deadline = time.monotonic() + WAIT_S
        while any(r.poll() is None for r in runs):
            assert time.monotonic() < deadline, "the runs did not finish"
            if db.exists():
                out = _labtui("sql", "SELECT (SELECT count(*) FROM results), "
                              "(SELECT count(*) FROM sessions WHERE status = 'running')",
                              "--db", str(db), "--format", "csv", env=env)
                assert out.returncode == 0, out.stderr  # never locked out
                count, live = (int(v) for v in out.stdout.strip().splitlines()[-1].split(","))
                counts.append(count)
                running.add(live)
    finally:
        outputs = [r.communicate(timeout=WAIT_S) for r in runs]
    for run, (_, err) in zip(runs, outputs):
        assert run.returncode == 0, err
    rows = run_sql(db, "SELECT status, (SELECT count(*) FROM results r WHERE r.session_id = s.session_id "
                       "AND metric = 'boot_time') FROM sessions s").rows
    assert rows == [("completed", RESULTS_PER_RUN)] * 2
    assert counts == sorted(counts) and len(set(counts)) >= 2, counts
    assert running & {1, 2}, running


def test_readers_and_the_writer_in_one_process_take_turns(tmp_path: Path) -> None:
    """The console: its run's writer flushes in a thread while its views read in others."""
    import threading

    from labtui.core.events import Result, SessionStarted

    db = tmp_path / "lab.duckdb"
    writer = StoreWriter.open(db)
    writer.add(SessionStarted("c1", "boot", "scaling", "process", "local", {}, os.getpid()))
    writer.flush()
    errors: list[BaseException] = []
    counts: list[int] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                counts.append(_count(db))
        except BaseException as exc:  # StoreError, duckdb.Error, ...: reported by the main thread
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for thread in readers:
        thread.start()
    try:
        for step in range(30):
            for i in range(10):
                writer.add(Result("c1", 1, step, 0, "local", f"i{i}", "b", "m", 1.0, "s", "lower"))
            writer.flush()
    finally:
        done.set()
        for thread in readers:
            thread.join(WAIT_S)
    assert not errors, errors
    assert _count(db) == 300
    assert counts, 'the readers never got in'
