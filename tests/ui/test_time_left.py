"""Time left (issue 36, item 4): the estimator against runs of known step times, and where it is shown.

The estimator is fed synthetic step events with fixed timestamps (a linear trend: exact; with noise: close);
then one real quick run of boot-scaling on the process backend shows it on the CLI's progress line and
leaves a store from which the start dialog estimates the same plan before it starts.  The console's Run
view shows it during a real run stepped by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from pilot_wait import wait_for

from labtui.core.events import SessionEnded, SessionStarted, StepEnded, StepStarted
from labtui.engine.kinds import Plan
from labtui.session.estimate import Line, StepClock, StepTime, clock, fit
from labtui.store import fetch_frame
from labtui.ui.tabs import RUN

QUICK = ("scale.steps=3", "scale.per_step=2", "suite.repetitions=2", "sampling.quiet_timeout_s=0")
T0 = 1_800_000_000.0
FIRST_GAP, INNER_GAP = 2.0, 0.1  # seconds before a repetition's first step, and before any other


def duration(position: int) -> float:
    """The synthetic step time: slower by 0.2 s per step of a repetition."""
    return 0.5 + 0.2 * position


@dataclass
class Replay:
    """Synthetic step events of a plan, fed to a StepClock, with the true end of every step."""

    plan: Plan
    clock: StepClock
    t: float = T0

    def step(self, repetition: int, position: int, seconds: float) -> None:
        self.t += FIRST_GAP if position == 0 else INNER_GAP
        self.clock.apply(StepStarted("s", repetition, position, self.plan.steps_per_repetition, 10 * position, ts=self.t))
        self.t += seconds
        self.clock.apply(StepEnded("s", repetition, position, 10 * position, ts=self.t))


def replay(repetitions: int, steps: int) -> Replay:
    plan = Plan("scaling", repetitions, tuple(f"step {i}" for i in range(steps)))
    run = Replay(plan, StepClock(plan, started=0.0))
    run.clock.apply(SessionStarted("s", "suite", "scaling", "process", "local", {}, 1, ts=T0))
    return run


def test_a_linear_trend_is_extrapolated_exactly() -> None:
    run = replay(3, 5)
    run.step(1, 0, duration(0))
    assert run.clock.left(run.t) is None and run.clock.text(run.t).startswith("left: estimating, ")
    for position in range(1, 5):
        run.step(1, position, duration(position))
    run.step(2, 0, duration(0))
    run.step(2, 1, duration(1))
    line = fit(run.clock.times)
    assert line is not None and line.intercept == pytest.approx(0.5) and line.slope == pytest.approx(0.2)
    rest = [(p, duration(p)) for p in (2, 3, 4)] + [(p, duration(p)) for p in range(5)]
    expected = sum(d for _, d in rest) + FIRST_GAP + INNER_GAP * (len(rest) - 1)
    assert run.clock.left(run.t) == pytest.approx(expected)
    # half-way through the gap before the next step, and 0.3 s into that step
    assert run.clock.left(run.t + INNER_GAP / 2) == pytest.approx(expected - INNER_GAP / 2)
    started = run.t + INNER_GAP
    run.clock.apply(StepStarted("s", 2, 2, 5, 20, ts=started))
    assert run.clock.left(started + 0.3) == pytest.approx(expected - INNER_GAP - 0.3)
    assert run.clock.text(started + 0.3) == f"~{clock(expected - 0.4)} left, {clock(started + 0.3 - T0)} elapsed"
    # a whole run of the plan by these steps is what such a run takes; once ended, the elapsed time alone
    whole = 3 * (sum(duration(p) for p in range(5)) + FIRST_GAP + 4 * INNER_GAP)
    assert run.clock.whole_run(run.plan) == pytest.approx(whole)
    run.clock.apply(SessionEnded("s", "completed", ts=T0 + 100))
    assert run.clock.text(T0 + 500) == "1:40 elapsed"


def test_noisy_steps_give_an_estimate_close_to_what_is_left() -> None:
    """Each step 10 % off the trend at random (seeded): after one repetition of three the estimate is within
    5 % of the time the other two take, and it tracks what is left as the run goes on."""
    rng = np.random.default_rng(36)
    run = replay(3, 20)
    noisy = [[duration(p) * (1 + rng.normal(0, 0.1)) for p in range(20)] for _ in range(3)]
    for position in range(20):
        run.step(1, position, noisy[0][position])
    truth = sum(map(sum, noisy[1:])) + 2 * (FIRST_GAP + 19 * INNER_GAP)
    estimate = run.clock.left(run.t)
    assert estimate is not None and abs(estimate - truth) / truth < 0.05, (estimate, truth)
    errors = []
    for repetition in (2, 3):
        for position in range(20):
            run.step(repetition, position, noisy[repetition - 1][position])
            left = run.clock.left(run.t)
            truth_left = sum(noisy[repetition - 1][position + 1:]) + sum(map(sum, noisy[repetition:]))
            truth_left += INNER_GAP * (19 - position) + (3 - repetition) * (FIRST_GAP + 19 * INNER_GAP)
            assert left is not None
            errors.append(abs(left - truth_left))
    assert errors[-1] == pytest.approx(0.0, abs=1e-9)  # nothing is left after the last step
    assert max(errors) < 0.05 * truth


def test_a_persons_wait_at_the_gate_is_not_a_gap_between_steps() -> None:
    """A manual run's steps are held for next: StepStarted.held_s is left out of the gaps, so a session stepped
    by hand (each step held 100 s) estimates what is left as the same session run on its own does."""
    estimates = []
    for held in (0.0, 100.0):
        run = replay(1, 6)
        for position in range(4):
            run.t += (FIRST_GAP if position == 0 else INNER_GAP) + (held if position else 0.0)
            run.clock.apply(StepStarted("s", 1, position, 6, 10 * position, held if position else 0.0, ts=run.t))
            run.t += duration(position)
            run.clock.apply(StepEnded("s", 1, position, 10 * position, ts=run.t))
        assert run.clock.gaps().inner == pytest.approx(INNER_GAP)
        estimates.append(run.clock.left(at=run.t))
    assert estimates[1] == pytest.approx(estimates[0])
    assert estimates[0] == pytest.approx(duration(4) + duration(5) + 2 * INNER_GAP)


def test_one_step_per_repetition_is_a_flat_line() -> None:
    assert fit([StepTime(0, 1, 2.0), StepTime(0, 1, 4.0)]) == Line(3.0, 0.0)
    assert fit([StepTime(0, 1, 2.0)]) is None


# --- a real run: the CLI's progress line, then the start dialog's estimate from its store -------------------


@pytest.fixture(scope="module")
def past_run(tmp_path_factory: pytest.TempPathFactory, runtime_dir: Path) -> Iterator[tuple[Path, str]]:
    """A quick real boot-scaling run (its store, and its stderr as a terminal would get it)."""
    db = tmp_path_factory.mktemp("time-left") / "lab.duckdb"
    args = [a for override in QUICK for a in ("--set", override)]
    # TTY_COMPATIBLE: Rich draws its live progress line into the pipe as it would on a terminal
    env = {**os.environ, "COLUMNS": "200", "TTY_COMPATIBLE": "1"}
    proc = subprocess.run([sys.executable, "-m", "labtui", "run", "boot-scaling", "--db", str(db), *args],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    yield db, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", proc.stderr)


def test_the_cli_progress_line_shows_elapsed_and_left(past_run: tuple[Path, str]) -> None:
    _, stderr = past_run
    frames = [f for f in re.split(r"[\r\n]", stderr) if "boot-scaling" in f and "elapsed" in f]
    assert any(re.search(r"left: estimating, \d+:\d\d elapsed", f) for f in frames), stderr
    lefts = [re.search(r"~\d+:\d\d left, \d+:\d\d elapsed", f) for f in frames]
    assert any(lefts), stderr
    assert re.search(r"8/8 .* \d+:\d\d elapsed\s*$", frames[-1]), frames[-1]  # the end: the elapsed time alone




async def open_dialog(app, pilot, store: Path):
    """The start dialog on the store, with the quick run's numbers typed in; returns it and its estimate line."""
    from textual.widgets import Input, Static

    from labtui.ui.model.choices import BackendChoice
    from labtui.ui.start_dialog import StartDialog

    async def check(host: str) -> list[BackendChoice]:
        return [BackendChoice("process", True, "Linux with labtui-agent")]

    suites = [("boot-scaling  (scaling)", "boot-scaling"), ("isolation-cpu  (isolation)", "isolation-cpu")]
    dialog = StartDialog(suites, ["local"], check, suite="boot-scaling", db=store)
    await app.push_screen(dialog)
    for override in QUICK[:3]:
        key, value = override.split("=")
        dialog.query_one("#" + {"scale.steps": "steps", "scale.per_step": "per-step",
                                "suite.repetitions": "repetitions"}[key], Input).value = value
    return dialog, dialog.query_one("#estimate", Static)


