"""The time left (issue 41 item 3): labtui.session.estimate against synthetic runs whose every event time is known,
the past sessions it leans on, and where a wait for an idle host is shown.

A synthetic run is what the engine records: a setup, then per repetition the last one's teardown (its last
instance destroyed), the check that the host is idle, on a busy host a quiet-wait line and the wait, then the
steps; after the last step a teardown and the session's end.  The clock is fed the events up to a moment and its
estimate compared with the time that was really left then (to the session's end).
"""

from __future__ import annotations

import asyncio
import io
import random
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console
from rich.progress import Progress, TextColumn

from labtui.commands import run as run_command
from labtui.commands.run import _ProgressLine
from labtui.core.events import (
    Event,
    InstanceCreating,
    InstanceDestroyed,
    InstanceReady,
    Log,
    SessionEnded,
    SessionStarted,
    StepEnded,
    StepStarted,
)
from labtui.engine.quiet import QuietWindows
from labtui.session import Plan, SessionInfo, plan_for
from labtui.session.estimate import (
    QUIET_POLL_S,
    History,
    Line,
    StepClock,
    StepTime,
    before_run_text,
    fit,
    history,
)
from labtui.store import record_events
from labtui.suites import load_suite
from labtui.suites.serialize import suite_to_dict
from labtui.ui.model.live import RunModel
from labtui.ui.model.pane_text import run_text

T0 = 1_800_000_000.0
TIMEOUT = 10.0


@dataclass
class Synthetic:
    """A run's events at known times."""

    plan: Plan
    duration: Callable[[int, int], float]  # (repetition, position) -> seconds
    inner: float = 0.1
    teardown: float = 0.4
    check: float = 0.3
    busy: Callable[[int], float | None] = lambda repetition: None  # seconds waited for a busy host, None: idle
    setup: float = 1.0
    sid: str = "s"
    events: list[Event] = field(default_factory=list)

    def __post_init__(self) -> None:
        t, sid = T0, self.sid
        self.events.append(SessionStarted(sid, "boot-scaling", "scaling", "process", "local", {}, 1, ts=t))
        for repetition in range(1, self.plan.repetitions + 1):
            t += self.setup if repetition == 1 else self.teardown
            if repetition > 1:
                self.events.append(InstanceDestroyed(sid, f"bg{repetition}", ts=t))
            t += self.check
            if (busy := self.busy(repetition)) is not None:
                self.events.append(Log(sid, "info", "quiet-wait", "waiting up to 10 s for host local to be idle "
                                                                  "(CPU 3% free) before measuring", ts=t))
                t += busy
            for position in range(self.plan.steps_per_repetition):
                t += self.inner if position else 0.0
                self.events.append(StepStarted(sid, repetition, position, self.plan.steps_per_repetition,
                                               10 * position, ts=t))
                t += self.duration(repetition, position)
                self.events.append(StepEnded(sid, repetition, position, 10 * position, ts=t))
        t += self.teardown
        self.events += [InstanceDestroyed(sid, "last", ts=t), SessionEnded(sid, "completed", ts=t)]

    @property
    def end(self) -> float:
        return self.events[-1].ts

    def of(self, kind: type, n: int = 0) -> float:
        """The time of the n-th event of a kind."""
        return [e for e in self.events if isinstance(e, kind)][n].ts

    def clock(self, at: float, past: History | None = None) -> StepClock:
        """A clock fed every event up to `at` (not the session's end)."""
        clock = StepClock(self.plan, past=past)
        for event in self.events:
            if event.ts <= at and not isinstance(event, SessionEnded):
                clock.apply(event)
        return clock

    def history(self) -> History:
        """This run, ended, as a past session."""
        clock = StepClock(self.plan)
        for event in self.events:
            clock.apply(event)
        return History(self.sid, clock)

    def moments(self) -> list[float]:
        """Every event's time but the end's, and half-way to the next."""
        times = [e.ts for e in self.events[:-1]]
        return sorted({*times, *((a + b) / 2 for a, b in zip(times, times[1:]))})


