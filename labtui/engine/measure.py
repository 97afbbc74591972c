"""Measuring the worker: its boot time, or the readings it prints.

``worker.measure = "boot"`` records the create-to-exit time of each run;
``"output"`` asks the backend for the worker's stdout and records every JSON
reading line in it (see ``labtui.parsers.probe``); ``"load"`` starts the
worker as a service and records what a load tool on the host reads from it
(see ``labtui.engine.load``).  All run ``worker.warmup`` discarded runs first.
"""

from __future__ import annotations

from labtui.backends import BackendError, Instance
from labtui.engine.context import RunContext
from labtui.engine.load import measure_load
from labtui.parsers import ParseError, Reading
from labtui.parsers.probe import parse_probe_output
from labtui.suites.model import Worker


async def measure_worker(ctx: RunContext, *, cpus: str | None = None, placement: str = "") -> None:
    """Run the suite's worker (warm-up runs, then measured runs) and record its results."""
    worker = ctx.suite.worker
    assert worker is not None
    if worker.measure == "load":
        for _ in range(worker.warmup):
            await measure_load(ctx, worker, role="warmup", cpus=cpus)
        for _ in range(worker.runs):
            await measure_load(ctx, worker, cpus=cpus, placement=placement)
        return
    capture = worker.measure == "output"
    for _ in range(worker.warmup):
        await ctx.destroy(await ctx.create([ctx.spec("warmup", worker, "exit", cpus=cpus, capture_output=capture)]))
    for _ in range(worker.runs):
        (instance,) = await ctx.create([ctx.spec("worker", worker, "exit", cpus=cpus, capture_output=capture)])
        try:
            record_run(ctx, worker, instance, placement=placement)
        finally:
            await ctx.destroy([instance])


def record_run(ctx: RunContext, worker: Worker, instance: Instance, *, placement: str = "") -> list[Reading]:
    """Record one finished worker run as results and return its readings.

    BackendError when the run failed or measured nothing.
    """
    if instance.exit_code not in (None, 0):
        raise BackendError(f"worker {instance.name} exited with code {instance.exit_code}")
    if worker.measure == "boot":
        if instance.boot_s is None:
            raise BackendError(f"backend {ctx.backend.name} measured no boot time for {instance.name}")
        readings = [Reading("boot", "boot_time", instance.boot_s, "s", "lower")]
    elif instance.output is None:
        raise BackendError(f"backend {ctx.backend.name} returned no output for {instance.name}")
    else:
        try:
            readings = parse_probe_output(instance.output)
        except ParseError as exc:
            raise BackendError(f"worker {instance.name} ({worker.program or worker.image}): {exc}") from None
    for r in readings:
        ctx.result(r.benchmark, r.metric, r.value, r.unit, r.better, instance.labels.instance, placement=placement)
    return readings
