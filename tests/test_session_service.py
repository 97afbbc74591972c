"""The session service, headless: every stop signal tears a run down cleanly and records why.

A real `labtui run` on the process backend is interrupted at a random moment
(often while a batch of instances is being created).  Afterwards, with no
cleanup command run: no instance of the session exists, no instance row is
open, and the session's end names the signal.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from labtui.backends.base import open_backend
from labtui.engine import plan_for
from labtui.hosts.local import LocalHost
from labtui.session import LabRun, RunRefused, RunRequest
from labtui.suites import list_suites, load_suite

#: Big batches, so that a signal often lands while one is being created.
BATCHY = ["--set", "scale.steps=6", "--set", "scale.per_step=25", "--set", "suite.repetitions=1",
          "--set", "sampling.quiet_timeout_s=0"]
#: (first signal, second signal or None); each schedule runs twice at random moments.
SCHEDULES = [(signal.SIGINT, None), (signal.SIGTERM, None), (signal.SIGHUP, None), (signal.SIGINT, signal.SIGINT),
             (signal.SIGTERM, signal.SIGINT)]


def _open_store(db: Path):
    deadline = time.monotonic() + 60
    while True:
        try:
            return duckdb.connect(str(db), read_only=True)
        except duckdb.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _session(db: Path) -> tuple[str, str, str] | None:
    if not db.exists():
        return None
    with _open_store(db) as con:
        row = con.execute("select session_id, status, coalesce(message, '') from sessions").fetchone()
    return row


def _open_rows(db: Path, session: str) -> list[tuple]:
    with _open_store(db) as con:
        return con.execute("select instance_id, state from instances where session_id = ? "
                           "and destroyed_at is null and state <> 'exited'", [session]).fetchall()


@pytest.mark.slow
@pytest.mark.parametrize("first,second", SCHEDULES, ids=lambda s: getattr(s, "name", "none"))
@pytest.mark.parametrize("round_", [0, 1])
def test_a_signal_at_a_random_moment_tears_down_and_names_itself(
    first: signal.Signals, second: signal.Signals | None, round_: int, tmp_path: Path, runtime_dir: Path
) -> None:
    db = tmp_path / "lab.duckdb"
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "labtui", "run", "boot-scaling", *BATCHY, "--db", str(db)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while _session(db) is None:  # the session has started (its row is committed)
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the session never started"
        time.sleep(0.1)
    time.sleep(random.uniform(0.0, 3.0))
    proc.send_signal(first)
    if second is not None:
        time.sleep(random.uniform(0.05, 0.5))
        if proc.poll() is None:
            proc.send_signal(second)
    out, err = proc.communicate(timeout=300)
    session, status, message = _session(db)
    assert status in ("aborted", "completed"), (status, message, err)
    if status == "aborted":
        assert proc.returncode == 130, err
        assert message == f"aborted by {first.name}", (message, err)
    assert asyncio.run(open_backend("process", LocalHost()).list(session)) == [], err
    assert _open_rows(db, session) == [], err


def test_an_unknown_host_is_refused_before_anything_starts(tmp_path: Path) -> None:
    lab = LabRun(RunRequest(load_suite("boot-scaling"), tmp_path / "lab.duckdb", ("nowhere",)))
    with pytest.raises(RunRefused, match="unknown host 'nowhere'"):
        lab.prepare()
    assert not (tmp_path / "lab.duckdb").exists()


def test_every_built_in_suite_has_a_plan_of_its_own_kind() -> None:
    for info in list_suites():
        suite = load_suite(info.name, (), "quick")
        plan = plan_for(suite)
        assert plan.kind == suite.kind and plan.repetitions == suite.repetitions
        assert plan.steps_per_repetition == suite.steps_per_repetition(), info.name
        assert plan.next_step(plan.repetitions, plan.steps_per_repetition - 1) == "end of the run: teardown"


async def test_hosts_are_closed_and_outcomes_returned(tmp_path: Path, runtime_dir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[str] = []
    real_close = LocalHost.close

    async def close(self) -> None:
        closed.append(self.name)
        await real_close(self)

    monkeypatch.setattr(LocalHost, "close", close)
    suite = load_suite("boot-scaling", ["scale.steps=1", "scale.per_step=2", "sampling.quiet_timeout_s=0"], "quick")
    lab = LabRun(RunRequest(suite, tmp_path / "lab.duckdb"))
    (outcome,) = await lab.run()
    assert outcome.status == "completed" and outcome.host == "local"
    assert closed == ["local"]
    assert lab.left_running() == []


async def test_an_abort_while_waiting_at_the_gate_records_the_reason(tmp_path: Path, runtime_dir: Path) -> None:
    suite = load_suite("boot-scaling", ["scale.steps=3", "scale.per_step=2", "sampling.quiet_timeout_s=0"], "quick")
    lab = LabRun(RunRequest(suite, tmp_path / "lab.duckdb", manual=True))
    (runner,) = lab.prepare()
    task = asyncio.create_task(lab.run())
    deadline = time.monotonic() + 120
    while not lab.gate.waiting:
        assert time.monotonic() < deadline and not task.done()
        await asyncio.sleep(0.05)
    lab.abort("stopped by the test")
    (outcome,) = await task
    assert outcome.status == "aborted" and outcome.message == "stopped by the test"
    assert await open_backend("process", LocalHost()).list(runner.session_id) == []
    assert _open_rows(tmp_path / "lab.duckdb", runner.session_id) == []
