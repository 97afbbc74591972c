"""Experiment kinds, found by registration: each engine module of a kind defines ``KIND``.

A kind is how to run a suite (``run``) and what a run of it will do, step by
step (``plan``), so that every face shows the same plan for every kind and
adding a kind touches its engine module and the suite model, nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from labtui.suites.model import Suite

if TYPE_CHECKING:
    from labtui.engine.context import RunContext


@dataclass(frozen=True, slots=True)
class Plan:
    """What one run of a suite will do: its repetitions, and one line per step of a repetition."""

    kind: str
    repetitions: int
    steps: tuple[str, ...]

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


@dataclass(frozen=True, slots=True)
class ExperimentKind:
    """A registered kind: its suite `kind` name, how it runs, and how it plans."""

    name: str
    run: Callable[[RunContext], Awaitable[None]]
    plan: Callable[[Suite], tuple[str, ...]]


@cache
def kinds() -> dict[str, ExperimentKind]:
    """Every kind defined by a module of labtui.engine (a module-level ``KIND``), by name."""
    import labtui.engine as package

    found: dict[str, ExperimentKind] = {}
    for module in pkgutil.iter_modules(package.__path__):
        kind = getattr(importlib.import_module(f"{package.__name__}.{module.name}"), "KIND", None)
        if isinstance(kind, ExperimentKind):
            found[kind.name] = kind
    return found


def plan_for(suite: Suite) -> Plan:
    """The plan of a suite's run; ValueError for a kind no engine module defines."""
    kind = kinds().get(suite.kind)
    if kind is None:
        raise ValueError(f"suite kind {suite.kind!r} is not supported; supported: {', '.join(sorted(kinds()))}")
    return Plan(suite.kind, suite.repetitions, kind.plan(suite))
