"""The `fairshare` kind: CPU share achieved against share requested.

Follows section 5.1 and Table 3 of the VServer/Xen paper: n instances (eight
there) run a CPU-bound scheduling probe at once on one shared CPU set.  The
configurations of a repetition are its steps: ``equal`` (the same weight for
all, no cap: each instance should receive 1/n of the set), then one per
method, with the first instance (role ``reserved``) given ``reserved_share`` of
the set:

- ``weight``: it gets the CPU weight that is that share of all the weights,
  the others the default weight;
- ``cap``: it is capped at its share and every other instance at an equal part
  of the rest, so that the caps partition the set.  Xen has no reservations:
  weights and caps can only approximate one, which is what Table 3 shows.

On a backend that can weigh instances, the equal configuration gives each the
default weight explicitly, so every configuration is scheduled the same way
(in the backend's CPU control groups) and their totals compare on a busy host.

With ``measure = "output"`` the instances run the probe (Hourglass:
``hourglass share SECONDS``) to completion from a common start, chosen on the
host's clock (the one the backend holds the start on), and each reports the
fraction of the time it ran; with ``"cpu_time"`` they spin until
destroyed and the backend's listing gives each one's CPU time at the start and
end of the window (``Instance.details["cpu_time_s"]``, e.g. ``xl list``).

Per instance and configuration the results are ``achieved_share`` (fraction of
the CPU set's time the instance received), ``requested_share`` and
``share_ratio`` (achieved / requested), beside the raw reading they come from
(the probe's ``cpu_share``, or ``cpu_time_s``); ``achieved_share_sum`` is what
all instances received together (the paper found it within 1% of capacity).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import TypedDict

from labtui.backends.base import (
    CPU_LIMIT,
    CPU_WEIGHT,
    PINNING,
    Backend,
    BackendError,
    Instance,
    InstanceSpec,
)
from labtui.core.cpulist import cpu_list_size
from labtui.core.events import StepEnded, StepStarted
from labtui.engine.context import RunContext
from labtui.engine.hostclock import host_clock_ns
from labtui.engine.scaling import wait_for_quiet_host
from labtui.engine.worker_runs import record_run
from labtui.suites.kinds.fairshare import DEFAULT_CPU_WEIGHT, Fairshare
from labtui.suites.model import Program, Suite, Worker

BENCHMARK = "fairshare"
#: What each method needs the backend to honour.
NEEDS = {"weight": (CPU_WEIGHT, "set CPU weights"), "cap": (CPU_LIMIT, "cap CPU use")}
#: An instance that ends later than this after the first one did not run with the others.
LATE_FRACTION, LATE_S = 0.1, 0.5
#: Seconds an "output" instance may take beyond its start delay and duration before the backend kills it.
EXIT_SLACK_S = 30.0
#: The built-in suite that measures with ``"output"`` (hourglass reports each share), for backends that list no CPU time.
OUTPUT_TWIN = "fairshare-cpu"


async def run_fairshare(ctx: RunContext) -> None:
    """Run every repetition of a fairshare suite."""
    fair = ctx.suite.table(Fairshare)
    check_fairshare(ctx.suite, ctx.backend)
    cpus = await _cpu_count(ctx, fair.cpus)
    if fair.methods and fair.reserved_share * cpus > 1:
        ctx.log("warning", "share-too-large", f"the reserved instance runs one thread, so it can use at most one of "
                f"the {cpus} CPUs: a share of {fair.reserved_share:g} of the set is more than it can take")
    probe = fair.probe()
    if probe is not None:
        await ctx.backend.prepare([probe])
    else:
        assert fair.image is not None
        await ctx.backend.prepare_images([fair.image])
    configurations = fair.configurations()
    ctx.position.repetitions = ctx.suite.repetitions
    ctx.position.steps = len(configurations)
    for repetition in range(1, ctx.suite.repetitions + 1):
        ctx.position.repetition = repetition
        await wait_for_quiet_host(ctx)
        for step, configuration in enumerate(configurations):
            await _run_configuration(ctx, step, configuration, cpus)
            await ctx.pass_gate()


def check_fairshare(suite: Suite, backend: Backend) -> None:
    """BackendError, before anything is created, when `backend` cannot honour the fairshare suite: its CPU list,
    a method, or its image.  (Whether it lists CPU time for ``measure = "cpu_time"`` shows only at the first
    reading: no capability says it.)"""
    fair = suite.table(Fairshare)
    if fair.image is not None:
        backend.check_images([fair.image])
    if fair.cpus is not None and PINNING not in backend.capabilities:
        raise BackendError(f"backend {backend.name} cannot pin instances to CPUs; fairshare.cpus = {fair.cpus!r} "
                           "needs it (leave cpus out to share every CPU of the host)")
    for method in fair.methods:
        capability, what = NEEDS[method]
        if capability not in backend.capabilities:
            raise BackendError(f"backend {backend.name} cannot {what}, which the fairshare method {method!r} needs; "
                               f"drop it from fairshare.methods")


async def _cpu_count(ctx: RunContext, cpus: str | None) -> int:
    """CPUs in the shared set: the list's, or the host's when there is none."""
    if cpus is None:
        return (await ctx.host.facts()).cores
    return cpu_list_size(cpus)


class Knobs(TypedDict, total=False):
    """The InstanceSpec fields a fairshare configuration sets on an instance."""

    cpu_weight: int
    cpu_cap: float


def plan(fair: Fairshare, configuration: str, cpus: int, *, weighted: bool = False
         ) -> list[tuple[str, Knobs, float]]:
    """Per instance: its role, the InstanceSpec knobs it gets, and the share of the set it requests.

    ``weighted`` (the backend can weigh instances) gives the equal configuration the default weight.
    """
    reserved_share, other_share = fair.requested(configuration)
    if configuration == "equal":
        return [("worker", {"cpu_weight": DEFAULT_CPU_WEIGHT} if weighted else {}, other_share)] * fair.instances
    if configuration == "weight":
        reserved, other = fair.weights()
        knobs: tuple[Knobs, Knobs] = ({"cpu_weight": reserved}, {"cpu_weight": other})
    else:
        reserved_cap, other_cap = fair.caps(cpus)
        knobs = ({"cpu_cap": reserved_cap}, {"cpu_cap": other_cap})
    return [("reserved", knobs[0], reserved_share)] + [("worker", knobs[1], other_share)] * (fair.instances - 1)


async def _run_configuration(ctx: RunContext, step: int, configuration: str, cpus: int) -> None:
    fair = ctx.suite.table(Fairshare)
    ctx.position.step, ctx.position.background = step, fair.instances
    ctx.record(StepStarted(ctx.session_id, ctx.position.repetition, step, ctx.position.steps, fair.instances))
    ctx.log("info", "fairshare", _describe(fair, configuration, cpus))
    ok = False
    try:
        if fair.measure == "output":
            achieved = await _measure_output(ctx, configuration, cpus)
        else:
            achieved = await _measure_cpu_time(ctx, configuration, cpus)
        for (instance_id, share), (_, _, requested) in zip(achieved, plan(fair, configuration, cpus)):
            ctx.result(BENCHMARK, "achieved_share", share, "ratio", "higher", instance_id)
            ctx.result(BENCHMARK, "requested_share", requested, "ratio", "higher", instance_id)
            ctx.result(BENCHMARK, "share_ratio", share / requested, "ratio", "higher", instance_id)
        ctx.result(BENCHMARK, "achieved_share_sum", sum(share for _, share in achieved), "ratio", "higher")
        ok = True
    finally:
        ctx.record(StepEnded(ctx.session_id, ctx.position.repetition, step, fair.instances, ok=ok))


def _specs(ctx: RunContext, configuration: str, cpus: int, program: Program, wait: str, *,
           capture_output: bool = False, start_at: float | None = None) -> list[InstanceSpec]:
    """One spec per instance of the configuration, on the shared CPU set, with its weight or cap."""
    fair = ctx.suite.table(Fairshare)
    specs = []
    for role, knobs, _ in plan(fair, configuration, cpus, weighted=CPU_WEIGHT in ctx.backend.capabilities):
        spec = ctx.spec(role, program, wait, cpus=fair.cpus, capture_output=capture_output, start_at=start_at)
        specs.append(replace(spec, **knobs))
    return specs


async def _measure_output(ctx: RunContext, configuration: str, cpus: int) -> list[tuple[str, float]]:
    """Run the probe in every instance from one start on the host's clock; each reports the fraction of time it ran."""
    fair = ctx.suite.table(Fairshare)
    worker = Worker(program=fair.probe(), image=fair.image, args=("share", f"{fair.duration_s:g}"), measure="output")
    start_at = await host_clock_ns(ctx.host) / 1e9 + fair.start_delay_s
    timeout = fair.start_delay_s + fair.duration_s + EXIT_SLACK_S
    specs = [replace(s, timeout_s=timeout) for s in
             _specs(ctx, configuration, cpus, worker, "exit", capture_output=True, start_at=start_at)]
    instances = await ctx.create(specs, measured=True)
    try:
        _check_together(instances, fair.duration_s)
        achieved = []
        for instance in instances:
            readings = [r for r in record_run(ctx, worker, instance) if r.metric == "cpu_share"]
            if not readings:
                raise BackendError(f"{instance.name} ({worker.program or worker.image}) printed no cpu_share reading")
            achieved.append((instance.labels.instance, readings[0].value / cpus))
        return achieved
    finally:
        await ctx.destroy(instances)


