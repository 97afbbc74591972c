"""The `creation` kind: create instance n while instances 1..n-1 keep running, and re-measure.

Follows the Zones study (sections 4.3.1, 4.3.2.1 and 4.4.1, Figures 4-1, 4-2, 5-1, 5-2)
and the Xen study (sections 4.3.1-4.3.3, Figures 4.1-4.3).  Step n (``background`` = n,
n = 0..``scale.steps``) creates instance n from ``[background]`` and leaves it running,
then runs the worker probe ``creation.where``:

- ``"host"``: on the host itself, the global zone or Domain-0, with ``host.run``
  (R_0..R_n; step 0 measures the host before any instance exists);
- ``"first"``: in instance 1 with ``backend.exec`` (R'_1..R'_n; step 0 has nothing to run in);
- ``"all"``: in every instance at once (R_in, and per metric S_n = sum of R_in as
  ``<metric>_sum``), each held to one start on the host's clock ``creation.start_delay_s``
  ahead; ``creation/start_spread_ms`` records how far apart they really started and
  ``creation/start_lag_ms`` how late the last one was.

Every benchmark run goes through ``labtui-runat`` (``runat.c``), which reads the clock on
the host (or in the instance) when the probe starts and ends.  The creation time is the
study's ``Tcreate(n) = Tstart(n) - Tend(n-1)`` ("Tstart(n) is the starting time of the
benchmark which is executed after creating the nth zone, while Tend(n-1) is the ending
time of the benchmark that is performed after creating the (n-1)th zone"), recorded as
``creation/tcreate_s``.  Tstart(n) is the start of the first run of step n (a warm-up
run included); with ``"all"`` it is the moment the common start is armed, since the wait
for that start is labtui's, not the creation's.  Where there was no benchmark before
instance 1 (``"first"``, ``"all"``), Tend(0) is the host's clock just before creating it.
The time labtui itself spends between the two runs on purpose (copying labtui-runat and the
probe into the new instance with ``backend.stage``, a manual step gate's hold,
``sampling.settle_s``, the step's resource and memory readings) is not counted.

Beside it: ``creation/ready_s``, the backend's create-to-ready time of instance n, and
every phase the backend timed (numeric ``Instance.details`` ending in ``_s``: zones report
``configure_s``, ``install_s``, ``boot_s``, ``creation_s``; Xen ``create_s`` and, for guests
it logs into, ``login_s``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from dataclasses import dataclass

from labtui.backends.base import EXEC, Backend, BackendError, Instance
from labtui.backends.kit import last_line
from labtui.core.events import StepEnded, StepStarted
from labtui.engine.concurrent import record_sums
from labtui.engine.context import RunContext
from labtui.engine.hostclock import host_clock_ns
from labtui.engine.scaling import measure_memory, wait_for_quiet_host
from labtui.hosts.base import CommandResult, HostError
from labtui.parsers import ParseError, Reading
from labtui.parsers.probe import parse_probe_output
from labtui.programs.native import ensure_program, probe_source
from labtui.programs.runat import NAME as RUNAT_NAME
from labtui.programs.runat import build as build_runat
from labtui.programs.runat import closing_line, program_stderr
from labtui.suites.kinds import steps_per_repetition
from labtui.suites.kinds.creation import Creation
from labtui.suites.model import Suite

#: The synchronized start the Xen study asked of its UDP trigger (section 4.2.1): 0.01 s.
START_SPREAD_GOAL_MS = 10.0
#: Per ``creation.where``: the built-in suite that does the same with labtui's sleeper probe in every instance,
#: on any backend (with exec where the benchmark runs inside): what to run where a suite's image cannot boot.
TWINS = {"host": "zone-creation", "first": "zone-worker", "all": "zone-concurrent"}


@dataclass(frozen=True, slots=True)
class Timed:
    """One benchmark run as labtui-runat saw it: host-clock start and end, and what it printed."""

    start_ns: int
    end_ns: int
    readings: list[Reading]


#: The runs of one benchmark round: the instance each ran in (None: the host) and what it gave.
Runs = list[tuple[Instance | None, Timed]]


@dataclass
class _Clock:
    """Tend of the previous step's benchmark, and the time since then that Tcreate leaves out."""

    last_end_ns: int | None = None
    excluded_s: float = 0.0


