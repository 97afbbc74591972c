"""How the engine runs and plans each experiment kind, as the kind's module (``labtui.suites.kinds``) names it.

Every face shows the same plan for every kind: ``plan_for`` is the one place a suite's steps are listed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from labtui.suites.kinds import kind_named, resolve
from labtui.suites.model import Suite

if TYPE_CHECKING:
    from labtui.backends.base import Backend
    from labtui.engine.context import RunContext


@dataclass(frozen=True, slots=True)
class Plan:
    """What one run of a suite will do: its repetitions, one line per step of a repetition, and how long it may
    wait for an idle host before each repetition (`sampling.quiet_timeout_s`; 0: it does not wait)."""

    kind: str
    repetitions: int
    steps: tuple[str, ...]
    quiet_timeout_s: float = 0.0

    @property
    def steps_per_repetition(self) -> int:
        return len(self.steps)

    @property
    def total_steps(self) -> int:
        return self.repetitions * len(self.steps)

    def next_step(self, repetition: int, step: int) -> str:
        """What "next" does after step `step` of repetition `repetition` (both as events number them)."""
        if step + 1 < len(self.steps):
            return f"rep {repetition}/{self.repetitions}, step {step + 1}: {self.steps[step + 1]}"
        if repetition < self.repetitions:
            return f"rep {repetition + 1}/{self.repetitions}, step 0: {self.steps[0]}"
        return "end of the run: teardown"


def _no_check(suite: Suite, backend: Backend) -> None:
    """A kind that any backend can run (what its programs need is checked for every kind)."""


@dataclass(frozen=True, slots=True)
class ExperimentKind:
    """A kind as the engine runs it: how it runs, how it plans, and what it needs of a backend
    (`check`: BackendError, before anything is created, when the backend cannot run the suite)."""

    name: str
    run: Callable[[RunContext], Awaitable[None]]
    plan: Callable[[Suite], tuple[str, ...]]
    check: Callable[[Suite, Backend], None] = _no_check


def experiment_kind(name: str) -> ExperimentKind:
    """The kind a suite names, with its engine functions; ValueError, in the suite model's words, for one that
    cannot run."""
    kind = kind_named(name)
    check = resolve(kind.backend_check) if kind.backend_check else _no_check
    return ExperimentKind(name, resolve(kind.run), resolve(kind.plan), check)


def plan_for(suite: Suite) -> Plan:
    """The plan of a suite's run; ValueError for a kind that cannot run."""
    return Plan(suite.kind, suite.repetitions, experiment_kind(suite.kind).plan(suite), suite.sampling.quiet_timeout_s)
