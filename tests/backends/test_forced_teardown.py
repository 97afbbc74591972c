"""A second interrupt that cuts the teardown's sweep short still closes the rows of creates cut short.

Found by tests/perf/soak_signals.py (process, INT+INT): the sweep forgot the pending creates
before listing the backend, so when the second interrupt cancelled the list the forced teardown
had nothing left to sweep and 20 rows stayed `creating`.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from labtui.backends.base import Instance, open_backend
from labtui.core.events import InstanceDestroyed
from labtui.engine.bus import EventBus
from labtui.engine.context import RunContext
from labtui.engine.gate import StepGate
from labtui.hosts.local import LocalHost
from labtui.suites import load_suite


async def test_a_cancelled_sweep_is_finished_by_the_forced_teardown(runtime_dir) -> None:
    real = open_backend("process", LocalHost())
    listing = asyncio.Event()

    class SlowFirstList(type(real)):  # the real process backend, whose first listing never answers
        calls = 0

        async def list(self, session: str | None = None) -> list[Instance]:
            SlowFirstList.calls += 1
            if SlowFirstList.calls == 1:
                listing.set()
                await asyncio.Event().wait()
            return await super().list(session)

    backend = SlowFirstList(real.host)
    bus = EventBus()
    events = bus.subscribe()
    session = "cut-" + secrets.token_hex(3)
    ctx = RunContext(session, load_suite("boot-scaling"), backend, backend.host, bus, StepGate())
    ctx.creating.update({"ba1", "ba2"})  # creates that had begun when the interrupt came

    orderly = asyncio.ensure_future(ctx.teardown())
    await listing.wait()
    orderly.cancel()  # the second interrupt
    with contextlib.suppress(asyncio.CancelledError):
        await orderly
    await ctx.teardown(force=True)
    bus.close()
    closed = []
    while (event := events.get_nowait()) is not None:
        if isinstance(event, InstanceDestroyed):
            closed.append((event.instance_id, event.state))
    assert sorted(closed) == [("ba1", "create-cancelled"), ("ba2", "create-cancelled")]
    assert ctx.creating == set()