def plan(repetitions: int, steps: int) -> Plan:
    return Plan("scaling", repetitions, tuple(f"step {i}" for i in range(steps)), TIMEOUT)


def linear(repetition: int, position: int) -> float:
    return 0.5 + 0.2 * position


def test_a_linearly_growing_run_is_estimated_exactly_once_its_gaps_are_seen() -> None:
    """Steps 0.5 s + 0.2 s a position, on an idle host: from two steps on the line is exact, and the estimate
    misses only what no gap has shown yet (the first teardown, the check above one poll); from the second
    repetition on it is exact at every moment, in steps, gaps and the last teardown."""
    run = Synthetic(plan(3, 8), linear)
    second_end = run.of(StepEnded, 1)
    rep2 = run.of(StepStarted, 8)
    unseen = 2 * (run.teardown + run.check - QUIET_POLL_S) + run.teardown
    for at in run.moments():
        clock = run.clock(at)
        left = clock.left(at)
        if at < second_end:
            assert left is None and clock.text(at).startswith("left: estimating, "), at - T0
        elif at < run.of(StepEnded, 7):  # within the first repetition
            assert left == pytest.approx(run.end - at - unseen, abs=1e-4), at - T0
        elif at >= rep2:
            assert left == pytest.approx(run.end - at, abs=1e-4), at - T0
    line = fit(run.clock(rep2).times)
    assert line is not None and line.intercept == pytest.approx(0.5) and line.slope == pytest.approx(0.2)


def test_a_busy_hosts_waits_are_counted_before_every_repetition() -> None:
    """On a loaded host every repetition waits 9.7 s after its quiet-wait line (the wait runs out at 10 s): the
    estimate counts that wait before each repetition to come, and counts a wait under way down."""
    run = Synthetic(plan(3, 5), lambda r, p: 0.3 + 0.05 * p, inner=0.05, teardown=0.2,
                    busy=lambda repetition: 9.7)
    said = run.of(Log, 0)
    opening = run.clock(said + 2)
    assert opening.left(said + 2) is None  # no steps and no past session yet
    assert opening.waiting_text(said + 2) == "waiting for an idle host before rep 1/3: 0:02 of at most 0:10"
    assert opening.gaps().wait == TIMEOUT  # nothing seen: a busy host counts to the timeout
    # two steps in: the line is exact, the opening's wait stands for the two to come
    at = run.of(StepEnded, 1)
    left = run.clock(at).left(at)
    unseen = 2 * (run.teardown + run.check - QUIET_POLL_S) + run.teardown
    assert left is not None and left == pytest.approx(run.end - at - unseen, abs=1e-4)
    assert left > 2 * 9.7 and abs(left - (run.end - at)) < 0.05 * (run.end - at)
    # the wait before repetition 2 under way: it counts down, and says so
    said = run.of(Log, 1)
    clock = run.clock(said + 5)
    unseen = (run.teardown + run.check - QUIET_POLL_S) + run.teardown  # still no teardown seen
    assert clock.left(said + 1) == pytest.approx(run.end - said - 1 - unseen, abs=1e-4)
    assert clock.left(said + 5) == pytest.approx(run.end - said - 5 - unseen, abs=1e-4)
    assert clock.waiting_text(said + 5) == "waiting for an idle host before rep 2/3: 0:05 of at most 0:10"
    # once repetition 2 has started every gap is known: exact to the end, the wait before repetition 3 included
    for at in run.moments():
        if at >= run.of(StepStarted, 5):
            assert run.clock(at).left(at) == pytest.approx(run.end - at, abs=1e-4), at - T0
    assert run.clock(run.end).waiting(run.end) is None


