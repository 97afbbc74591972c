"""The `isolation` kind: the worker alone, then with attackers at each placement.

Follows chapter 5 of the Docker/Unikraft study.  The worker is pinned to one
hardware thread; per repetition it is measured alone (the baseline), then
with an attacker on the same thread (Table 5.1's "thread"), on the sibling
hyper thread of the same core (Table 5.1's "core"), on another core, and with
one attacker on every thread of the processor outside its core (Figure 5.5).
Attackers are started (wait "ready") and left ``isolation.settle_s`` seconds
to get going before the worker runs, and destroyed after it.  Each placement
is a step: ``step`` is its index in ``PLACEMENTS`` (so the same placement has
the same step in every session), ``background`` the number of attackers, and
every result carries the placement.  A placement the host cannot offer (no
SMT sibling, a single core) is skipped with a ``placement-skipped`` warning
that says why (see labtui.engine.topology).
"""

from __future__ import annotations

import asyncio

from labtui.backends.base import PINNING, Backend, BackendError, Instance
from labtui.core.events import StepEnded, StepStarted
from labtui.engine.context import RunContext
from labtui.engine.scaling import wait_for_quiet_host
from labtui.engine.topology import Plan, plan_placements, read_topology_and_smt
from labtui.engine.worker_runs import measure_worker
from labtui.suites.kinds.isolation import PLACEMENTS, Isolation
from labtui.suites.model import Suite


def check_isolation(suite: Suite, backend: Backend) -> None:
    """BackendError, before anything is created, when `backend` cannot run an isolation suite."""
    if PINNING not in backend.capabilities:
        raise BackendError(f"backend {backend.name} cannot pin instances to CPUs, which isolation runs need")


async def run_isolation(ctx: RunContext) -> None:
    """Run every repetition of an isolation suite."""
    suite = ctx.suite
    check_isolation(suite, ctx.backend)
    cpus, smt = await read_topology_and_smt(ctx.host)
    plan = plan_placements(cpus, suite.table(Isolation).placements, smt)
    for name, reason in plan.skipped.items():
        ctx.log("warning", "placement-skipped", f"placement {name} skipped on {ctx.host.name}: {reason}")
    ctx.log("info", "placements", _describe(plan))
    ctx.position.repetitions = suite.repetitions
    ctx.position.steps = len(plan.attackers)
    for repetition in range(1, suite.repetitions + 1):
        ctx.position.repetition = repetition
        await wait_for_quiet_host(ctx)
        for name, placed in plan.attackers.items():
            await _run_placement(ctx, plan, name, placed)
            await ctx.pass_gate()


async def _run_placement(ctx: RunContext, plan: Plan, name: str, cpus: tuple[int, ...]) -> None:
    step = PLACEMENTS.index(name)
    ctx.position.step = step
    ctx.position.background = len(cpus)
    ctx.record(StepStarted(ctx.session_id, ctx.position.repetition, step, ctx.position.steps, len(cpus)))
    attackers: list[Instance] = []
    ok = False
    try:
        if cpus:
            assert ctx.suite.attacker is not None
            specs = [ctx.spec("attacker", ctx.suite.attacker, "ready", cpus=str(cpu)) for cpu in cpus]
            attackers = await ctx.create(specs)
            await asyncio.sleep(ctx.suite.table(Isolation).settle_s)
        await ctx.sample_now()
        await measure_worker(ctx, cpus=str(plan.worker_cpu), placement=name)
        ok = True
    finally:
        try:
            await ctx.destroy(attackers)
        finally:
            ctx.record(StepEnded(ctx.session_id, ctx.position.repetition, step, len(cpus), ok=ok))


def _describe(plan: Plan) -> str:
    where = "; ".join(f"{name}: CPU {', '.join(map(str, cpus)) or '-'}" for name, cpus in plan.attackers.items())
    return f"worker on CPU {plan.worker_cpu}; attackers {where}"


def plan_steps(suite: Suite) -> tuple[str, ...]:
    """One line per step of a isolation repetition: what it does."""
    return tuple("worker alone" if p == "alone" else f"worker with an attacker on {p}"
                 for p in suite.table(Isolation).placements)

