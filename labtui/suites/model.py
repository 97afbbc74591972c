"""What a suite file describes, once it has been read and checked.

The loader (``labtui.suites.loader``) does all validation and reports problems
with file and line; these classes only carry the checked values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: The suite kinds that can run, each with what a run of it does. The engine runs each one
#: (``labtui.engine.kinds.EXPERIMENT_KINDS``, the same keys); a suite of any other kind is refused.
SUITE_KINDS: dict[str, str] = {
    "scaling": "add background instances step by step and re-measure the worker",
    "isolation": "the worker alone, then beside an attacker at each placement",
    "concurrent": "the same benchmark in n instances at once",
    "creation": "create instance n while instances 1..n-1 keep running, and re-measure",
    "fairshare": "CPU share achieved against share requested",
}
#: What a worker can measure: "boot" is create-to-exit time, "output" the
#: JSON lines the worker prints ({"benchmark", "metric", "value", "unit", "better"}),
#: "load" what a load tool on the host reads from the worker serving on a port.
WORKER_MEASURES = ("boot", "output", "load")
#: How a worker's output is read: labtui's probe lines, or a real tool's own output (stdout and stderr),
#: by the parsers of ``labtui.parsers``.
WORKER_OUTPUTS = ("probe", "lmbench", "unixbench", "sysbench", "stress-ng")
#: Load tools a "load" worker measure can run on the host.
LOAD_TOOLS = ("wrk", "redis-benchmark")
#: Suite kinds whose worker may be a service measured by a load tool (a fresh one per measured run).
LOAD_KINDS = ("scaling", "isolation")
#: Where an isolation run puts the attacker, in the order they are measured.
#: "alone" is the baseline: the worker without an attacker.
PLACEMENTS = ("alone", "same-thread", "sibling-thread", "other-core", "all-other-cores")
#: Where a creation run runs its benchmark after each new instance: on the host itself
#: (the global zone, Domain-0: R_n), in the first instance (R'_n), in all of them at once (S_n).
CREATION_WHERE = ("host", "first", "all")



def unsupported_kind(kind: str) -> str | None:
    """Why a suite of ``kind`` cannot run (the one wording of it), or None when it can."""
    if kind in SUITE_KINDS:
        return None
    return f"unknown kind {kind!r}; supported kinds: {', '.join(SUITE_KINDS)}"


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
    #: With measure = "output": which parser reads the output (one of WORKER_OUTPUTS).
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
class Isolation:
    """An isolation run: the placements measured, and the wait after starting attackers."""

    placements: tuple[str, ...] = PLACEMENTS
    settle_s: float = 0.5


@dataclass(frozen=True, slots=True)
class Concurrent:
    """A concurrent run: how many workers run the benchmark at once, one step per count."""

    instances: tuple[int, ...] = (1, 2, 4, 8)
    #: Seconds between creating the workers and their common start.
    start_delay_s: float = 1.0


@dataclass(frozen=True, slots=True)
class Creation:
    """A creation run: where the benchmark runs after each new instance, and the common start of "all"."""

    where: str = "host"
    #: Seconds between arming the common start and the start itself (where = "all").
    start_delay_s: float = 1.0


#: How a fairshare run reserves a share for one instance, and how it measures what each received.
FAIRSHARE_METHODS = ("weight", "cap")
FAIRSHARE_MEASURES = ("output", "cpu_time")
#: Everyone's CPU weight on the InstanceSpec.cpu_weight scale (cgroup v2's cpu.weight).
DEFAULT_CPU_WEIGHT = 100


@dataclass(frozen=True, slots=True)
class Fairshare:
    """A fairshare run: CPU share achieved against requested (VServer/Xen paper, 5.1 and Table 3).

    ``instances`` CPU-bound instances run at once on the CPU set ``cpus`` (None:
    every CPU of the host) for ``duration_s``: first with equal shares, then once
    per method with the first instance reserved ``reserved_share`` of the set.
    ``measure = "output"`` reads the share each probe reports (Hourglass);
    ``"cpu_time"`` reads each instance's CPU time from the backend's listing.
    """

    instances: int = 8
    reserved_share: float = 0.25
    methods: tuple[str, ...] = FAIRSHARE_METHODS
    duration_s: float = 60.0
    cpus: str | None = None
    measure: str = "output"
    #: What the instances run (None: ``hourglass`` for "output", ``attack-cpu`` for "cpu_time").
    program: str | None = None
    image: str | None = None
    #: Seconds between creating the instances and their common start (or the measured window).
    start_delay_s: float = 1.0

    def configurations(self) -> tuple[str, ...]:
        """A repetition's configurations in order: "equal", then each method."""
        return ("equal", *self.methods)

    def probe(self) -> str | None:
        """The probe the instances run (None when they run an image)."""
        if self.image is not None:
            return None
        return self.program or ("hourglass" if self.measure == "output" else "attack-cpu")

    def requested(self, configuration: str) -> tuple[float, float]:
        """Share of the CPU set requested for the reserved instance and for each of the others."""
        if configuration == "equal":
            return 1 / self.instances, 1 / self.instances
        return self.reserved_share, (1 - self.reserved_share) / (self.instances - 1)

    def weights(self) -> tuple[int, int]:
        """CPU weights (reserved, each other) that make the reserved one's weight its share of all weights."""
        reserved, other = self.requested("weight")
        return round(DEFAULT_CPU_WEIGHT * reserved / other), DEFAULT_CPU_WEIGHT

    def caps(self, cpus: int) -> tuple[float, float]:
        """CPU caps (reserved, each other) in CPUs that split a set of ``cpus`` CPUs as requested."""
        reserved, other = self.requested("cap")
        return reserved * cpus, other * cpus


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
    isolation: Isolation = Isolation()
    concurrent: Concurrent = Concurrent()
    creation: Creation = Creation()
    fairshare: Fairshare = Fairshare()
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

    def steps_per_repetition(self) -> int:
        """Measurements per repetition: scale steps plus the baseline, placements, or counts."""
        if self.kind == "isolation":
            return len(self.isolation.placements)
        if self.kind == "concurrent":
            return len(self.concurrent.instances)
        if self.kind == "fairshare":
            return len(self.fairshare.configurations())
        return self.scale.steps + 1 if self.scale else 1

    def total_background(self) -> int:
        """Background instances running at the last step (0 without a [scale])."""
        return self.scale.total_background() if self.scale else 0

    def max_instances(self) -> int:
        """Most instances alive at once: the full background plus one worker, or the most workers."""
        if self.kind == "concurrent":
            return max(self.concurrent.instances)
        if self.kind == "fairshare":
            return self.fairshare.instances
        return self.total_background() + (1 if self.worker else 0)


@dataclass(frozen=True, slots=True)
class SuiteInfo:
    """A built-in suite as listed."""

    name: str
    description: str
    kind: str
    path: Path
    reproduces: str = ""