def test_a_past_session_estimates_the_run_before_its_steps() -> None:
    """With a comparable past session the estimate starts in the opening's wait (the past's busy waits stand for
    it and the ones to come) and its line is scaled to the steps measured: steps 20 % slower than the past's."""
    before = Synthetic(plan(3, 5), lambda r, p: 0.3 + 0.05 * p, busy=lambda repetition: 9.7, sid="p")
    past = before.history()
    assert past.estimate() == pytest.approx(before.end - T0)
    run = Synthetic(plan(3, 5), lambda r, p: 1.2 * (0.3 + 0.05 * p), busy=lambda repetition: 9.7)
    said = run.of(Log, 0)
    at = said + 3
    left = run.clock(at, past).left(at)
    steps = sum(0.3 + 0.05 * p for p in range(5)) * 3
    assert left == pytest.approx(run.end - at - 0.2 * steps, abs=1e-4)  # the past's steps: 20 % faster
    at = run.of(StepEnded, 1)  # two steps measured: the past's line, 1.2 times
    assert run.clock(at, past).left(at) == pytest.approx(run.end - at, abs=1e-4)
    assert run.clock(at).left(at) != pytest.approx(run.end - at, abs=1e-3)  # alone: the teardown unseen


def test_noisy_steps_give_an_estimate_close_to_what_is_left() -> None:
    """Each step 10 % off its trend at random (seeded), on a host busy before every repetition: from the second
    repetition on the estimate stays within 10 % of the time left until the last tenth of the run (the speed
    follows the latest half repetition of steps, so their noise shows), and within 3 % of the run's duration to
    its end."""
    rng = random.Random(41)
    noise = {(r, p): 1 + rng.gauss(0, 0.1) for r in range(1, 4) for p in range(20)}
    run = Synthetic(plan(3, 20), lambda r, p: linear(r, p) * noise[r, p], busy=lambda repetition: 9.7)
    duration = run.end - T0
    for at in run.moments():
        left, truth = run.clock(at).left(at), run.end - at
        if at >= run.of(StepStarted, 20):
            assert left is not None and abs(left - truth) < 0.03 * duration, at - T0
            assert truth < 0.1 * duration or abs(left - truth) < 0.1 * truth, at - T0


def test_a_slow_start_of_each_repetition_is_expected_where_it_comes() -> None:
    """The first 5 of 20 steps of every repetition take 0.9 s, the rest 0.5 s (the kernel still freeing the last
    repetition's background).  Half-way through the last repetition the slow start is behind it: the estimate
    is within 2 % of what is left, where a line through every step, scaled by the latest steps (the slow start
    among them), said 17 % too much."""
    run = Synthetic(plan(3, 20), lambda r, p: 0.9 if p < 5 else 0.5)
    at = run.of(StepEnded, 49)
    left, truth = run.clock(at).left(at), run.end - at
    assert left is not None and abs(left - truth) < 0.02 * truth, (left, truth)


def test_one_step_a_repetition_leans_on_a_past_session_until_two_steps_ended() -> None:
    """With one step a repetition, a past session's steps stand in after the first step too: a line needs two."""
    run = Synthetic(plan(4, 1), lambda r, p: 2.0)
    at = run.of(StepEnded, 0) + 0.01
    assert run.clock(at).left(at) is None  # no past session: estimating
    left = run.clock(at, past=run.history()).left(at)
    assert left is not None and abs(left - (run.end - at)) < 0.05 * (run.end - at), left


def test_a_past_session_is_shaped_by_its_own_repetitions() -> None:
    """A past session of 20 steps a repetition whose steps 5 to 9 were slow stands in for a run whose plan says
    10: the past's quarters are taken by its own 20 steps (its second quarter slow), not by 10 (which would put
    step 8 in a last quarter of mostly fast steps)."""
    past = Synthetic(plan(2, 20), lambda r, p: 0.9 if 5 <= p < 10 else 0.5).history()
    durations = StepClock(plan(2, 10), past=past).durations()
    assert durations is not None
    assert [round(durations.at(p), 6) for p in (2, 5, 8)] == [0.5, 0.9, 0.9]


