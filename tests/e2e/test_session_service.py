"""The session service, headless: every stop signal tears a run down cleanly and records why.

A real `labtui run` on the process backend is interrupted at a random moment
(often while a batch of instances is being created).  Afterwards, with no
cleanup command run: no instance of the session exists, no instance row is
open, and the session's end names the signal.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from interrupted_run import check_torn_down, interrupt_run, open_rows, session_row

from labtui.backends.base import open_backend
from labtui.engine import plan_for
from labtui.hosts.local import LocalHost
from labtui.session import LabRun, RunRefused, RunRequest
from labtui.suites import list_suites, load_suite
from labtui.suites.kinds import steps_per_repetition

#: Big batches, so that a signal often lands while one is being created.
BATCHY = ["--set", "scale.steps=30", "--set", "scale.per_step=25", "--set", "suite.repetitions=1",
          "--set", "sampling.quiet_timeout_s=0"]
#: (first signal, second signal or None); each schedule runs twice at random moments.
SCHEDULES = [(signal.SIGINT, None), (signal.SIGTERM, None), (signal.SIGHUP, None), (signal.SIGINT, signal.SIGINT),
             (signal.SIGTERM, signal.SIGINT)]


@pytest.mark.slow
@pytest.mark.parametrize("first,second", SCHEDULES, ids=lambda s: getattr(s, "name", "none"))
@pytest.mark.parametrize("round_", [0, 1])
def test_a_signal_at_a_random_moment_tears_down_and_names_itself(
    first: signal.Signals, second: signal.Signals | None, round_: int, tmp_path: Path, runtime_dir: Path
) -> None:
    db = tmp_path / "lab.duckdb"
    run = interrupt_run(["boot-scaling", *BATCHY], db, first, second)
    check_torn_down(run, first)
    session, err = run.session, run.stderr
    assert asyncio.run(open_backend("process", LocalHost()).list(session)) == [], err
    assert open_rows(db, session) == [], err


@pytest.mark.slow
def test_a_run_whose_stderr_reader_went_away_still_stops_on_sigterm(tmp_path: Path, runtime_dir: Path) -> None:
    """Its terminal closed: every notice now fails (EPIPE).  The notice of the teardown once raised before
    the run's tasks were cancelled, so SIGTERM was ignored and the instances stayed."""
    db = tmp_path / "lab.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "labtui", "run", "boot-scaling", *BATCHY, "--db", str(db)],
                            env={**os.environ, "COLUMNS": "200"}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while session_row(db) is None:
            assert proc.poll() is None and time.monotonic() < deadline, "the session never started"
            time.sleep(0.1)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    session, status, message = session_row(db) or ("", "", "")
    assert (status, message) == ("aborted", "aborted by SIGTERM")
    assert asyncio.run(open_backend("process", LocalHost()).list(session)) == []
    assert open_rows(db, session) == []


async def test_a_notice_that_cannot_be_shown_does_not_stop_the_teardown(tmp_path: Path, runtime_dir: Path) -> None:
    def notify(level: str, text: str) -> None:
        raise OSError(5, "Input/output error")  # what a write to a hung-up terminal raises

    suite = load_suite("boot-scaling", ["scale.steps=40", "scale.per_step=2", "sampling.quiet_timeout_s=0"], "quick")
    lab = LabRun(RunRequest(suite, tmp_path / "lab.duckdb"), notify=notify)
    task = asyncio.create_task(lab.run())
    deadline = time.monotonic() + 60
    while not (lab.runners and lab.runners[0].ctx.live):
        assert not task.done() and time.monotonic() < deadline, "no instance started"
        await asyncio.sleep(0.05)
    lab.abort("aborted by the test")
    (outcome,) = await asyncio.wait_for(task, 120)
    assert outcome.status == "aborted" and lab.left_running() == []


def test_an_unknown_host_is_refused_before_anything_starts(tmp_path: Path) -> None:
    lab = LabRun(RunRequest(load_suite("boot-scaling"), tmp_path / "lab.duckdb", ("nowhere",)))
    with pytest.raises(RunRefused, match="unknown host 'nowhere'"):
        lab.prepare()
    assert not (tmp_path / "lab.duckdb").exists()


