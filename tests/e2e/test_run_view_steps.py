"""The Run view numbers steps by their place in the plan, not by the engine's step index.

An isolation run numbers each placement's step by its index in PLACEMENTS (the
same placement has the same step in every session), so a run of some of the
placements, or one that skips a placement the host lacks, has engine indices
past its step count.  A real isolation session on the process backend is run
through the session service and its events are folded into the console's model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from labtui.core.events import StepStarted
from labtui.session import LabRun, RunRequest
from labtui.suites import load_suite
from labtui.ui.model.live import RunModel
from labtui.ui.model.pane_text import log_line, next_step_text, run_text

PLACED = '["alone", "other-core", "all-other-cores"]'


async def test_an_isolation_run_counts_its_steps_0_to_n_minus_1_by_plan_position(tmp_path: Path, runtime_dir: Path) -> None:
    suite = load_suite("isolation-cpu", [f"isolation.placements={PLACED}", "suite.repetitions=2",
                                         "isolation.settle_s=0", "sampling.quiet_timeout_s=0"], "quick")
    lab = LabRun(RunRequest(suite, tmp_path / "lab.duckdb"))
    (runner,) = lab.prepare()
    events = runner.bus.subscribe()
    model = RunModel()
    model.reset(suite.name, "process", "local", lab.plan.repetitions, lab.plan.steps_per_repetition)
    run = asyncio.create_task(lab.run())
    shown, logged, upcoming, indices = [], [], [], []
    while (event := await events.get()) is not None:
        model.apply(event)
        if isinstance(event, StepStarted):
            indices.append(event.step)
            shown.append(next(line for line in run_text(model, "auto").plain.splitlines() if "step" in line).split()[1])
            line = log_line(event, model.position)
            assert line is not None
            logged.append(line.plain.split(" step ")[1].split(":")[0])
            upcoming.append(next_step_text(lab.plan, model))
    (outcome,) = await run
    assert outcome.status == "completed", outcome
    assert max(indices) + 1 > lab.plan.steps_per_repetition  # the engine's index runs past the plan here
    assert shown == logged == ["0/2", "1/2", "2/2"] * 2  # from 0, as the store, the CLI and the prompt number them
    assert upcoming == [
        "rep 1/2, step 1: worker with an attacker on other-core",
        "rep 1/2, step 2: worker with an attacker on all-other-cores",
        "rep 2/2, step 0: worker alone",
        "rep 2/2, step 1: worker with an attacker on other-core",
        "rep 2/2, step 2: worker with an attacker on all-other-cores",
        "end of the run: teardown",
    ]


def test_fewer_steps_than_planned_still_counts_to_the_end() -> None:
    """A host that lacks a placement: the engine announces 4 steps where the plan has 5."""
    from labtui.engine import plan_for

    suite = load_suite("isolation-cpu", ["suite.repetitions=1"], "quick")
    plan = plan_for(suite)
    model = RunModel()
    model.reset(suite.name, "process", "local", 1, plan.steps_per_repetition)
    upcoming = []
    for index in (0, 1, 3, 4):  # sibling-thread (2) skipped
        model.apply(StepStarted("s", 1, index, 4, 1))
        upcoming.append(next_step_text(plan, model))
    assert "step 3/3" in " ".join(run_text(model, "auto").plain.split())
    assert upcoming == ["rep 1/1, step 1", "rep 1/1, step 2", "rep 1/1, step 3", "end of the run: teardown"]
