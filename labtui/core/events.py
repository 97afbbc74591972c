"""Typed event records shared by the engine, the store and the UI.

This module sits below everything else: it imports nothing from labtui, so the
engine, the store and the console can all depend on it without depending on
each other.  Every timestamp is seconds since the epoch (float, UTC).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

Better = Literal["higher", "lower"]
Level = Literal["debug", "info", "warning", "error"]
SessionStatus = Literal["running", "completed", "failed", "aborted", "crashed"]


def now() -> float:
    """Wall-clock time in seconds since the epoch."""
    return time.time()


@dataclass(frozen=True, slots=True)
class SessionStarted:
    session_id: str
    suite: str
    kind: str
    backend: str
    host: str
    config: dict[str, Any]
    pid: int
    ts: float = field(default_factory=now)
    #: The user's own labels (`labtui run --tag KEY=VALUE`) and note (`--note TEXT`).
    tags: dict[str, str] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True, slots=True)
class SessionEnded:
    session_id: str
    status: SessionStatus
    message: str = ""
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class HostFacts:
    session_id: str
    host: str
    os: str
    kernel: str
    arch: str
    cpu_model: str
    cores: int
    mem_total_bytes: int
    backend: str
    backend_version: str
    isolation: str
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class StepStarted:
    session_id: str
    repetition: int
    step: int
    steps: int
    background: int
    #: Seconds the step gate held this step before it started (a manual run waiting for next; else 0).
    held_s: float = 0.0
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class StepEnded:
    session_id: str
    repetition: int
    step: int
    background: int
    ok: bool = True
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class InstanceCreating:
    """Intent: the engine is about to ask a backend for this instance."""

    session_id: str
    instance_id: str
    host: str
    backend: str
    role: str
    name: str
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class InstanceReady:
    session_id: str
    instance_id: str
    created_at: float
    ready_at: float
    boot_s: float
    state: str
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class InstanceDestroyed:
    session_id: str
    instance_id: str
    state: str = "destroyed"
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class InstanceDestroying:
    """Intent: the engine is about to ask a backend to destroy this instance."""

    session_id: str
    instance_id: str
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class Result:
    session_id: str
    repetition: int
    step: int
    background: int
    host: str
    instance_id: str
    benchmark: str
    metric: str
    value: float
    unit: str
    better: Better
    ts: float = field(default_factory=now)
    #: Where an isolation run placed the attacker ("alone", "same-thread", ...); "" otherwise.
    placement: str = ""
    #: Which of the worker's runs one after another at this measurement (1, 2, ...; worker.runs);
    #: 0 for what was measured at once (the instances of one concurrent step) or once per step.
    run: int = 0


@dataclass(frozen=True, slots=True)
class ResourceSample:
    """One reading of a host's resources; availabilities are shares in [0, 1]."""

    host: str
    cpu_avail: float | None
    mem_avail: float | None
    swap_avail: float | None
    mem_used_bytes: int | None
    load1: float | None
    ts: float = field(default_factory=now)
    session_id: str = ""
    instances: int = 0


@dataclass(frozen=True, slots=True)
class ObserverSample:
    """One reading of labtui's own share of the host while it measures: the observer's cost beside the host's.

    `rss_bytes` and `cpu_s` are the run process's resident memory and its CPU time (user + system) since
    it started; `helper_rss_bytes` and `helper_cpu_s` are the same summed over labtui's own helper
    processes (0 when there are none).  labtui.core.observer.own_usage reads them.
    """

    session_id: str
    rss_bytes: int
    cpu_s: float
    helper_rss_bytes: int
    helper_cpu_s: float
    ts: float = field(default_factory=now)


@dataclass(frozen=True, slots=True)
class Log:
    """A line of the session's log; `category` says what it is about (step, teardown, backend, reconcile, ...)."""

    session_id: str
    level: Level
    category: str
    message: str
    ts: float = field(default_factory=now)


Event = (
    SessionStarted
    | SessionEnded
    | HostFacts
    | StepStarted
    | StepEnded
    | InstanceCreating
    | InstanceReady
    | InstanceDestroying
    | InstanceDestroyed
    | Result
    | ResourceSample
    | ObserverSample
    | Log
)