class Benchmark:
    """The worker probe and labtui-runat, built on the host, run where the suite says."""

    def __init__(self, ctx: RunContext, runat: str, probe: str) -> None:
        worker = ctx.suite.worker
        assert worker is not None and worker.program is not None  # the loader demands a program
        self.ctx = ctx
        self.runat = runat
        self.probe = probe
        self.name = worker.program
        self.args = worker.args
        self.measure = worker.measure
        #: Per instance name: labtui-runat and the probe as that instance sees them.
        self._staged: dict[str, tuple[str, str]] = {}
        #: Per instance name: how far its clock is ahead of the host's (ns).
        self._offsets: dict[str, int] = {}

    @classmethod
    async def build(cls, ctx: RunContext) -> Benchmark:
        """Build labtui-runat and the worker probe on the host (cached by content hash)."""
        program = ctx.suite.worker.program if ctx.suite.worker else None
        assert program is not None  # the loader demands a worker with a program
        runat, probe = await asyncio.gather(
            build_runat(ctx.host),
            ensure_program(ctx.host, probe_source(program), program),
        )
        return cls(ctx, runat, probe)

    def argv(self, at_ns: int = 0, instance: Instance | None = None) -> list[str]:
        """The probe run through labtui-runat, started at at_ns on the host's clock (0: at once), on the host
        or in instance (whose clock may be offset)."""
        if instance is None:
            return [self.runat, str(at_ns), "--", self.probe, *self.args]
        runat, probe = self._staged[instance.name]
        at = at_ns + self._offsets[instance.name] if at_ns else 0
        return [runat, str(at), "--", probe, *self.args]

    async def stage(self, instance: Instance) -> None:
        """Have the backend make labtui-runat and the probe usable inside instance, and read its clock offset."""
        try:
            runat, probe = await self.ctx.backend.stage(instance, [self.runat, self.probe])
            self._offsets[instance.name] = await self.ctx.backend.clock_offset_ns(instance)
        except HostError as exc:
            raise BackendError(f"copying {RUNAT_NAME} and {self.name} into instance {instance.name}: {exc}") from exc
        self._staged[instance.name] = (runat, probe)

    async def host_now(self) -> int:
        """The host's clock (CLOCK_REALTIME, ns), the one the benchmarks' times are read on."""
        return await host_clock_ns(self.ctx.host)

    async def on_host(self) -> Timed:
        """One run on the host itself."""
        where = f"on host {self.ctx.host.name}"
        try:
            result = await self.ctx.host.run(self.argv(), timeout=self.ctx.suite.operation_timeout_s)
        except HostError as exc:
            raise BackendError(f"benchmark {self.name} {where}: {exc}") from exc
        return self._timed(result, where)

    async def in_instance(self, instance: Instance, at_ns: int = 0, wait_s: float = 0.0) -> Timed:
        """One run inside instance through backend.exec, started at at_ns on the host's clock."""
        where = f"in instance {instance.name} on host {self.ctx.host.name}"
        timeout = self.ctx.suite.operation_timeout_s + wait_s
        result = await self.ctx.backend.exec(instance, self.argv(at_ns, instance), timeout=timeout)
        return self._timed(result, where, self._offsets[instance.name])

    def _timed(self, result: CommandResult, where: str, offset_ns: int = 0) -> Timed:
        """Start and end (on the host's clock) and readings of a finished run; BackendError when it failed."""
        times = closing_line(result.stderr)
        if times is None or times[2] != 0 or result.returncode != 0:
            said = program_stderr(result.stderr)
            detail = last_line(said or result.stdout)
            raise BackendError(f"benchmark {self.name} {where} exited {result.returncode}: {detail}")
        start_ns, end_ns = times[0] - offset_ns, times[1] - offset_ns
        if self.measure == "boot":
            return Timed(start_ns, end_ns, [Reading("boot", "boot_time", (end_ns - start_ns) / 1e9, "s", "lower")])
        try:
            return Timed(start_ns, end_ns, parse_probe_output(result.stdout))
        except ParseError as exc:
            raise BackendError(f"benchmark {self.name} {where}: {exc}") from None


