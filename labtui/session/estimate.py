"""Time left in a run: fit the steps' durations against their place in a repetition, extrapolate over the plan.

Steps get slower as a repetition goes on (the background grows), so a step's
duration is fitted by least squares as a line in its position (0 for the first
step of a repetition) and the line is summed over the plan's steps still to
run.  What passes between steps is added as the mean gap seen so far, kept
apart for a repetition's first step (setup or the last repetition's teardown,
waiting for a quiet host) and for the others.  The time the step gate held a
step (a manual run waiting for next: StepStarted.held_s) is not a gap: a
person's pauses are left out, so a past manual session estimates a run as well
as an automatic one.  The CLI's progress line, the console's Run view
and the start dialog all use this module; the dialog's estimate before a run
comes from a past session of the same suite on the same host and backend
(`history`).
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from labtui.core.events import Event, SessionEnded, SessionStarted, StepEnded, StepStarted, now
from labtui.engine.kinds import Plan

#: Steps that must have ended before the time left is estimated.
MIN_STEPS = 2


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

    With every step at one position (one step per repetition) the line is flat at their mean.
    """
    if len(times) < MIN_STEPS:
        return None
    x = [float(t.position) for t in times]
    y = [t.duration_s for t in times]
    if min(x) == max(x):
        return Line(statistics.fmean(y), 0.0)
    slope, intercept = statistics.linear_regression(x, y)  # the stdlib: a run's process loads no numpy
    return Line(intercept, slope)


def upcoming(plan: Plan, repetition: int, position: int) -> list[int]:
    """Positions of the plan's steps after the one at `position` of `repetition` (1-based, as events number it);
    (1, -1) gives the whole plan."""
    steps = plan.steps_per_repetition
    rest = list(range(position + 1, steps))
    return rest + list(range(steps)) * max(0, plan.repetitions - repetition)


@dataclass(frozen=True, slots=True)
class Gaps:
    """Mean seconds between steps: before a repetition's first step (setup or the last repetition's teardown, and
    waiting for a quiet host), and before any other step."""

    first: float = 0.0
    inner: float = 0.0

    def before(self, position: int) -> float:
        """The gap expected before a step at `position`."""
        return self.first if position == 0 else self.inner


def time_left(line: Line, positions: Sequence[int], gaps: Gaps = Gaps()) -> float:
    """Seconds for the steps at `positions`: the line summed over them, plus the gap before each."""
    return sum(line.at(p) + gaps.before(p) for p in positions)