def test_the_estimate_follows_a_host_whose_load_changes() -> None:
    """From repetition 2 on every step takes 1.5 times as long (other work on the host).  By the end of that
    repetition the expected durations weigh its steps most (about 1.47 times the first repetition's, where all
    steps alike would say 1.25): the estimate is within 10 % of what is left."""
    run = Synthetic(plan(3, 20), lambda r, p: linear(r, p) * (1.5 if r >= 2 else 1.0))
    at = run.of(StepEnded, 39)
    clock = run.clock(at)
    durations = clock.durations()
    assert durations is not None
    assert all(1.35 < durations.at(p) / linear(1, p) <= 1.5 for p in range(20))
    assert sum(t.duration_s for t in clock.times) / sum(linear(1, t.position) for t in clock.times) < 1.26
    left, truth = clock.left(at), run.end - at
    assert left is not None and abs(left - truth) < 0.1 * truth, (left, truth)


def test_a_repetition_of_fewer_steps_than_planned_counts_the_steps_the_engine_runs() -> None:
    """An isolation run that skips a placement the host lacks announces 4 steps a repetition where the plan has
    5 (StepStarted.steps): the time left counts 4."""
    run = Synthetic(plan(2, 4), linear)
    five = Plan("isolation", 2, tuple(f"step {i}" for i in range(5)), TIMEOUT)
    at = run.of(StepStarted, 4)
    clock = StepClock(five)
    for event in run.events:
        if event.ts <= at:
            clock.apply(event)
    assert clock.left(at) == pytest.approx(run.end - at, abs=1e-4)


def test_a_fit_that_falls_is_flat_and_one_position_is_flat() -> None:
    assert fit([StepTime(0, 0, 2.0), StepTime(1, 10, 1.0)]) == Line(1.5, 0.0)
    assert fit([StepTime(0, 1, 2.0), StepTime(0, 1, 4.0)]) == Line(3.0, 0.0)
    assert fit([StepTime(0, 1, 2.0)]) is None


def test_a_persons_wait_at_the_gate_is_not_a_gap() -> None:
    """A step held 100 s for next (StepStarted.held_s) adds nothing to the gaps, nor to a past session's
    duration."""
    lefts = []
    for held in (0.0, 100.0):
        clock = StepClock(plan(1, 6))
        t = T0
        clock.apply(SessionStarted("s", "x", "scaling", "process", "local", {}, 1, ts=t))
        for position in range(4):
            t += (0.1 + held) if position else 1.0
            clock.apply(StepStarted("s", 1, position, 6, 0, held if position else 0.0, ts=t))
            t += linear(1, position)
            clock.apply(StepEnded("s", 1, position, 0, ts=t))
        lefts.append(clock.left(t))
        clock.apply(SessionEnded("s", "completed", ts=t + 1))
        lefts.append(History("s", clock).estimate())  # as a past session: its duration, less the holds
    assert lefts[0] == pytest.approx(lefts[2])
    assert lefts[0] == pytest.approx(linear(1, 4) + linear(1, 5) + 2 * 0.1)
    whole = 1.0 + sum(linear(1, p) for p in range(4)) + 3 * 0.1 + 1
    assert lefts[1] == pytest.approx(whole) and lefts[3] == pytest.approx(whole)


# --- past sessions in the store ----------------------------------------------------------------------------------


def _record(db: Path, run: Synthetic, config: dict, status: str, offset: float) -> None:
    """Record a synthetic run in the store, `offset` seconds later, with its config and its end's status."""
    events: list[Event] = []
    for event in run.events:
        moved = replace(event, ts=event.ts + offset)
        if isinstance(moved, SessionStarted):
            moved = SessionStarted(moved.session_id, moved.suite, moved.kind, moved.backend, moved.host, config, 1,
                                   ts=moved.ts)
        if isinstance(moved, InstanceDestroyed):  # an instance row to close
            events += [InstanceCreating(run.sid, moved.instance_id, "local", "process", "background",
                                        moved.instance_id, ts=T0 + offset),
                       InstanceReady(run.sid, moved.instance_id, T0 + offset, T0 + offset, 0.0, "running",
                                     ts=T0 + offset)]
        if isinstance(moved, SessionEnded):
            moved = SessionEnded(moved.session_id, status, ts=moved.ts)  # type: ignore[arg-type]
        events.append(moved)
    record_events(db, events)