def check_creation(suite: Suite, backend: Backend) -> None:
    """BackendError, before anything is created, when `backend` cannot run the creation suite: it cannot exec
    where the benchmark runs inside instances, or cannot run the image of its instances (then the error names the
    built-in suite that does the same with labtui's sleeper, ``TWINS``)."""
    where = suite.table(Creation).where
    if where != "host" and EXEC not in backend.capabilities:
        raise BackendError(
            f'creation.where = "{where}" runs the benchmark inside instances, which needs a backend that can '
            f'exec; backend {backend.name} cannot{": " + backend.exec_hint if backend.exec_hint else ""} '
            '(where = "host" runs it on the host)'
        )
    if suite.background is not None and suite.background.image:
        try:
            backend.check_images([suite.background.image])
        except BackendError as exc:
            raise BackendError(f"{exc}; run {TWINS[where]} instead") from None


async def run_creation(ctx: RunContext) -> None:
    """Run every repetition of a creation suite."""
    suite = ctx.suite
    check_creation(suite, ctx.backend)
    bench = await Benchmark.build(ctx)
    ctx.position.repetitions = suite.repetitions
    ctx.position.steps = steps_per_repetition(suite)
    for repetition in range(1, suite.repetitions + 1):
        ctx.position.repetition = repetition
        await wait_for_quiet_host(ctx)
        instances: list[Instance] = []
        clock = _Clock()
        try:
            for step in range(ctx.position.steps):
                await _run_step(ctx, bench, step, instances, clock)
                held = time.monotonic()
                await ctx.pass_gate()
                clock.excluded_s += time.monotonic() - held
        finally:
            await ctx.destroy(instances)


async def _run_step(ctx: RunContext, bench: Benchmark, step: int, instances: list[Instance], clock: _Clock) -> None:
    suite = ctx.suite
    ctx.position.step = ctx.position.background = step
    ctx.record(StepStarted(ctx.session_id, ctx.position.repetition, step, ctx.position.steps, step))
    ok = False
    try:
        if step > 0:
            if clock.last_end_ns is None:
                clock.last_end_ns, clock.excluded_s = await bench.host_now(), 0.0
            instances.append(await _create(ctx, first=not instances))
            _record_phases(ctx, instances[-1])
            if suite.table(Creation).where == "all" or (suite.table(Creation).where == "first" and len(instances) == 1):
                staging = time.monotonic()
                await bench.stage(instances[-1])
                clock.excluded_s += time.monotonic() - staging
            if suite.sampling.settle_s:
                await asyncio.sleep(suite.sampling.settle_s)
                clock.excluded_s += suite.sampling.settle_s
        if suite.table(Creation).where == "host" or instances:
            start_ns, end_ns = await _measure(ctx, bench, instances)
            if step > 0:
                assert clock.last_end_ns is not None  # R0, or the clock read before instance 1
                tcreate = (start_ns - clock.last_end_ns) / 1e9 - clock.excluded_s
                ctx.result("creation", "tcreate_s", tcreate, "s", "lower", instances[-1].labels.instance)
            clock.last_end_ns, clock.excluded_s = end_ns, 0.0
        readings = time.monotonic()
        sample = await ctx.sample_now()
        if suite.measure.memory:
            await measure_memory(ctx, instances, sample.mem_used_bytes)
        clock.excluded_s += time.monotonic() - readings
        ok = True
    finally:
        ctx.record(StepEnded(ctx.session_id, ctx.position.repetition, step, step, ok=ok))


