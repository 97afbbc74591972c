"""What an experiment kind is: the one record (``Kind``) each kind's module in ``labtui.suites.kinds`` declares.

A kind's module names everything about it in one place: what a run of it does, the suite tables it reads
(their keys and the settings class each becomes), what a suite of it must and may hold, how it is checked,
how many steps a repetition has, and, by ``module:function`` reference (so that suites never import the
layers above them), how the engine runs and plans it, what it needs of a backend, the report's figures and
the end-of-run table the CLI prints for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labtui.suites.key_types import Key
from labtui.suites.model import Scale, Suite, Worker
from labtui.suites.source import Source


@dataclass(frozen=True, slots=True)
class KindCheck:
    """What a kind's check sees of a suite being read: its raw tables, its [suite] values, the parts built so far
    (its own settings by table name) and the source that errors point into."""

    raw: Mapping[str, Any]
    head: Mapping[str, Any]
    scale: Scale | None
    worker: Worker | None
    settings: Mapping[str, Any]
    src: Source


def _no_check(check: KindCheck) -> None:
    """A kind with no rule beyond its tables' keys."""


def background_steps(suite: Suite) -> int:
    """A background scale's measurements: the baseline, then one per step (1 without a [scale])."""
    return suite.scale.steps + 1 if suite.scale else 1


def background_and_worker(suite: Suite) -> int:
    """Most instances alive at once when a background grows: all of it, plus the worker."""
    return suite.total_background() + (1 if suite.worker else 0)


def background_axis(config: Mapping[str, Any]) -> str:
    """The x axis of a step-wise figure of a kind that grows a background."""
    return "background instances"


@dataclass(frozen=True, slots=True)
class Kind:
    """One experiment kind, as its module declares it (``KIND``)."""

    #: The suite's ``kind`` value.
    name: str
    #: What a run of it does, in a line (`labtui suites`, errors).
    description: str
    #: ``module:function`` the engine runs it with: ``async run(ctx: RunContext) -> None``.
    run: str
    #: ``module:function`` giving one line per step of a repetition: ``plan(suite) -> tuple[str, ...]``.
    plan: str
    #: Tables only this kind reads: name -> (the settings class built from it, its keys).
    tables: Mapping[str, tuple[type, Mapping[str, Key]]] = field(default_factory=dict)
    #: Shared tables (``scale``, ``background``, ``attacker``) it may have; a kind that does not name one refuses it.
    shares: tuple[str, ...] = ()
    #: Tables a suite of this kind must have.
    needs: tuple[str, ...] = ()
    #: Whether its worker may be a service a load tool measures (``measure = "load"``).
    serves_load: bool = False
    #: Whether it measures its own instances, so that a suite with neither a worker nor memory sampling is fine.
    measures_itself: bool = False
    #: Rules across keys, raising ``check.src.error(...)``.
    check: Callable[[KindCheck], None] = _no_check
    #: Measurements per repetition of a suite of this kind.
    steps: Callable[[Suite], int] = background_steps
    #: Most instances alive at once.
    most_instances: Callable[[Suite], int] = background_and_worker
    #: The x axis of its step-wise figures, from the stored suite config.
    axis: Callable[[Mapping[str, Any]], str] = background_axis
    #: ``module:function`` raising BackendError before anything is created when a backend cannot run the suite.
    backend_check: str | None = None
    #: ``module:function`` of the report's figures for it: ``charts(sessions) -> list[Chart]`` (None: none of its own).
    charts: str | None = None
    #: ``module:function`` printing its own end-of-run table: ``summary(console, db, session_id) -> bool`` (False,
    #: or None here: the metric table every kind has).
    summary: str | None = None