@pytest.mark.parametrize("suite,backend,why", [
    ("xen-domu", "process", "backend process cannot run image 'guest'; run zone-worker instead"),
    ("isolation-cpu", "zones", "backend zones cannot pin instances to CPUs, which isolation runs need"),
    ("fairshare-cpu", "zones", "backend zones cannot pin instances to CPUs; fairshare.cpus = '0' needs it"),
    ("zone-worker", "unikraft", 'creation.where = "first" runs the benchmark inside instances'),
    ("isolation-syscall-fork", "unikraft", "unikraft backend cannot run probe attack-syscall fork"),
])
def test_a_suite_the_backend_cannot_run_is_refused_before_anything_starts(tmp_path: Path, suite: str, backend: str,
                                                                           why: str) -> None:
    """What the suite's programs and kind need of the backend is checked in prepare(), before the session, the
    store or an instance: not after the first step, with the advice said three times."""
    lab = LabRun(RunRequest(load_suite(suite), tmp_path / "lab.duckdb", ("local",), backend))
    with pytest.raises(RunRefused) as refused:
        lab.prepare()
    assert str(refused.value).startswith(why) and "\n" not in str(refused.value)
    assert lab.runners == [] and list(tmp_path.iterdir()) == []


def test_every_built_in_suite_has_a_plan_of_its_own_kind() -> None:
    for info in list_suites():
        suite = load_suite(info.name, (), "quick")
        plan = plan_for(suite)
        assert plan.kind == suite.kind and plan.repetitions == suite.repetitions
        assert plan.steps_per_repetition == steps_per_repetition(suite), info.name
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
    assert open_rows(tmp_path / "lab.duckdb", runner.session_id) == []


async def test_a_face_follows_stepping_and_live_instances_through_the_service(tmp_path: Path,
                                                                             runtime_dir: Path) -> None:
    """What the console shows of a run's stepping and the instances an abort would destroy comes from the service:
    manual until a step ends, waiting at its gate, auto once asked, aborting once stopped; the live instances are
    the backend's own, by name and role."""
    suite = load_suite("boot-scaling", ["scale.steps=3", "scale.per_step=2", "sampling.quiet_timeout_s=0"], "quick")
    lab = LabRun(RunRequest(suite, tmp_path / "lab.duckdb", manual=True))
    lab.prepare()
    (session,) = lab.sessions
    assert lab.stepping == "manual" and lab.live_instances() == []
    task = asyncio.create_task(lab.run())
    await asyncio.wait_for(lab.until_step_waiting(True), 120)
    assert lab.stepping == "waiting"
    lab.next()
    await asyncio.wait_for(lab.until_step_waiting(False), 30)
    await asyncio.wait_for(lab.until_step_waiting(True), 120)
    listed = await open_backend("process", LocalHost()).list(session.session_id)
    live = lab.live_instances()
    assert len(live) == 2 and {i.session_id for i in live} == {session.session_id}
    assert sorted((i.name, i.role) for i in live) == sorted((i.name, i.labels.role) for i in listed)
    assert str(live[0]) == f"{live[0].name} ({live[0].role})"
    lab.pause()
    lab.auto()
    assert lab.stepping == "auto"
    lab.abort("stopped by the test")
    assert lab.stepping == "aborting"
    (outcome,) = await task
    assert outcome.status == "aborted" and lab.live_instances() == []


async def test_a_run_stopped_before_its_sessions_start_says_nothing_was_recorded(tmp_path: Path,
                                                                                 runtime_dir: Path) -> None:
    """A stop while the run prepares (reconcile) keeps the sessions from starting: the outcome says so, and the CLI
    no longer prints "aborted -> store" then "no session" for a session that never was."""
    suite = load_suite("boot-scaling", ["scale.steps=1", "scale.per_step=2", "sampling.quiet_timeout_s=0"], "quick")
    db = tmp_path / "lab.duckdb"
    lab = LabRun(RunRequest(suite, db))
    lab.prepare()
    lab.abort("stopped by the test")
    (outcome,) = await lab.run()
    assert outcome.status == "aborted" and not outcome.recorded
    assert session_row(db) is None
    assert lab.stopped_exit_status == 130


async def test_a_run_that_started_is_recorded(tmp_path: Path, runtime_dir: Path) -> None:
    suite = load_suite("boot-scaling", ["scale.steps=1", "scale.per_step=2", "sampling.quiet_timeout_s=0"], "quick")
    (outcome,) = await LabRun(RunRequest(suite, tmp_path / "lab.duckdb")).run()
    assert outcome.recorded and session_row(tmp_path / "lab.duckdb") is not None
