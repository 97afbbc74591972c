"""What the run view shows, kept in memory from engine events (no Textual, no I/O).

While the console runs a session the store file is held by the session's
writer, so the live panes read only this model: it is fed every event the
engine publishes and keeps each series bounded.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from labtui.core.events import (
    Event,
    InstanceCreating,
    InstanceDestroyed,
    InstanceDestroying,
    InstanceReady,
    ResourceSample,
    Result,
    SessionEnded,
    SessionStarted,
    StepEnded,
    StepStarted,
)

if TYPE_CHECKING:
    import polars as pl

#: Resource samples kept per host (ten minutes at one per second).
SAMPLES_KEPT = 600
#: Results kept for the chart and the slowdown table.
RESULTS_KEPT = 100_000

#: Columns of a results frame (the store's results table's), and of an availability frame.
RESULT_COLUMNS = ("session_id", "repetition", "step", "background", "benchmark", "metric", "unit", "better", "value",
                  "placement", "run")
AVAIL_COLUMNS = ("host", "background", "cpu_avail", "mem_avail", "swap_avail")


def _frame(rows: list[tuple], columns: tuple[str, ...]) -> pl.DataFrame:
    """Rows as a polars frame with the results table's column types (polars is imported on first use)."""
    import polars as pl

    types = {"session_id": pl.String, "repetition": pl.Int64, "step": pl.Int64, "background": pl.Int64,
             "benchmark": pl.String, "metric": pl.String, "unit": pl.String, "better": pl.String,
             "value": pl.Float64, "placement": pl.String, "run": pl.Int64, "host": pl.String, "cpu_avail": pl.Float64,
             "mem_avail": pl.Float64, "swap_avail": pl.Float64}
    return pl.DataFrame(rows, schema={c: types[c] for c in columns}, orient="row")


@dataclass
class HostState:
    """One host's latest readings and bounded history."""

    name: str
    connected: bool = True
    samples: deque[ResourceSample] = field(default_factory=lambda: deque(maxlen=SAMPLES_KEPT))

    @property
    def latest(self) -> ResourceSample | None:
        return self.samples[-1] if self.samples else None


@dataclass
class InstanceState:
    backend: str
    role: str
    state: str


@dataclass
class RunModel:
    """Session progress, instance counts, results and host samples from events."""

    session_id: str = ""
    suite: str = ""
    backend: str = ""
    host: str = ""
    status: str = "idle"
    message: str = ""
    repetition: int = 0
    repetitions: int = 0
    #: The engine's step index (an isolation run numbers a placement by its place in PLACEMENTS).
    step: int = -1
    #: Where the current step is in the plan: 0 for the first step started in this repetition.
    position: int = -1
    steps: int = 0
    background: int = 0
    steps_done: int = 0
    hosts: dict[str, HostState] = field(default_factory=dict)
    instances: dict[str, InstanceState] = field(default_factory=dict)
    results: deque[tuple] = field(default_factory=lambda: deque(maxlen=RESULTS_KEPT))
    availability: deque[tuple] = field(default_factory=lambda: deque(maxlen=RESULTS_KEPT))
    version: int = 0

    def reset(self, suite: str, backend: str, host: str, repetitions: int, steps: int) -> None:
        """Start over for a new session, keeping host histories."""
        self.session_id, self.suite, self.backend, self.host = "", suite, backend, host
        self.status, self.message = "starting", ""
        self.repetition, self.repetitions, self.step, self.position, self.steps = 0, repetitions, -1, -1, steps
        self.background = self.steps_done = 0
        self.instances.clear()
        self.results.clear()
        self.availability.clear()
        self.version += 1

    @property
    def total_steps(self) -> int:
        return self.repetitions * self.steps

    def apply(self, event: Event) -> None:
        """Fold one engine event into the model."""
        self.version += 1
        match event:
            case SessionStarted():
                self.session_id, self.suite, self.status = event.session_id, event.suite, "running"
                self.backend, self.host = event.backend, event.host
            case SessionEnded():
                self.status, self.message = event.status, event.message
            case StepStarted():
                self.position = self.position + 1 if event.repetition == self.repetition else 0
                self.repetition, self.step, self.steps = event.repetition, event.step, event.steps
                self.background = event.background
            case StepEnded():
                self.steps_done += 1
            case InstanceCreating():
                self.instances[event.instance_id] = InstanceState(event.backend, event.role, "creating")
            case InstanceReady():
                if known := self.instances.get(event.instance_id):
                    known.state = event.state
            case InstanceDestroying():
                if known := self.instances.get(event.instance_id):
                    known.state = "destroying"
            case InstanceDestroyed():
                self.instances.pop(event.instance_id, None)
            case Result():
                self.results.append(
                    (event.session_id, event.repetition, event.step, event.background, event.benchmark,
                     event.metric, event.unit, event.better, event.value, event.placement, event.run)
                )
            case ResourceSample():
                self.add_sample(event)

    def add_sample(self, sample: ResourceSample) -> None:
        """Record a host reading; during a step it also counts against the background."""
        state = self.hosts.setdefault(sample.host, HostState(sample.host))
        state.connected = True
        state.samples.append(sample)
        if self.status == "running" and self.step >= 0:
            self.availability.append(
                (sample.host, self.background, sample.cpu_avail, sample.mem_avail, sample.swap_avail)
            )
        self.version += 1

    def counts(self) -> Counter[tuple[str, str, str]]:
        """Live instances by (backend, state, role)."""
        return Counter((i.backend, i.state, i.role) for i in self.instances.values())

    def results_frame(self) -> pl.DataFrame:
        return _frame(list(self.results), RESULT_COLUMNS)

    def availability_frame(self) -> pl.DataFrame:
        return _frame(list(self.availability), AVAIL_COLUMNS)
