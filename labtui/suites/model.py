"""What a suite file describes, once it has been read and checked.

The loader (``labtui.suites.loader``) does all validation and reports problems
with file and line; these classes only carry the checked values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: What a worker can measure: "boot" is create-to-exit time, "output" the
#: JSON lines the worker prints ({"benchmark", "metric", "value", "unit", "better"}),
#: "load" what a load tool on the host reads from the worker serving on a port.
WORKER_MEASURES = ("boot", "output", "load")
#: Load tools a "load" worker measure can run on the host.
LOAD_TOOLS = ("wrk", "redis-benchmark")

SUITE_NAME_PATTERN = r"^[a-z0-9][a-z0-9_.-]*$"
PROBE_NAME_PATTERN = r"^[a-z][a-z0-9_-]{0,31}$"


@dataclass(frozen=True, slots=True, kw_only=True)
class Scale:
    """How the background grows: a baseline at ``start``, then ``steps`` steps of ``per_step``."""

    start: int = 0
    steps: int
    per_step: int

    def levels(self) -> tuple[int, ...]:
        """Background instance counts at each measurement, baseline first."""
        return tuple(self.start + i * self.per_step for i in range(self.steps + 1))

    def total_background(self) -> int:
        """Background instances running at the last measurement."""
        return self.start + self.steps * self.per_step


@dataclass(frozen=True, slots=True)
class Program:
    """What an instance runs: a probe (``program``), an image, or a real tool on the host (``tool``, an
    absolute path, run with ``args``); exactly one of them."""

    program: str | None = None
    image: str | None = None
    args: tuple[str, ...] = ()
    tool: str | None = None


@dataclass(frozen=True, slots=True)
class Worker(Program):
    """The measured instance, started ``runs`` times at every step."""

    measure: str = "boot"
    #: With measure = "output": which parser reads the output (one of labtui.parsers.registry.WORKER_OUTPUTS).
    output: str = "probe"
    runs: int = 1
    #: Adaptive runs: after ``runs``, one more run at a time while any metric's
    #: coefficient of variation at this step is above ``target_cv``, up to
    #: ``max_runs`` in all (None: exactly ``runs``).  Every run's readings are kept.
    max_runs: int | None = None
    target_cv: float | None = None
    #: Discarded runs just before the measured ones at every step, so that a
    #: measurement after an idle pause (the baseline, a manual step) is not
    #: charged the cost of cold kernel and engine paths.
    warmup: int = 1


@dataclass(frozen=True, slots=True)
class Load:
    """The load tool run on the host against a ``measure = "load"`` worker's published port.

    wrk uses ``connections``, ``threads`` and ``duration_s``; redis-benchmark
    uses ``connections`` (its clients), ``requests``, ``pipeline`` and
    ``tests`` (empty: all of its tests).
    """

    tool: str = "wrk"
    port: int = 80
    connections: int = 30
    threads: int = 14
    duration_s: int = 20
    requests: int = 100000
    pipeline: int = 16
    tests: tuple[str, ...] = ()
    #: Seconds the worker may take to answer on its port once started.
    ready_timeout_s: float = 30.0
    #: Seconds one run of the tool may take before the step fails.
    timeout_s: float = 900.0


@dataclass(frozen=True, slots=True)
class Measure:
    """Extra measurements at every step."""

    memory: bool = False


@dataclass(frozen=True, slots=True)
class BackendSettings:
    """``[backend]``: settings handed to the run's backend, which refuses one it does not take."""

    #: The runtime the engine runs instances with (docker: runc, runsc, ...; None: the engine's default).
    runtime: str | None = None


@dataclass(frozen=True, slots=True)
class Sampling:
    """Timing of measurements, in seconds."""

    interval_s: float = 1.0
    settle_s: float = 0.0
    #: Before each repetition, wait at most this long for the host to go quiet
    #: (CPU at least 90% idle) after the previous teardown; 0 does not wait.
    quiet_timeout_s: float = 10.0


@dataclass(frozen=True, slots=True)
class Suite:
    """A checked suite file, with the ``--set`` overrides that were applied to it."""

    name: str
    description: str
    kind: str
    repetitions: int
    scale: Scale | None
    worker: Worker | None
    background: Program | None
    measure: Measure
    sampling: Sampling
    source: str
    overrides: tuple[str, ...] = ()
    attacker: Program | None = None
    #: The settings of the tables only its kind reads (``labtui.suites.kinds``), as (table name, settings) pairs;
    #: ``table`` reads one.
    settings: tuple[tuple[str, Any], ...] = ()
    load: Load | None = None
    #: Seconds any one backend call of a run may take (plus 2 s per instance in a batch).
    operation_timeout_s: float = 120.0
    #: The backend a run uses when --backend does not name one (None: the process backend).
    backend: str | None = None
    #: Which study, section and figure or table the suite reproduces, as `labtui suites` shows it.
    reproduces: str = ""
    #: The ``[profiles.NAME]`` table applied before the ``--set`` overrides (None: no profile).
    profile: str | None = None
    #: ``[backend]`` settings (``--set backend.runtime=runsc``), given to the backend before the run.
    backend_settings: BackendSettings = BackendSettings()

    def total_background(self) -> int:
        """Background instances running at the last step (0 without a [scale])."""
        return self.scale.total_background() if self.scale else 0

    def table(self, cls: type[T]) -> T:
        """The settings of the kind's own table of class ``cls`` (its defaults when the suite has none)."""
        return next((value for _, value in self.settings if isinstance(value, cls)), cls())


@dataclass(frozen=True, slots=True)
class SuiteInfo:
    """A built-in suite as listed."""

    name: str
    description: str
    kind: str
    path: Path
    reproduces: str = ""