def _check_together(instances: list[Instance], duration: float) -> None:
    """Raise when an instance ended so long after the first that it cannot have run alongside it.

    Every probe runs for the same duration, so instances that ran together end together.
    Their ends (``ready_at`` of a ``wait="exit"`` instance) are compared with each other
    only: all come from one backend, so they are on one clock, whichever it is (the host's
    for the process backend, the controller's for backends that time on the controller).
    """
    ends = [i.ready_at for i in instances if i.ready_at is not None]
    if len(ends) < 2:
        return
    first = min(ends)
    late = [end - first for end in ends if end - first > LATE_FRACTION * duration + LATE_S]
    if late:
        raise BackendError(f"{len(late)} of {len(instances)} instances ended up to {max(late):.1f} s after the first "
                           f"one: they did not run at the same time (does the backend run them all at once?)")


async def _measure_cpu_time(ctx: RunContext, configuration: str, cpus: int) -> list[tuple[str, float]]:
    """Start spinning instances, then read each one's CPU time from the backend at both ends of the window."""
    fair = ctx.suite.table(Fairshare)
    spinner = Program(program=fair.probe(), image=fair.image)
    instances = await ctx.create(_specs(ctx, configuration, cpus, spinner, "ready"))
    try:
        await asyncio.sleep(fair.start_delay_s)
        async with ctx.measuring():
            before, started = await _cpu_times(ctx, instances)
            await asyncio.sleep(fair.duration_s)
            after, ended = await _cpu_times(ctx, instances)
    finally:
        await ctx.destroy(instances)
    window = ended - started
    ctx.result(BENCHMARK, "window_s", window, "s", "higher")
    achieved = []
    for instance in instances:
        iid = instance.labels.instance
        used = after[iid] - before[iid]
        ctx.result(BENCHMARK, "cpu_time_s", used, "s", "higher", iid)
        achieved.append((iid, used / (window * cpus)))
    return achieved


