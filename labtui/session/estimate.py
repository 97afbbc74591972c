"""Time left in a run: its steps' durations by their place in a repetition, its gaps and its waits for an idle
host, summed over what the plan has still to run, to the teardown after its last step.

The steps.  A step's expected duration depends on its position in its repetition (0 for the first): steps get
slower as the background grows, and the first ones after a teardown are often slower while the kernel frees
what the last repetition left.  The shape is the least-squares line of duration against position (never
falling: a fit that falls is noise, flat at the mean instead; none before MIN_STEPS steps), and once the run
has measured a repetition's worth of steps, the line through them bent by the mean residual in each of
SHAPE_PARTS parts of a repetition (`PartedLine`): a slow start of each repetition is then expected where it
comes, instead of raising the speed (below) for the rest of it.  Both are exact over whole repetitions (their
residuals sum to zero; unless a value would fall below zero, where it is held at zero), and no burst of load at
a few steps bends them much.  Until then the shape is a past session's parted line (the same suite, sizes, host
and backend: `history`) when one is known; with none, the line through the run's own steps, flat at their mean
until they span SLOPE_SPAN of a repetition: a slope through a few steps at the first positions amplifies their
noise over a long repetition.  The shape is then
scaled by how much longer the run's steps took than it says, a step's weight halving with every
SPEED_HALF_LIFE of a repetition measured after it: the load of a shared host changes, and its latest steps say
most about the next ones.  The expected durations are summed over the plan's steps still to run (as many a
repetition as the engine announces: StepStarted.steps).

The gaps.  Between two steps of a repetition: the mean gap seen so far.  Before a repetition's first step the
previous repetition's background is torn down (up to its last instance destroyed), then the run checks that the
host is idle (a sample, another 0.25 s later: labtui.engine.scaling.wait_for_quiet_host) and, when it is not,
logs a "quiet-wait" line and waits for it up to `sampling.quiet_timeout_s`; on a loaded host that wait runs out
before every repetition and is most of a short run.  The three are kept apart:

- the teardown and the check are estimated by the ones the run saw (a past session's before the first; the
  check is one poll until then), and one more teardown is counted after the last step;
- the wait for a busy host (from its quiet-wait line to the step) is the host's state now, so it is estimated by
  the waits this run saw, the one before its first repetition included (0 for a wait that found the host idle),
  never more than quiet_timeout_s.  A wait under way counts down from the mean of the busy waits seen (a past
  session's before the run's first has ended), and from the timeout while none was: the upper bound, so the
  estimate can only fall when the host goes idle sooner.  While the run's first wait is under way, the host is
  expected to be as busy before every repetition.

The time the step gate held a step (a manual run waiting for next: StepStarted.held_s) is not a gap: a person's
pauses are left out.  The CLI's progress line, the console's Run view and the start dialog all use this module;
the dialog's estimate before a run is a past session's own duration (less its holds), and a run's time left takes
that session's steps and gaps until it has its own (LabRun.step_clock).  A past session counts only when it
completed and ran the same suite on the same host and backend with the same sizes: every key of its suite (levels,
repetitions, worker runs and warm-up, timeouts) but the suite's words about itself (`comparable`).

This module is stdlib-only: the measuring process loads no numpy (tests/e2e/test_lean_run.py); `read_history`
reads the store, in the store's own process during a run (labtui.session.store_child).
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from labtui.core.events import (
    Event,
    InstanceDestroyed,
    Log,
    SessionEnded,
    SessionStarted,
    StepEnded,
    StepStarted,
    now,
)
from labtui.engine.scaling import QUIET_POLL_S

if TYPE_CHECKING:
    from labtui.engine.kinds import Plan

#: Steps that must have ended before the time left is estimated from the run's own steps alone.
MIN_STEPS = 2
#: With no past session, the run's own steps give a slope only once they span this share of a repetition;
#: before, their mean (a slope through its first few positions, carried over the whole repetition, multiplies
#: their noise: the README run's first reading was 394% off that way).
SLOPE_SPAN = 0.25
#: The log category of the engine's line that says the host is busy and the run waits for it to go idle.
QUIET_WAIT = "quiet-wait"
#: Parts of a repetition in each of which the line through a repetition's worth of steps is bent by the steps'
#: mean residual (PartedLine).  Fewer parts smooth a step's noise more, more follow a shape that bends more.
#: Chosen by replaying stored README runs and bare loops of the agent through the clock (docs/performance.md,
#: "The time left"): 4 parts and a speed half-life of a quarter repetition took the error at 90 % of a README
#: run from 15.5 to 11.9 % (rms over 30 runs), and 17 of 90 readings missed by over 20 % where 19 had with the
#: straight line and a half-life of half a repetition.
SHAPE_PARTS = 4
#: A step's weight in the speed halves with every this share of a repetition measured after it.
SPEED_HALF_LIFE = 0.25


@dataclass(frozen=True, slots=True)
class StepTime:
    """One measured step: its position in its repetition, its background count and how long it took."""

    position: int
    background: int
    duration_s: float


@dataclass(frozen=True, slots=True)
class Line:
    """A fitted step duration: intercept + slope * position, in seconds."""

    intercept: float
    slope: float

    def at(self, position: int) -> float:
        """The fitted duration of a step at `position` (never below zero)."""
        return max(0.0, self.intercept + self.slope * position)


def fit(times: Sequence[StepTime]) -> Line | None:
    """The least-squares line of duration against position; None before MIN_STEPS steps.

    With every step at one position (one step per repetition), or a fitted slope below zero (steps do not get
    faster as the background grows: that is noise), the line is flat at their mean.
    """
    if len(times) < MIN_STEPS:
        return None
    x = [float(t.position) for t in times]
    y = [t.duration_s for t in times]
    if min(x) == max(x):
        return Line(statistics.fmean(y), 0.0)
    slope, intercept = statistics.linear_regression(x, y)  # the stdlib: a run's process loads no numpy
    return Line(intercept, slope) if slope >= 0 else Line(statistics.fmean(y), 0.0)


class Shape(Protocol):
    """A step's expected duration in seconds by its position in its repetition."""

    def at(self, position: int) -> float: ...


