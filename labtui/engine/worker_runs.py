"""Measuring the worker: its boot time, or the readings it prints.

``worker.measure = "boot"`` records the create-to-exit time of each run;
``"output"`` asks the backend for the worker's stdout and records every JSON
reading line in it (see ``labtui.parsers.probe``), or, with ``worker.output``
naming a real tool (lmbench, UnixBench, sysbench, stress-ng), its stdout and
stderr read by that tool's parser; ``"load"`` starts the worker as a service
and records what a load tool on the host reads from it (see
``labtui.engine.load``).  All run ``worker.warmup`` discarded runs first,
then ``worker.runs`` measured ones, then, when ``worker.max_runs`` is set, one
more at a time while a metric's coefficient of variation over this step's runs
is above ``worker.target_cv`` (bounded by ``max_runs``; every run is recorded).
Each measured run's results carry its number (``run``, from 1), and the
store's figure of a repetition at that step is the median over its runs.
"""

from __future__ import annotations

from collections import defaultdict

from labtui.backends.base import HOST_TOOL, STDERR, Backend, BackendError, Instance, InstanceSpec
from labtui.core.stats.describe import coefficient_of_variation
from labtui.engine.context import RunContext
from labtui.engine.load import measure_load
from labtui.parsers import ParseError, Reading
from labtui.parsers.registry import PARSERS
from labtui.suites.model import Suite, Worker


async def measure_worker(ctx: RunContext, *, cpus: str | None = None, placement: str = "") -> None:
    """Run the suite's worker (warm-up runs, then measured runs) and record its results."""
    worker = ctx.suite.worker
    assert worker is not None
    if worker.measure == "load":
        for _ in range(worker.warmup):
            await measure_load(ctx, worker, role="warmup", cpus=cpus)

        async def run(number: int) -> list[Reading]:
            return await measure_load(ctx, worker, cpus=cpus, placement=placement, run=number)

    else:
        for _ in range(worker.warmup):
            await ctx.destroy(await ctx.create([worker_spec(ctx, "warmup", worker, cpus=cpus)], measured=True))

        async def run(number: int) -> list[Reading]:
            (instance,) = await ctx.create([worker_spec(ctx, "worker", worker, cpus=cpus)], measured=True)
            try:
                return record_run(ctx, worker, instance, placement=placement, run=number)
            finally:
                await ctx.destroy([instance])

    readings: list[Reading] = []
    for number in range(1, worker.runs + 1):
        readings += await run(number)
    if worker.max_runs is None or worker.target_cv is None:  # the loader sets both or neither
        return
    runs = worker.runs
    while runs < worker.max_runs and worst_cv(readings) > worker.target_cv:
        runs += 1
        readings += await run(runs)
    cv, where = worst_cv(readings), f"step {ctx.position.step}" + (f" ({placement})" if placement else "")
    if cv > worker.target_cv:
        ctx.log("warning", "unstable", f"coefficient of variation {cv:.1%} still above {worker.target_cv:.1%} "
                f"after {runs} runs (worker.max_runs) at {where}")
    else:
        ctx.log("info", "adaptive", f"coefficient of variation {cv:.1%} within {worker.target_cv:.1%} "
                f"after {runs} runs at {where}")


def worker_spec(ctx: RunContext, role: str, worker: Worker, *, cpus: str | None = None,
                start_at: float | None = None) -> InstanceSpec:
    """A spec of one worker run to its exit: its output captured when it is measured by output, and a real
    tool's stderr with it (lmbench, UnixBench's programs and stress-ng print their results there)."""
    return ctx.spec(role, worker, "exit", cpus=cpus, capture_output=worker.measure == "output",
                    capture_stderr=worker.output != "probe", start_at=start_at)


def check_worker_runs(suite: Suite, backend: Backend) -> None:
    """BackendError, before anything is created, when the backend cannot run the suite's programs as written."""
    for role, program in (("worker", suite.worker), ("background", suite.background), ("attacker", suite.attacker)):
        if program is not None and program.tool is not None and HOST_TOOL not in backend.capabilities:
            raise BackendError(f"backend {backend.name} cannot run a tool from the host ({role}.tool = "
                               f"{program.tool!r}); the process backend can, and docker runs a tool in an image "
                               f"({role}.image)")
    if suite.worker is not None and suite.worker.output != "probe" and STDERR not in backend.capabilities:
        raise BackendError(f"backend {backend.name} cannot capture a worker's stderr, where {suite.worker.output} "
                           "prints its results (worker.output); the process and docker backends can")


def worst_cv(readings: list[Reading]) -> float:
    """The largest coefficient of variation among the metrics of readings (0 with fewer than 2 of each)."""
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in readings:
        values[(r.benchmark, r.metric)].append(r.value)
    cvs = [abs(coefficient_of_variation(v)) for v in values.values() if len(v) > 1]
    return max((cv for cv in cvs if cv == cv), default=0.0)  # a zero mean gives nan: no verdict


def record_run(ctx: RunContext, worker: Worker, instance: Instance, *, placement: str = "",
               run: int = 0) -> list[Reading]:
    """Record one finished worker run as results (`run`: its number among the runs of one measurement,
    0 for an instance measured beside others) and return its readings.

    BackendError when the run failed or measured nothing.
    """
    if instance.exit_code not in (None, 0):
        said = (instance.output or "").strip().splitlines()[-3:]  # a real tool says why on its last lines
        raise BackendError(f"worker {instance.name} exited with code {instance.exit_code}"
                           + (": " + " / ".join(said) if said else ""))
    if worker.measure == "boot":
        if instance.boot_s is None:
            raise BackendError(f"backend {ctx.backend.name} measured no boot time for {instance.name}")
        readings = [Reading("boot", "boot_time", instance.boot_s, "s", "lower")]
    elif instance.output is None:
        raise BackendError(f"backend {ctx.backend.name} returned no output for {instance.name}")
    else:
        try:
            readings = PARSERS[worker.output].parse(instance.output)  # a tool's readings carry its name
        except ParseError as exc:
            raise BackendError(f"worker {instance.name} ({worker.program or worker.image or worker.tool}): {exc}") from None
    for r in readings:
        ctx.result(r.benchmark, r.metric, r.value, r.unit, r.better, instance.labels.instance, placement=placement,
                   run=run)
    return readings