def test_history_refuses_an_aborted_session_and_one_of_another_size(tmp_path: Path) -> None:
    """Three past sessions of boot-scaling on local with process: the newest aborted, the next of 4 steps, the
    oldest completed with the run's sizes (from another checkout and through other overrides: the same run).
    Only the oldest is taken; without it there is no estimate, and the dialog says what it passed over."""
    db = tmp_path / "lab.duckdb"
    suite = load_suite("boot-scaling", ["scale.steps=4", "scale.per_step=5", "suite.repetitions=3"])
    other = load_suite("boot-scaling", ["scale.steps=3", "scale.per_step=5", "suite.repetitions=3"])
    config = suite_to_dict(suite)
    moved = {**config, "source": "/elsewhere/suites/boot-scaling.toml", "overrides": ["scale.steps=4"]}
    plan_ = plan_for(suite)
    same = Synthetic(plan_, linear, busy=lambda repetition: 2.0, sid="completed-same")
    _record(db, same, moved, "completed", 0)
    _record(db, Synthetic(plan_for(other), linear, sid="completed-other"), suite_to_dict(other), "completed", 1000)
    _record(db, Synthetic(plan_, linear, sid="aborted-same"), config, "aborted", 2000)
    past, passed = history(db, "boot-scaling", "local", "process", config, plan_)
    assert past is not None and past.session_id == "completed-same"
    assert passed == {"aborted": 1, "other sizes": 1}
    assert past.estimate() == pytest.approx(same.end - T0)
    assert past.waited() == pytest.approx(3 * 2.0)
    replayed = same.history().clock
    assert astuple(past.clock.gaps()) == pytest.approx(astuple(replayed.gaps()))  # teardowns: the instances' rows
    assert past.clock.gaps().teardown == pytest.approx(same.teardown)
    text = before_run_text("boot-scaling on local with process", plan_, past, passed)
    assert text.startswith(f"time: about 0:{round(same.end - T0):02d}, as session completed-same took")
    assert "0:06 waiting for an idle host (at most 0:10 before each of 3 repetition(s))" in text
    # a session of this size that did not complete, or none: no estimate, and why
    five = load_suite("boot-scaling", ["scale.steps=4", "scale.per_step=5", "suite.repetitions=5"])
    _record(db, Synthetic(plan_for(five), linear, sid="failed-five"), suite_to_dict(five), "failed", 3000)
    past, passed = history(db, "boot-scaling", "local", "process", suite_to_dict(five), plan_for(five))
    assert past is None and passed == {"failed": 1, "other sizes": 3}
    assert before_run_text("boot-scaling on local with process", plan_for(five), past, passed) == (
        "time: no estimate: no completed session of boot-scaling on local with process with these sizes in the "
        "store (1 failed, 3 of other sizes passed over); a busy host adds up to 0:10 before each of 5 repetition(s)")
    assert history(db, "boot-scaling", "local", "docker", config, plan_) == (None, {})
    assert history(tmp_path / "none.duckdb", "boot-scaling", "local", "process", config, plan_) == (None, {})


async def test_a_run_reads_its_past_session_through_the_stores_process(tmp_path: Path, runtime_dir: Path) -> None:
    """LabRun asks the store's own process (the run's never loads DuckDB) for each session's past session, and the
    clock every face gets from it leans on that session."""
    from labtui.session import LabRun, RunRequest
    from labtui.session.store_process import StoreProcess

    db = tmp_path / "lab.duckdb"
    suite = load_suite("boot-scaling", ["scale.steps=4", "scale.per_step=5", "suite.repetitions=3"])
    before = Synthetic(plan_for(suite), linear, busy=lambda repetition: 2.0, sid="completed-same")
    _record(db, before, suite_to_dict(suite), "completed", 0)
    _record(db, Synthetic(plan_for(suite), linear, sid="aborted-same"), suite_to_dict(suite), "aborted", 1000)
    lab = LabRun(RunRequest(suite, db, ("local",), None))
    lab.prepare()
    (session,) = lab.sessions
    assert lab.step_clock(session.session_id).past is None  # not read yet
    store = await StoreProcess.start()
    try:
        await lab._read_pasts(store, lab.runners)
    finally:
        await store.close()
    past = lab.pasts[session.session_id]
    assert past.session_id == "completed-same" and past.estimate() == pytest.approx(before.end - T0)
    clock = lab.step_clock(session.session_id)
    assert clock.past is past
    clock.apply(SessionStarted(session.session_id, "boot-scaling", "scaling", "process", "local", {}, 1, ts=T0))
    assert clock.left(T0) is not None  # an estimate before the first step