@dataclass(frozen=True, slots=True)
class PartedLine:
    """A fitted Line plus, in each of the equal parts of a repetition of `steps` steps, the mean of the fitted
    steps' residuals there (`offsets`): a line where the steps follow one, and a bend where they do not (the first
    steps after a teardown).  Over whole repetitions it sums to their durations, as the line does (unless a bent
    value would fall below zero: it is held at zero)."""

    line: Line
    offsets: tuple[float, ...]
    steps: int

    @classmethod
    def of(cls, times: Sequence[StepTime], steps: int, parts: int = SHAPE_PARTS) -> PartedLine | None:
        """The parted line through `times`; None before MIN_STEPS of them."""
        line = fit(times)
        if line is None:
            return None
        parts = max(1, min(parts, steps))
        residuals: list[list[float]] = [[] for _ in range(parts)]
        for time in times:
            residuals[_part(time.position, steps, parts)].append(time.duration_s - line.at(time.position))
        return cls(line, tuple(statistics.fmean(part) if part else 0.0 for part in residuals), steps)

    def at(self, position: int) -> float:
        """The expected duration of a step at `position` (never below zero)."""
        return max(0.0, self.line.at(position) + self.offsets[_part(position, self.steps, len(self.offsets))])


def _part(position: int, steps: int, parts: int) -> int:
    return min(parts - 1, max(0, position) * parts // max(1, steps))


@dataclass(frozen=True, slots=True)
class Durations:
    """A step's expected duration by its position: a `shape` (a Line, or a PartedLine) times `speed`."""

    shape: Shape
    speed: float = 1.0

    def at(self, position: int) -> float:
        return self.speed * self.shape.at(position)


def speed(times: Sequence[StepTime], shape: Shape, half_life: float) -> float:
    """How much longer than `shape` says the steps took, a step's weight halving with every `half_life` steps
    measured after it: the latest steps say most about a host whose load changes.  1 with no steps."""
    n = len(times)
    weights = [0.5 ** ((n - 1 - i) / half_life) for i in range(n)]
    expected = sum(w * shape.at(t.position) for w, t in zip(weights, times))
    return sum(w * t.duration_s for w, t in zip(weights, times)) / expected if expected > 0 else 1.0


def upcoming(plan: Plan, repetition: int, position: int, steps: int | None = None) -> list[int]:
    """Positions of the plan's steps after the one at `position` of `repetition` (1-based, as events number it);
    (1, -1) gives the whole plan.  `steps`: a repetition's steps as the engine runs them (StepStarted.steps: an
    isolation run skips a placement the host lacks), when they differ from the plan's."""
    steps = steps or plan.steps_per_repetition
    rest = list(range(position + 1, steps))
    return rest + list(range(steps)) * max(0, plan.repetitions - repetition)


@dataclass(frozen=True, slots=True)
class Gaps:
    """Seconds between steps: before a step other than a repetition's first (`inner`); after a repetition's last
    step, its teardown (`teardown`), then before the next repetition the check that the host is idle (`check`)
    and the wait for a busy one (`wait`, the mean over repetitions: 0 for a host found idle)."""

    inner: float = 0.0
    teardown: float = 0.0
    check: float = 0.0
    wait: float = 0.0

    def before(self, position: int) -> float:
        """The gap expected before a step at `position` (for a first step: the last repetition's teardown, the
        check and the wait; the first repetition's opening, the run's setup, is counted as it goes)."""
        return self.teardown + self.check + self.wait if position == 0 else self.inner


def clock(seconds: float) -> str:
    """Seconds as h:mm:ss, or m:ss under an hour."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class StepClock:
    """A run's elapsed time and time left, from its session's events (one session).

    `past` is a comparable past session (or a callable that gives it once it is known: LabRun reads it when the
    run starts), used until the run has measured a repetition of its own.
    """

    def __init__(self, plan: Plan, started: float | None = None,
                 past: History | Callable[[], History | None] | None = None) -> None:
        self.plan = plan
        self.started = now() if started is None else started
        self._past = past
        self.times: list[StepTime] = []
        self._inner: list[float] = []
        self._teardowns: list[float] = []
        self._checks: list[float] = []
        #: Every repetition's wait for a busy host (from its quiet-wait line to its first step; 0: none), and those
        #: of them that found it busy.
        self._waits: list[float] = []
        self._busy_waits: list[float] = []
        #: The total time the step gate held steps (a person's pauses).
        self.held_s = 0.0
        self._repetition, self._position = 1, -1
        self._per_repetition = plan.steps_per_repetition  # as the engine runs them, once a step has said
        self._step_started: float | None = None
        self._last_end: float | None = None
        self._torn_down: float | None = None  # the last instance destroyed since the last step ended
        self._waiting_since: float | None = None  # the quiet-wait line since the last step ended
        self._ended: float | None = None

    @property
    def past(self) -> History | None:
        """The comparable past session this clock leans on (None: none is known)."""
        return self._past() if callable(self._past) else self._past

    def apply(self, event: Event) -> None:
        """Fold one event in; events other than a session's start and end, its steps, its instances' ends and its
        quiet-wait lines are ignored."""
        if isinstance(event, SessionStarted):
            self.started = event.ts
        elif isinstance(event, SessionEnded):
            self._ended = event.ts
        elif isinstance(event, Log):
            if event.category == QUIET_WAIT and self._step_started is None and self._waiting_since is None:
                self._waiting_since = event.ts
        elif isinstance(event, InstanceDestroyed):
            if self._step_started is None and self._last_end is not None:
                self._torn_down = event.ts
        elif isinstance(event, StepStarted):
            self._step_started_at(event)
        elif isinstance(event, StepEnded) and self._step_started is not None:
            self.times.append(StepTime(self._position, event.background, max(0.0, event.ts - self._step_started)))
            self._step_started, self._last_end = None, event.ts

    def _step_started_at(self, event: StepStarted) -> None:
        first = event.repetition != self._repetition or self._position < 0
        self._position = 0 if first else self._position + 1
        self._repetition = event.repetition
        self._per_repetition = event.steps or self._per_repetition
        self.held_s += event.held_s
        if not first:
            self._inner.append(max(0.0, event.ts - (self._last_end or self.started) - event.held_s))
        elif self._last_end is not None:  # the last repetition's teardown (the gate's hold is in it), the check
            torn_down = max(self._torn_down or 0.0, self._last_end + event.held_s)
            self._teardowns.append(max(0.0, torn_down - self._last_end - event.held_s))
            self._checks.append(max(0.0, (self._waiting_since or event.ts) - torn_down))
        if first:  # the opening's setup is not a gap: it does not come again
            busy = None if self._waiting_since is None else max(0.0, event.ts - self._waiting_since)
            self._waits.append(busy or 0.0)
            if busy is not None:
                self._busy_waits.append(busy)
        self._step_started, self._torn_down, self._waiting_since = event.ts, None, None

    # --- the estimate -----------------------------------------------------------------------------------------

    def durations(self) -> Durations | None:
        """The steps' expected durations (see the module): the parted line through the run's own steps once it
        has measured a repetition's worth of them, else a past session's, else the line through its own; at the
        speed of the run's latest steps.  None before MIN_STEPS steps with no past session."""
        per = self._per_repetition
        past = self.past
        shape: Shape | None
        if len(self.times) >= max(per, MIN_STEPS):
            shape = PartedLine.of(self.times, per)
        elif past is not None and len(past.clock.times) >= MIN_STEPS:  # its positions, by its own repetitions
            shape = PartedLine.of(past.clock.times, past.clock._per_repetition)
        else:
            shape = fit(self.times)
            if shape is not None and max(t.position for t in self.times) + 1 < per * SLOPE_SPAN:
                shape = Line(statistics.fmean(t.duration_s for t in self.times), 0.0)  # a slope this short is noise
        if shape is None:
            return None
        return Durations(shape, speed(self.times, shape, max(1.0, per * SPEED_HALF_LIFE)))

    def gaps(self) -> Gaps:
        """The gaps expected from here on: the run's own means, else the past session's, else 0 (see the module)."""
        past = self.past
        before = past.clock.gaps() if past is not None else Gaps()
        timeout = self.plan.quiet_timeout_s
        inner = _mean(self._inner) if self._inner else before.inner
        teardown = _mean(self._teardowns) if self._teardowns else before.teardown
        check = _mean(self._checks) if self._checks else before.check if past is not None else \
            (QUIET_POLL_S if timeout > 0 else 0.0)
        if self._waits:
            wait = _mean(self._waits)
        elif self._waiting_since is not None:  # the run's first wait, on a busy host: busy at each repetition
            wait = self.busy_wait()
        else:
            wait = before.wait
        return Gaps(inner, teardown, check, min(wait, timeout))

    def busy_wait(self) -> float:
        """Seconds a wait that found the host busy is expected to last (from its quiet-wait line): the mean of the
        busy waits seen, the timeout when none was."""
        seen = self._busy_waits or (self.past.clock._busy_waits if self.past is not None else [])
        return min(_mean(seen), self.plan.quiet_timeout_s) if seen else self.plan.quiet_timeout_s

    def waiting(self, at: float | None = None) -> float | None:
        """Seconds this wait for an idle host has lasted since the host was found busy; None when not waiting."""
        if self._waiting_since is None or self._ended is not None:
            return None
        return max(0.0, (now() if at is None else at) - self._waiting_since)

    def elapsed(self, at: float | None = None) -> float:
        """Seconds since the session started (until its end once ended)."""
        return max(0.0, (self._ended or (now() if at is None else at)) - self.started)

    def left(self, at: float | None = None) -> float | None:
        """Estimated seconds until the run ends (its last step and the teardown after it); None before MIN_STEPS
        steps ended when no past session is known."""
        line = self.durations()
        if line is None:
            return None
        at = now() if at is None else at
        gaps = self.gaps()
        positions = upcoming(self.plan, self._repetition, self._position, self._per_repetition)
        steps = sum(line.at(p) for p in positions)
        if self._step_started is not None:  # in a step: what its line says is still to come
            current = max(0.0, line.at(self._position) - (at - self._step_started))
            return current + steps + sum(gaps.before(p) for p in positions) + gaps.teardown
        return self._gap_left(at, positions, gaps) + steps + sum(gaps.before(p) for p in positions[1:]) + \
            (gaps.teardown if positions else 0.0)

    def _gap_left(self, at: float, positions: Sequence[int], gaps: Gaps) -> float:
        """What is left of the gap under way: before the next step, or the teardown after the last."""
        if self._waiting_since is not None:  # the host is busy: the wait goes on
            return max(0.0, self.busy_wait() - (at - self._waiting_since))
        if self._last_end is None:  # the opening, host not (yet) found busy: setup, counted as it goes
            return 0.0
        expected = gaps.before(positions[0]) if positions else gaps.teardown
        return max(0.0, expected - (at - self._last_end))

    def __str__(self) -> str:
        """The text a progress line shows now (so a Rich column can show `{task.fields[clock]}`)."""
        return self.text()

    def text(self, at: float | None = None) -> str:
        """`~3:40 left, 1:02 elapsed` (time left first: a narrow pane cuts the end), `left: estimating, ...` before
        MIN_STEPS steps (with no past session), `1:02 elapsed` alone once ended."""
        elapsed = f"{clock(self.elapsed(at))} elapsed"
        if self._ended is not None:
            return elapsed
        left = self.left(at)
        return ("left: estimating" if left is None else f"~{clock(left)} left") + f", {elapsed}"

    def waiting_text(self, at: float | None = None) -> str | None:
        """`waiting for an idle host before rep 2/5: 0:04 of at most 0:10` while a wait found the host busy, else
        None: what a progress line shows where it names the step."""
        waited = self.waiting(at)
        if waited is None:
            return None
        return (f"waiting for an idle host before rep {self.waiting_repetition()}/{self.plan.repetitions}: "
                f"{clock(waited)} of at most {clock(self.plan.quiet_timeout_s)}")

    def waiting_repetition(self) -> int:
        """The repetition a wait for an idle host under way comes before (the next one to start)."""
        return self._repetition + (self._position >= 0)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


# --- past sessions ---------------------------------------------------------------------------------------------

#: Keys of a suite's stored config that say what the suite is, not what it runs: a past session that differs
#: only in them is comparable (`backend` is the suite's default: the session's own backend is matched apart).
DESCRIPTIVE_KEYS = frozenset({"name", "description", "reproduces", "source", "overrides", "profile", "backend",
                              "operation_timeout_s"})


def comparable(config: Mapping[str, Any]) -> dict[str, Any]:
    """A suite's config (labtui.suites.serialize.suite_to_dict, or a session's stored config) without the keys
    that do not change what a run does: two runs of equal ones run the same levels, repetitions, worker runs and
    warm-ups, timeouts and programs."""
    return {key: value for key, value in config.items() if key not in DESCRIPTIVE_KEYS}


@dataclass(frozen=True, slots=True)
class PastRows:
    """What `read_history` read: the chosen session's rows (None when none is comparable), and how many of the
    suite's other sessions on the host and backend were passed over and why ("aborted", "other sizes", ...)."""

    session_id: str | None = None
    started: float | None = None
    ended: float | None = None
    #: (repetition, step, steps, background, started, ended, held_s, torn_down): torn_down is the last instance
    #: destroyed between the step's end and the next step's start (None: none).
    steps: list[tuple[Any, ...]] = field(default_factory=list)
    #: (ts, category) of its quiet-wait lines.
    waits: list[tuple[float, str]] = field(default_factory=list)
    passed_over: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class History:
    """A past comparable session's measured steps and gaps, to estimate a run of the same suite and sizes."""

    session_id: str
    clock: StepClock

    @property
    def steps(self) -> int:
        """Steps measured."""
        return len(self.clock.times)

    def estimate(self) -> float:
        """Seconds that session took from its start to its end, less the time its step gate held steps."""
        return max(0.0, self.clock.elapsed() - self.clock.held_s)

    def waited(self) -> float:
        """Seconds it waited for a busy host to go idle, before its repetitions."""
        return sum(self.clock._waits)

    @classmethod
    def from_rows(cls, rows: PastRows, plan: Plan) -> History | None:
        """The session `rows` holds replayed through a StepClock of `plan`; None when they hold none."""
        if rows.session_id is None or rows.started is None:
            return None
        past = StepClock(plan, rows.started)
        for event in session_events(rows):
            past.apply(event)
        return cls(rows.session_id, past)


def session_events(rows: PastRows) -> list[Event]:
    """The events a StepClock folds in, rebuilt from a session's stored rows in the order of their times (a step's
    start before its end at one time); none when `rows` holds no session."""
    if rows.session_id is None or rows.started is None:
        return []
    sid = rows.session_id
    events: list[Event] = [SessionStarted(sid, "", "", "", "", {}, 0, ts=rows.started)]
    events += [Log(sid, "info", category, "", ts=ts) for ts, category in rows.waits]
    for repetition, step, steps, background, started, ended, held_s, torn_down in rows.steps:
        events.append(StepStarted(sid, repetition, step, steps or 0, background or 0, held_s or 0.0, ts=started))
        if ended is not None:
            events.append(StepEnded(sid, repetition, step, background or 0, ts=ended))
        if torn_down is not None:
            events.append(InstanceDestroyed(sid, "", ts=torn_down))
    if rows.ended is not None:
        events.append(SessionEnded(sid, "completed", ts=rows.ended))
    return sorted(events, key=lambda e: e.ts)  # stable


_CANDIDATES_SQL = """
SELECT session_id, status, config, epoch(started_at), epoch(ended_at) FROM sessions
WHERE suite = ? AND host = ? AND backend = ?
ORDER BY started_at DESC NULLS LAST
"""

_STEPS_SQL = """
WITH s AS (
    SELECT repetition, step, steps, background, started_at, ended_at, coalesce(held_s, 0) AS held_s,
           lead(started_at) OVER (ORDER BY started_at) AS next_start
    FROM steps WHERE session_id = ? AND started_at IS NOT NULL
)
SELECT repetition, step, steps, background, epoch(started_at), epoch(ended_at), held_s,
       (SELECT epoch(max(i.destroyed_at)) FROM instances i
        WHERE i.session_id = ? AND i.destroyed_at >= s.ended_at
          AND (s.next_start IS NULL OR i.destroyed_at <= s.next_start)) AS torn_down
FROM s ORDER BY started_at
"""

_WAITS_SQL = f"SELECT epoch(ts), category FROM events WHERE session_id = ? AND category = '{QUIET_WAIT}' ORDER BY ts"


def session_rows(con: Any, session_id: str, started: float, ended: float | None) -> PastRows:
    """A session's steps and quiet-wait lines, read on an open DuckDB connection `con` to the store."""
    steps = con.execute(_STEPS_SQL, [session_id, session_id]).fetchall()
    waits = con.execute(_WAITS_SQL, [session_id]).fetchall()
    return PastRows(session_id, started, ended, steps, waits)


def read_history(db: str | os.PathLike[str], suite: str, host: str, backend: str, config: Mapping[str, Any],
                 wait: float | None = None) -> PastRows:
    """The rows of the latest session of `suite` on `host` and `backend` that completed with a config
    `comparable` to `config`; an empty PastRows when the store has none (or does not exist).  StoreError when
    the store cannot be read (held by another program for `wait` s: labtui.store.connect_readonly).  Reads the
    store: call it where DuckDB may load (a thread of the console, the store's own process)."""
    import duckdb

    from labtui.store import StoreError, connect_readonly

    if not Path(db).expanduser().is_file():
        return PastRows()
    wanted = comparable(config)
    passed: dict[str, int] = {}
    con = connect_readonly(db, wait=wait)
    try:
        for sid, status, stored, started, ended in con.execute(_CANDIDATES_SQL, [suite, host, backend]).fetchall():
            reason = "other sizes" if comparable(json.loads(stored or "{}")) != wanted else \
                (None if status == "completed" else str(status))
            if reason is not None:
                passed[reason] = passed.get(reason, 0) + 1
                continue
            return replace(session_rows(con, sid, started, ended), passed_over=passed)
    except duckdb.Error as exc:
        raise StoreError(f"cannot read store {db}: {exc}") from exc
    finally:
        con.close()
    return PastRows(passed_over=passed)


def history(db: str | os.PathLike[str], suite: str, host: str, backend: str, config: Mapping[str, Any],
            plan: Plan) -> tuple[History | None, dict[str, int]]:
    """The latest comparable completed session (`read_history`) as a History, or None; with the sessions passed
    over, by why."""
    rows = read_history(db, suite, host, backend, config)
    return History.from_rows(rows, plan), rows.passed_over


def passed_over_text(passed: Mapping[str, int]) -> str:
    """`2 of other sizes, 1 aborted` (empty when none was passed over)."""
    return ", ".join(f"{n} of other sizes" if why == "other sizes" else f"{n} {why}" for why, n in passed.items())


def before_run_text(where: str, plan: Plan, past: History | None, passed: Mapping[str, int]) -> str:
    """The start dialog's line: `time: about 0:42, as session S took (boot-scaling on local with process, the same
    sizes): 0:12 running, 0:30 waiting for an idle host (at most 0:10 before each of 3 repetitions)`, or why there
    is no estimate (`where` names the suite, host and backend)."""
    timeout, reps = plan.quiet_timeout_s, plan.repetitions
    if past is None:
        skipped = f" ({passed_over_text(passed)} passed over)" if passed else ""
        waits = f"; a busy host adds up to {clock(timeout)} before each of {reps} repetition(s)" if timeout > 0 else ""
        return f"time: no estimate: no completed session of {where} with these sizes in the store{skipped}{waits}"
    total, waited = past.estimate(), past.waited()
    text = f"time: about {clock(total)}, as session {past.session_id} took ({where}, the same sizes)"
    if timeout > 0:
        text += (f": {clock(total - waited)} running, {clock(waited)} waiting for an idle host (at most "
                 f"{clock(timeout)} before each of {reps} repetition(s))")
    return text