async def _create(ctx: RunContext, *, first: bool) -> Instance:
    """Create the step's instance; it may take the suite's whole operation timeout (zones install for minutes).

    When the first instance of an image (a Xen guest it logs into) cannot be created, the error says what the
    suite needs and which built-in suite does the same on this backend (``TWINS``)."""
    background = ctx.suite.background
    assert background is not None
    spec = ctx.spec("instance", background, "ready")
    try:
        (instance,) = await ctx.create([dataclasses.replace(spec, timeout_s=ctx.suite.operation_timeout_s)],
                                       measured=True)
    except BackendError as exc:
        if not first or not background.image:
            raise
        twin = TWINS[ctx.suite.table(Creation).where]
        raise BackendError(
            f"{ctx.suite.name} needs a backend that boots image {background.image!r} as its instances "
            f"(backend {ctx.backend.name}: {exc}); {twin} does the same with labtui's sleeper in each instance "
            f"here: labtui run {twin} --backend {ctx.backend.name}") from None
    return instance


def _record_phases(ctx: RunContext, instance: Instance) -> None:
    """The backend's create-to-ready time and every phase it timed (details ending in _s)."""
    ident = instance.labels.instance
    if instance.boot_s is not None:
        ctx.result("creation", "ready_s", instance.boot_s, "s", "lower", ident)
    for key, value in instance.details.items():
        if key.endswith("_s") and isinstance(value, (int, float)) and not isinstance(value, bool):
            ctx.result("creation", key, float(value), "s", "lower", ident)


async def _measure(ctx: RunContext, bench: Benchmark, instances: list[Instance]) -> tuple[int, int]:
    """Warm-up rounds, then measured rounds, recorded; the first start and the last end (host clock, ns)."""
    worker = ctx.suite.worker
    assert worker is not None
    where = ctx.suite.table(Creation).where
    first_start: int | None = None
    end_ns = 0
    for number in range(worker.warmup + worker.runs):
        async with ctx.measuring():
            armed, runs = await _round(ctx, bench, instances)
        first_start = armed if first_start is None else first_start
        end_ns = max(run.end_ns for _, run in runs)
        if number < worker.warmup:
            continue
        for instance, run in runs:
            ident = instance.labels.instance if instance else ""
            for r in run.readings:
                ctx.result(r.benchmark, r.metric, r.value, r.unit, r.better, ident)
        if where == "all":
            record_sums(ctx, [r for _, run in runs for r in run.readings])
            _record_spread(ctx, runs, armed + int(ctx.suite.table(Creation).start_delay_s * 1e9))
    assert first_start is not None
    return first_start, end_ns


async def _round(ctx: RunContext, bench: Benchmark, instances: list[Instance]) -> tuple[int, Runs]:
    """One benchmark round where the suite says; returns when it counts as started, and each run."""
    where = ctx.suite.table(Creation).where
    if where == "host":
        run = await bench.on_host()
        return run.start_ns, [(None, run)]
    if where == "first":
        run = await bench.in_instance(instances[0])
        return run.start_ns, [(instances[0], run)]
    delay = ctx.suite.table(Creation).start_delay_s
    armed = await bench.host_now()
    at_ns = armed + int(delay * 1e9)
    results = await asyncio.gather(*(bench.in_instance(i, at_ns, delay) for i in instances), return_exceptions=True)
    runs: Runs = []
    for instance, result in zip(instances, results):
        if isinstance(result, BaseException):
            raise result  # the first failure, once every run has ended
        runs.append((instance, result))
    return armed, runs


def _record_spread(ctx: RunContext, runs: Runs, at_ns: int) -> None:
    """How far apart the instances of one "all" round started, and how late the last one was."""
    starts = [run.start_ns for _, run in runs]
    spread_ms = (max(starts) - min(starts)) / 1e6
    ctx.result("creation", "start_spread_ms", spread_ms, "ms", "lower")
    ctx.result("creation", "start_lag_ms", (max(starts) - at_ns) / 1e6, "ms", "lower")
    if spread_ms > START_SPREAD_GOAL_MS:
        ctx.log("warning", "start-spread",
                f"the {len(starts)} benchmark runs started {spread_ms:.1f} ms apart "
                f"(goal {START_SPREAD_GOAL_MS:g} ms); "
                f"raise creation.start_delay_s ({ctx.suite.table(Creation).start_delay_s:g} s) if exec calls arrived late")


def plan_steps(suite: Suite) -> tuple[str, ...]:
    """One line per step of a creation repetition: what it does."""
    return tuple(f"create instance {n + 1} while {n} run" for n in range(steps_per_repetition(suite)))

