"""The session service, headless: every stop signal tears a run down cleanly and records why.

A real `labtui run` on the process backend is interrupted at a random moment
(often while a batch of instances is being created).  Afterwards, with no
cleanup command run: no instance of the session exists, no instance row is
open, and the session's end names the signal.
"""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import pytest

from labtui.backends.base import open_backend
from labtui.engine import plan_for
from labtui.hosts.local import LocalHost
from labtui.session import LabRun, RunRefused, RunRequest
from labtui.suites import list_suites, load_suite
from interrupted_run import check_torn_down, interrupt_run, open_rows

#: Big batches, so that a signal often lands while one is being created.
BATCHY = ["--set", "scale.steps=6", "--set", "scale.per_step=25", "--set", "suite.repetitions=1",
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
    assert open_rows(tmp_path / "lab.duckdb", runner.session_id) == []
