"""SIGINT, SIGTERM and SIGHUP each stop a run in order: torn down, its end recorded, the signal named.

A closed terminal sends SIGHUP; a run that ignored it would go on measuring with nobody to see it, and a
run that died of it would leave its instances. In-process, through the session service as the CLI runs it.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from labtui.backends.base import open_backend
from labtui.core import stopsignals
from labtui.hosts.local import LocalHost
from labtui.session.request import RunRequest
from labtui.session.service import LabRun
from labtui.store import fetch_frame
from labtui.suites import load_suite

#: A boot-scaling run of several steps: a signal after its first instance finds most of it ahead.
STEPS = ["scale.steps=8", "scale.per_step=1", "suite.repetitions=1", "worker.runs=1", "worker.warmup=0",
         "sampling.quiet_timeout_s=0"]
STOPS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


@pytest.fixture
def unhandled(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The stop signals that reached the test's own handler (one the run did not take), and this process's
    handlers put back afterwards (a run stopped by a signal leaves it ignored)."""
    reached: list[int] = []

    def note(signum: int, frame: FrameType | None) -> None:
        reached.append(signum)

    before = {signum: signal.getsignal(signum) for signum in STOPS}
    monkeypatch.setattr(stopsignals, "_HANGUP_IGNORED", False)  # as a terminal's command, not nohup's
    for signum in STOPS:
        signal.signal(signum, note)
    try:
        yield reached
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)


@pytest.mark.parametrize("stop", STOPS, ids=lambda s: s.name)
async def test_each_stop_signal_ends_a_run_in_order_and_names_itself(
        stop: signal.Signals, runtime_dir: Path, tmp_path: Path, unhandled: list[int]) -> None:
    """The signal, sent once the run has an instance, aborts it: status aborted, the signal named with its
    exit status (128 + its number), no instance of the session left, and the store records the abort."""
    db = tmp_path / "lab.duckdb"
    lab = LabRun(RunRequest(load_suite("boot-scaling", STEPS), db, backend="process"))
    async with asyncio.timeout(120):
        with lab.signals():
            task = asyncio.create_task(lab.run())
            while not lab.live_instances():
                assert not task.done(), "the run ended before it created an instance"
                await asyncio.sleep(0.02)
            os.kill(os.getpid(), stop)
            (outcome,) = await task
    assert unhandled == [], f"{stop.name} reached the process's own handler, not the run's"
    assert (outcome.status, lab.signal, lab.stopped_exit_status) == ("aborted", stop.name, 128 + stop.value)
    assert await open_backend("process", LocalHost()).list(outcome.session_id) == []
    recorded = fetch_frame(db, "SELECT status, message FROM sessions").rows()
    assert recorded == [("aborted", f"aborted by {stop.name}")]