async def test_the_start_dialog_estimates_from_a_past_session(
    past_run: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same plan as the past session: the fit and the mean gaps add up to its time from start to last step."""
    from textual.widgets import Input, Select

    from labtui.ui.app import LabApp

    db, _ = past_run
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    (took,) = fetch_frame(db, "SELECT epoch(max(t.ended_at)) - epoch(min(s.started_at)) FROM steps t "
                              "JOIN sessions s USING (session_id)").row(0)
    said = r"time: about (\d+):(\d\d), by the 8 steps of session \S+ \(boot-scaling on local with process\)"
    app = LabApp(tmp_path / "other.duckdb", idle_sampling=False)
    async with app.run_test(size=(160, 48)) as pilot:
        dialog, shown = await open_dialog(app, pilot, db)
        await wait_for(pilot, lambda: re.search(said, str(shown.render())) is not None, 20, "the estimate")
        minutes, seconds = re.search(said, str(shown.render())).groups()  # type: ignore[union-attr]
        assert abs(int(minutes) * 60 + int(seconds) - took) <= 1, (shown.render(), took)
        dialog.query_one("#steps", Input).value = "9"  # a longer plan: the past steps' line, extrapolated
        await wait_for(pilot, lambda: "by the 8 steps of session " in str(shown.render())
                       and ", extrapolated from 4 steps a repetition to 10 (boot-scaling" in str(shown.render()), 20,
                       "the extrapolation named")
        dialog.query_one("#suite", Select).value = "isolation-cpu"
        await wait_for(pilot, lambda: "time: no estimate: no past session of isolation-cpu on local with process"
                       in str(shown.render()), 20, "no history of another suite")


async def test_the_start_dialog_says_when_it_has_no_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.ui.app import LabApp

    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    app = LabApp(tmp_path / "other.duckdb", idle_sampling=False)
    async with app.run_test(size=(160, 48)) as pilot:
        _, shown = await open_dialog(app, pilot, tmp_path / "none.duckdb")
        await wait_for(pilot, lambda: str(shown.render()) == "time: no estimate: no past session of boot-scaling on "
                       "local with process in the store", 20, "no history")


async def test_the_run_view_shows_elapsed_and_left(tmp_path: Path, runtime_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A real run stepped by hand: 'estimating' after the first step, a time left after the second."""
    from labtui.suites import load_suite
    from labtui.ui.app import LabApp
    from labtui.ui.model.choices import StartRequest

    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    app = LabApp(tmp_path / "lab.duckdb", idle_sampling=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.view(RUN) is not None, 30, "the Run view")
        view = app.run_view
        view.start(StartRequest(load_suite("boot-scaling", QUICK), "process", "local", manual=True))
        runbox = view.query_one("#runbox")
        subtitle = lambda: str(runbox.border_subtitle)  # noqa: E731
        await wait_for(pilot, lambda: view.lab is not None and view.lab.gate.waiting, 60, "the first step")
        await wait_for(pilot, lambda: re.fullmatch(r"left: estimating, \d+:\d\d elapsed", subtitle()) is not None, 5,
                       f"'estimating'; shown: {subtitle()!r}")
        await pilot.press("n")
        await wait_for(pilot, lambda: view.model.steps_done == 2 and view.lab is not None and view.lab.gate.waiting,
                       60, "the second step")
        await wait_for(pilot, lambda: re.fullmatch(r"~\d+:\d\d left, \d+:\d\d elapsed", subtitle()) is not None, 5,
                       f"a time left; shown: {subtitle()!r}")
        await pilot.press("a")
        await wait_for(pilot, lambda: view.caught_up, 90, "the run's end")
        await wait_for(pilot, lambda: re.fullmatch(r"\d+:\d\d elapsed", subtitle()) is not None, 5,
                       f"the elapsed time alone; shown: {subtitle()!r}")
        assert view.model.status == "completed"
