"""The `concurrent` kind: the same benchmark in n instances at once.

Follows the concurrently loaded zones/domains of the Solaris studies
(sections 4.3.2.1 of the Zones thesis, 4.2.1 of the Xen thesis) and the
performance-at-scale figure of the VServer/Xen paper.  For each count n in
``concurrent.instances`` (a step, ``background`` = n) the n workers are
created with a common start time ``concurrent.start_delay_s`` ahead, so they
all begin together however long creating them takes; each worker's readings
are recorded (R_i, with its instance id) and, per metric, the aggregate of
``labtui.core.stats.aggregate.aggregate_metric``: a rate (higher is better) as S_n = sum of
R_i, ``<metric>_sum``; a time of one unit of work as the throughput it implies,
sum of 1/t_i per second, ``<metric>_rate_sum`` (unit ``1/s``, higher is
better), never a sum of times; other metrics (bytes, latencies) per instance only.

A time of one unit of work also gets the VServer/Xen paper's overall performance
(study 004, section 4.4, Figure 7: "overall performance is calculated as a function
of the finish-time of all tests", which "favors schedulers which are able to keep the
progress of each VM in sync"): n / max(t_i) per second, ``<metric>_finish_rate``
(``finish_rate``).  It equals the sum of 1/t_i only when all n finish together;
an instance that lags pulls it down.
"""

from __future__ import annotations

from labtui.core.events import StepEnded, StepStarted
from labtui.core.stats.aggregate import TIME_UNITS, aggregate_readings, is_work_time
from labtui.engine.context import RunContext
from labtui.engine.hostclock import host_clock_ns
from labtui.engine.scaling import wait_for_quiet_host
from labtui.engine.worker_runs import record_run, worker_spec
from labtui.parsers import Reading
from labtui.suites.kinds.concurrent import Concurrent
from labtui.suites.model import Suite


async def run_concurrent(ctx: RunContext) -> None:
    """Run every repetition of a concurrent suite."""
    suite = ctx.suite
    ctx.position.repetitions = suite.repetitions
    ctx.position.steps = len(suite.table(Concurrent).instances)
    for repetition in range(1, suite.repetitions + 1):
        ctx.position.repetition = repetition
        await wait_for_quiet_host(ctx)
        for step, count in enumerate(suite.table(Concurrent).instances):
            await _run_count(ctx, step, count)
            await ctx.pass_gate()


async def _run_count(ctx: RunContext, step: int, count: int) -> None:
    worker = ctx.suite.worker
    assert worker is not None
    ctx.position.step, ctx.position.background = step, count
    ctx.record(StepStarted(ctx.session_id, ctx.position.repetition, step, ctx.position.steps, count))
    ok = False
    try:
        for _ in range(worker.warmup):
            await ctx.destroy(await ctx.create([worker_spec(ctx, "warmup", worker)], measured=True))
        await ctx.sample_now()
        for _ in range(worker.runs):
            start_at = await host_clock_ns(ctx.host) / 1e9 + ctx.suite.table(Concurrent).start_delay_s
            specs = [worker_spec(ctx, "worker", worker, start_at=start_at) for _ in range(count)]
            instances = await ctx.create(specs, measured=True)
            readings: list[Reading] = []
            try:
                for instance in instances:
                    readings += record_run(ctx, worker, instance)
            finally:
                await ctx.destroy(instances)
            record_aggregates(ctx, readings)
            record_finish_rates(ctx, readings)
        ok = True
    finally:
        ctx.record(StepEnded(ctx.session_id, ctx.position.repetition, step, count, ok=ok))


def record_aggregates(ctx: RunContext, readings: list[Reading]) -> None:
    """Record the aggregate of every metric the workers of one round reported, as
    labtui.core.stats.aggregate.aggregate_metric defines it (rates sum; a time as sum of 1/t; never a sum of times)."""
    for benchmark, agg in aggregate_readings(readings):
        ctx.result(benchmark, agg.metric, agg.value, agg.unit, agg.better)  # type: ignore[arg-type]


def finish_rate(times: list[float], unit: str) -> float:
    """Study 004 §4.4, Fig 7: the overall performance of n instances that each took times[i] (in unit) for one
    unit of work from a common start, as a function of the finish-time of all: n / max(t_i) per second
    (nan when a time is not positive)."""
    if not times or any(not t > 0 for t in times):
        return float("nan")
    return len(times) / (max(times) * TIME_UNITS[unit])


def record_finish_rates(ctx: RunContext, readings: list[Reading]) -> None:
    """Record ``<metric>_finish_rate`` (``finish_rate``, 1/s, higher is better) of every time of one unit of
    work the workers of one round reported."""
    times: dict[tuple[str, str, str], list[float]] = {}
    for r in readings:
        if is_work_time(r.metric, r.unit, r.better):
            times.setdefault((r.benchmark, r.metric, r.unit), []).append(r.value)
    for (benchmark, metric, unit), found in times.items():
        ctx.result(benchmark, f"{metric}_finish_rate", finish_rate(found, unit), "1/s", "higher")


#: The name the creation kind (where = "all") imports.
record_sums = record_aggregates


def plan_steps(suite: Suite) -> tuple[str, ...]:
    """One line per step of a concurrent repetition: what it does."""
    return tuple(f"{n} instance(s) run the worker at once" for n in suite.table(Concurrent).instances)

