"""The `scaling` kind: add background instances step by step and re-measure.

Per repetition: a baseline at `scale.start` background instances, then
`scale.steps` steps that each add `scale.per_step` instances; at every step the
host is sampled and the worker measured.  The background is torn down after
each repetition, so repetitions are independent.
"""

from __future__ import annotations

import asyncio

from labtui.backends.base import Instance
from labtui.core.events import StepEnded, StepStarted
from labtui.engine.context import RunContext
from labtui.engine.worker_runs import measure_worker
from labtui.suites.model import Suite


def planned_steps(suite: Suite) -> int:
    """Steps per repetition, the baseline included."""
    assert suite.scale is not None  # the loader demands a [scale] of a scaling suite
    return suite.scale.steps + 1


async def run_scaling(ctx: RunContext) -> None:
    """Run every repetition of a scaling suite."""
    suite = ctx.suite
    ctx.position.repetitions = suite.repetitions
    ctx.position.steps = planned_steps(suite)
    for repetition in range(1, suite.repetitions + 1):
        ctx.position.repetition = repetition
        await wait_for_quiet_host(ctx)
        background: list[Instance] = []
        try:
            for step in range(planned_steps(suite)):
                await _run_step(ctx, step, background)
                await ctx.pass_gate()
        finally:
            await ctx.destroy(background)


QUIET_CPU_AVAIL = 0.9
QUIET_POLL_S = 0.25


async def wait_for_quiet_host(ctx: RunContext) -> None:
    """Wait until the host's CPU is mostly idle, so a baseline is taken on a quiet machine."""
    timeout = ctx.suite.sampling.quiet_timeout_s
    if timeout <= 0:
        return
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    # labtui's own feed and sampler must not be what keeps the host busy; the faces may say that it waits
    async with ctx.measuring(idle_wait=True):
        await ctx.host.sample()
        said = False
        while loop.time() < deadline:
            await asyncio.sleep(QUIET_POLL_S)
            cpu = (await ctx.host.sample()).cpu_avail
            if cpu is None or cpu >= QUIET_CPU_AVAIL:
                return
            if not said:  # the faces show it at once: a wait of up to `timeout` seconds is not a hang
                ctx.log("info", "quiet-wait", f"waiting up to {timeout:g} s for host {ctx.host.name} to be idle "
                                              f"(CPU {cpu:.0%} free) before measuring")
                said = True
    ctx.log("warning", "busy-host", f"host {ctx.host.name} still busy after {timeout:g} s; measuring anyway")


async def _run_step(ctx: RunContext, step: int, background: list[Instance]) -> None:
    suite = ctx.suite
    assert suite.scale is not None  # the loader demands a [scale] of a scaling suite
    ctx.position.step = step
    target = suite.scale.start + step * suite.scale.per_step
    ctx.position.background = target
    ctx.record(
        StepStarted(ctx.session_id, ctx.position.repetition, step, ctx.position.steps, target)
    )
    ok = False
    try:
        await _grow_background(ctx, background, target)
        if suite.sampling.settle_s:
            await asyncio.sleep(suite.sampling.settle_s)
        sample = await ctx.sample_now()
        if suite.worker is not None:
            await measure_worker(ctx)
        if suite.measure.memory:
            await measure_memory(ctx, background, sample.mem_used_bytes)
        ok = True
    finally:
        ctx.record(StepEnded(ctx.session_id, ctx.position.repetition, step, target, ok=ok))


async def _grow_background(ctx: RunContext, background: list[Instance], target: int) -> None:
    missing = target - len(background)
    if missing <= 0 or ctx.suite.background is None:
        return
    specs = [ctx.spec("background", ctx.suite.background, "ready") for _ in range(missing)]
    background.extend(await ctx.create(specs))


async def measure_memory(ctx: RunContext, background: list[Instance], host_used: int | None) -> None:
    """Record the host's used memory and the instances' total memory (what the backend can measure)."""
    if host_used is not None:
        ctx.result("memory", "host_mem_used", float(host_used), "bytes", "lower")
    if not background:
        return
    sizes = [m for m in await ctx.backend.memory_many(background) if m is not None]
    total = float(sum(sizes))
    ctx.result("memory", "instances_mem", total, "bytes", "lower")
    if sizes:
        ctx.result("memory", "mem_per_instance", total / len(sizes), "bytes", "lower")


def plan_steps(suite: Suite) -> tuple[str, ...]:
    """One line per step of a scaling repetition: what it does."""
    levels = suite.scale.levels() if suite.scale else (0,)
    return (f"baseline: measure with {levels[0]} background",
            *(f"grow the background to {n}, measure" for n in levels[1:]))