async def _cpu_times(ctx: RunContext, instances: list[Instance]) -> tuple[dict[str, float], float]:
    """Each instance's CPU time (s) as the backend lists it, and the moment of the reading (monotonic s)."""
    sent = time.monotonic()
    listed = await asyncio.wait_for(ctx.backend.list(ctx.session_id), ctx.suite.operation_timeout_s)
    at = (sent + time.monotonic()) / 2
    times = {i.labels.instance: i.details.get("cpu_time_s") for i in listed}
    missing = [i.labels.instance for i in instances if times.get(i.labels.instance) is None]
    if missing:
        raise BackendError(f"backend {ctx.backend.name} on {ctx.host.name} lists no CPU time for {', '.join(missing)}; "
                           'fairshare.measure = "cpu_time" needs it (Instance.details["cpu_time_s"]); '
                           f'{OUTPUT_TWIN} does the same here with a probe that reports its own share '
                           f'(measure = "output"): labtui run {OUTPUT_TWIN} --backend {ctx.backend.name}')
    return {iid: float(t) for iid, t in times.items() if t is not None}, at


def _describe(fair: Fairshare, configuration: str, cpus: int) -> str:
    where = f"CPUs {fair.cpus}" if fair.cpus is not None else f"all {cpus} CPUs"
    head = f"{configuration}: {fair.instances} instances on {where} for {fair.duration_s:g} s"
    if configuration == "equal":
        return f"{head}, each requesting {1 / fair.instances:.4f} of the set"
    reserved, other = fair.requested(configuration)
    if configuration == "weight":
        knob = "CPU weight {} against {}".format(*fair.weights())
    else:
        knob = "CPU cap {:.4f} against {:.4f} CPUs".format(*fair.caps(cpus))
    return f"{head}; the reserved one requests {reserved:g} ({knob}), the others {other:.4f} each"


def plan_steps(suite: Suite) -> tuple[str, ...]:
    """One line per step of a fairshare repetition: what it does."""
    fair = suite.table(Fairshare)
    return tuple(f"{fair.instances} instances, {configuration} shares" for configuration in fair.configurations())

