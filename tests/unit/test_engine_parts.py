import asyncio
import multiprocessing
import os
import signal

import pytest

from labtui.core.events import Log
from labtui.core.liveness import session_is_running, session_lock
from labtui.engine import Aborted, EventBus, StepGate


async def test_gate_auto_passes_and_manual_waits_for_next():
    gate = StepGate(auto=False)
    waiter = asyncio.create_task(gate.passed())
    await asyncio.sleep(0.05)
    assert gate.waiting and not waiter.done()
    gate.next()
    await asyncio.wait_for(waiter, 1)
    gate.set_auto(True)
    await asyncio.wait_for(gate.passed(), 1)


async def test_gate_abort_wakes_a_waiting_step():
    gate = StepGate(auto=False)
    waiter = asyncio.create_task(gate.passed())
    await asyncio.sleep(0.02)
    gate.abort()
    with pytest.raises(Aborted):
        await asyncio.wait_for(waiter, 1)
    with pytest.raises(Aborted):
        await gate.passed()


async def test_bus_fans_out_and_closes():
    bus = EventBus()
    a, b = bus.subscribe(), bus.subscribe()
    event = Log("s", "info", "k", "m")
    bus.publish(event)
    bus.close()
    assert [a.get_nowait(), a.get_nowait()] == [event, None]
    assert [b.get_nowait(), b.get_nowait()] == [event, None]


def _hold_lock_forever(session_id: str, runtime_dir: str, ready) -> None:
    os.environ["LABTUI_RUNTIME_DIR"] = runtime_dir
    with session_lock(session_id):
        ready.set()
        signal.pause()


def test_liveness_lock_follows_the_process(tmp_path, monkeypatch):
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path))
    ready = multiprocessing.Event()
    proc = multiprocessing.Process(target=_hold_lock_forever, args=("s1", str(tmp_path), ready))
    proc.start()
    assert ready.wait(10)
    assert session_is_running("s1")
    assert not session_is_running("s2")
    os.kill(proc.pid, signal.SIGKILL)  # a crash: the kernel drops the lock
    proc.join(10)
    assert not session_is_running("s1")


async def test_the_gate_says_how_long_it_held_each_caller():
    """StepStarted.held_s comes from here: a manual wait for next is what passed() returns to its caller (a
    shared gate's callers each get their own wait); an automatic pass holds nothing."""
    gate = StepGate(auto=False)
    first = asyncio.create_task(gate.passed())
    await asyncio.sleep(0.3)
    second = asyncio.create_task(gate.passed())
    await asyncio.sleep(0.1)
    gate.next()
    held = await asyncio.wait_for(asyncio.gather(first, second), 1)
    assert 0.3 <= held[0] < 5 and 0.1 <= held[1] < held[0]
    gate.set_auto(True)
    assert await gate.passed() == 0.0