def clock(seconds: float) -> str:
    """Seconds as h:mm:ss, or m:ss under an hour."""
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class StepClock:
    """A run's elapsed time and time left, from its session's and steps' events (one session)."""

    def __init__(self, plan: Plan, started: float | None = None) -> None:
        self.plan = plan
        self.started = now() if started is None else started
        self.times: list[StepTime] = []
        self._first_gaps: list[float] = []
        self._inner_gaps: list[float] = []
        self._repetition, self._position = 1, -1
        self._step_started: float | None = None
        self._last_end: float | None = None
        self._ended: float | None = None

    def apply(self, event: Event) -> None:
        """Fold one event in; events other than a session's start, end and steps are ignored."""
        if isinstance(event, SessionStarted):
            self.started = event.ts
        elif isinstance(event, SessionEnded):
            self._ended = event.ts
        elif isinstance(event, StepStarted):
            self._position = self._position + 1 if event.repetition == self._repetition else 0
            self._repetition = event.repetition
            self._step_started = event.ts
            gap = max(0.0, event.ts - (self.started if self._last_end is None else self._last_end) - event.held_s)
            (self._first_gaps if self._position == 0 else self._inner_gaps).append(gap)
        elif isinstance(event, StepEnded) and self._step_started is not None:
            self.times.append(StepTime(self._position, event.background, max(0.0, event.ts - self._step_started)))
            self._step_started, self._last_end = None, event.ts

    def gaps(self) -> Gaps:
        """The mean gaps measured so far (none yet: 0)."""
        return Gaps(_mean(self._first_gaps), _mean(self._inner_gaps))

    def elapsed(self, at: float | None = None) -> float:
        """Seconds since the session started (until its end once ended)."""
        return max(0.0, (self._ended or (now() if at is None else at)) - self.started)

    def left(self, at: float | None = None) -> float | None:
        """Estimated seconds until the last step ends; None before MIN_STEPS steps ended."""
        line = fit(self.times)
        if line is None:
            return None
        at = now() if at is None else at
        gaps = self.gaps()
        positions = upcoming(self.plan, self._repetition, self._position)
        rest = time_left(line, positions, gaps)
        if self._step_started is not None:  # in a step: what its fit says is still to come
            rest += max(0.0, line.at(self._position) - (at - self._step_started))
        elif positions and self._last_end is not None:  # between steps: the part of the gap already waited
            rest -= min(gaps.before(positions[0]), at - self._last_end)
        return rest

    def whole_run(self, plan: Plan) -> float | None:
        """Seconds a whole run of `plan` would take by the steps and gaps measured here; None before MIN_STEPS."""
        line = fit(self.times)
        return None if line is None else time_left(line, upcoming(plan, 1, -1), self.gaps())

    def __str__(self) -> str:
        """The text a progress line shows now (so a Rich column can show `{task.fields[clock]}`)."""
        return self.text()

    def text(self, at: float | None = None) -> str:
        """`~3:40 left, 1:02 elapsed` (time left first: a narrow pane cuts the end), `left: estimating, ...` before
        MIN_STEPS steps, `1:02 elapsed` alone once ended."""
        elapsed = f"{clock(self.elapsed(at))} elapsed"
        if self._ended is not None:
            return elapsed
        left = self.left(at)
        return ("left: estimating" if left is None else f"~{clock(left)} left") + f", {elapsed}"


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass(frozen=True, slots=True)
class History:
    """A past session's measured steps, to estimate a run of the same suite before it starts."""

    session_id: str
    clock: StepClock
    #: Steps per repetition of that session (a plan of another length is extrapolated to).
    per_repetition: int

    @property
    def steps(self) -> int:
        """Steps measured."""
        return len(self.clock.times)

    def estimate(self, plan: Plan) -> float | None:
        """Seconds for a whole run of `plan` by this session's steps; None when it measured too few."""
        return self.clock.whole_run(plan)


_HISTORY_SQL = """
WITH last AS (
    SELECT s.session_id, epoch(s.started_at) AS session_started FROM sessions s
    WHERE s.suite = ? AND s.host = ? AND s.backend = ?
      AND (SELECT count(*) FROM steps t WHERE t.session_id = s.session_id AND t.ended_at IS NOT NULL) >= ?
    ORDER BY (SELECT max(t.steps) FROM steps t WHERE t.session_id = s.session_id) = ? DESC,
             s.started_at DESC
    LIMIT 1
)
SELECT t.session_id, last.session_started, t.repetition, t.step, t.steps, t.background,
       epoch(t.started_at) AS started, epoch(t.ended_at) AS ended, coalesce(t.held_s, 0) AS held_s
FROM steps t JOIN last USING (session_id)
WHERE t.started_at IS NOT NULL
ORDER BY t.started_at
"""


def history(db: str | os.PathLike[str], suite: str, host: str, backend: str, plan: Plan) -> History | None:
    """The measured steps of the latest session of `suite` on `host` and `backend` in the store (one with as
    many steps per repetition as `plan` first); None when the store has none or does not exist.
    StoreError when the store cannot be read."""
    from labtui.store import fetch_frame

    if not Path(db).expanduser().is_file():
        return None
    rows = fetch_frame(db, _HISTORY_SQL, [suite, host, backend, MIN_STEPS, plan.steps_per_repetition]).rows()
    if not rows:
        return None
    session_id, started = rows[0][0], rows[0][1]
    past = StepClock(plan, rows[0][6] if started is None else started)
    for _sid, _started, repetition, step, steps, background, step_started, step_ended, held_s in rows:
        past.apply(StepStarted(session_id, repetition, step, steps or 0, background or 0, held_s, ts=step_started))
        if step_ended is not None:
            past.apply(StepEnded(session_id, repetition, step, background or 0, ts=step_ended))
    return History(session_id, past, max(row[4] or 0 for row in rows))