# --- where the wait is shown ---------------------------------------------------------------------------------------


def test_the_progress_line_says_it_waits_for_an_idle_host_until_the_step() -> None:
    """The CLI's detail, from the quiet-wait line to the next step: the engine's line and the seconds waited."""
    suite = load_suite("boot-scaling", ["scale.steps=2", "scale.per_step=5", "suite.repetitions=2"])
    plan_ = plan_for(suite)
    console = Console(file=io.StringIO(), width=200)
    progress = Progress(TextColumn("{task.fields[detail]}"), TextColumn("{task.fields[clock]}"), console=console,
                        auto_refresh=False)
    line = _ProgressLine(SessionInfo("s", suite, "process", "local"), plan_, progress, console, StepClock(plan_),
                         several=False)
    t = time.time() - 30
    line.apply(SessionStarted("s", "boot-scaling", "scaling", "process", "local", {}, 1, ts=t))
    for step in range(3):
        line.apply(StepStarted("s", 1, step, 3, 5 * step, ts=t + step))
        line.apply(StepEnded("s", 1, step, 5 * step, ts=t + step + 0.5))
    message = "waiting up to 10 s for host local to be idle (CPU 3% free) before measuring"
    line.apply(Log("s", "info", "quiet-wait", message, ts=time.time() - 4))
    assert str(progress.tasks[0].fields["detail"]) == f"rep 2/2  {message}: 0:04 so far"
    line.apply(InstanceDestroyed("s", "x"))  # events in the wait do not replace it
    assert str(progress.tasks[0].fields["detail"]).startswith(f"rep 2/2  {message}: 0:0")
    assert str(progress.tasks[0].fields["clock"]).startswith("~")  # a time left meanwhile
    line.apply(StepStarted("s", 2, 0, 3, 0))
    assert str(progress.tasks[0].fields["detail"]).startswith("rep 2/2  step 0/2  background 0")


async def test_the_progress_is_redrawn_while_the_run_waits_for_an_idle_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not while a measured operation's window is open; every WAIT_REDRAW_S while a wait for an idle host's is."""
    monkeypatch.setattr(run_command, "REDRAW_S", 0.01)
    monkeypatch.setattr(run_command, "WAIT_REDRAW_S", 0.05)
    quiet = QuietWindows()
    drawn: list[float] = []
    progress = SimpleNamespace(refresh=lambda: drawn.append(time.monotonic()))
    redraws = asyncio.create_task(run_command._redraw_between_windows(progress, SimpleNamespace(quiet=quiet)))
    try:
        async with quiet.window():
            await asyncio.sleep(0.05)
            count = len(drawn)
            await asyncio.sleep(0.3)
            assert len(drawn) == count  # a boot is timed: nothing is drawn
        async with quiet.window(idle_wait=True):
            await asyncio.sleep(0.05)
            count = len(drawn)
            await asyncio.sleep(0.5)
            assert 5 <= len(drawn) - count <= 11  # about every 0.05 s, not every 0.01 s
            async with quiet.window():  # a measurement of another session meanwhile
                await asyncio.sleep(0.05)
                count = len(drawn)
                await asyncio.sleep(0.2)
                assert len(drawn) == count
    finally:
        redraws.cancel()


def test_the_run_pane_says_it_waits_for_an_idle_host() -> None:
    model = RunModel()
    model.reset("boot-scaling", "process", "local", 2, 3)
    model.apply(SessionStarted("s", "boot-scaling", "scaling", "process", "local", {}, 1))
    waiting = "waiting for an idle host before rep 2/2: 0:04 of at most 0:10"
    assert f"status     running: {waiting}\n" in run_text(model, "auto", waiting).plain
    assert "waiting" not in run_text(model, "auto").plain
