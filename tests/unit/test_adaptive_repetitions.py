"""Adaptive runs (issue 23, part 2): the engine repeats the worker until the spread of a step's
readings is within ``worker.target_cv`` or ``worker.max_runs`` runs were made, and says why it stopped.

The workers are real processes: a small Python script per run, started by a backend that runs
scripts, whose stdout goes through the engine's own measure_worker and probe parser.  A script cycles
through the values it is given, so a worker is steady, noisy or settling by construction.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from labtui.backends.base import Availability, Backend, Instance, InstanceSpec
from labtui.backends.kit import lab_name
from labtui.core.events import Log, Result
from labtui.engine.bus import EventBus
from labtui.engine.context import RunContext
from labtui.engine.gate import StepGate
from labtui.engine.worker_runs import measure_worker
from labtui.hosts.local import LocalHost
from labtui.suites import load_suite

# One run of the fake worker: print the next of its values (a counter file remembers which) as
# probe readings; each metric named in argv[2] gets the value, "steady" always 1.0.
WORKER = r'''
import json, sys
state, metrics, values = sys.argv[1], sys.argv[2].split(","), [float(v) for v in sys.argv[3:]]
try:
    count = int(open(state).read())
except FileNotFoundError:
    count = 0
open(state, "w").write(str(count + 1))
for metric in metrics:
    value = 1.0 if metric == "steady" else values[count % len(values)]
    print(json.dumps({"benchmark": "fake", "metric": metric, "value": value, "unit": "s", "better": "lower"}))
'''

RUNS, MAX_RUNS, TARGET = 3, 8, 0.05


class ScriptBackend(Backend):
    """Runs the worker script as a process per instance and returns its stdout."""

    name = "script"

    def __init__(self, script: Path) -> None:
        super().__init__(LocalHost())
        self.script = script
        self.created = 0

    async def check(self) -> Availability:
        return Availability(True, "runs scripts")

    async def create(self, spec: InstanceSpec) -> Instance:
        started = time.time()
        proc = await asyncio.create_subprocess_exec(sys.executable, str(self.script), *spec.args,
                                                    stdout=asyncio.subprocess.PIPE)
        out, _ = await proc.communicate()
        self.created += 1
        ended = time.time()
        return Instance(spec.labels, lab_name(spec.labels), self.name, "local", "exited", started, ended,
                        ended - started, proc.returncode, output=out.decode())

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        return None

    async def list(self, session: str | None = None) -> list[Instance]:
        return []

    async def memory_bytes(self, instance: Instance) -> int | None:
        return None


def _suite(tmp_path: Path, metrics: str, values: Sequence[float]):
    args = ", ".join(f'"{a}"' for a in (str(tmp_path / "count"), metrics, *map(str, values)))
    path = tmp_path / "adaptive.toml"
    path.write_text(f"""
[suite]
name = "adaptive"
kind = "concurrent"

[worker]
program = "hello"  # a probe name (the suite checks it); the script backend runs its script
args = [{args}]
measure = "output"
warmup = 0
runs = {RUNS}
max_runs = {MAX_RUNS}
target_cv = {TARGET}
""")
    return load_suite(str(path))


async def _measure(tmp_path: Path, metrics: str, values: Sequence[float]) -> tuple[int, list[Result], list[Log]]:
    script = tmp_path / "fake_worker.py"
    script.write_text(WORKER)
    backend = ScriptBackend(script)
    bus = EventBus()
    events = bus.subscribe()
    ctx = RunContext("adaptive-test", _suite(tmp_path, metrics, values), backend, backend.host, bus, StepGate())
    await measure_worker(ctx)
    bus.close()
    seen = []
    while (event := events.get_nowait()) is not None:
        seen.append(event)
    return (backend.created, [e for e in seen if isinstance(e, Result)],
            [e for e in seen if isinstance(e, Log) and e.category in ("adaptive", "unstable")])


async def test_a_steady_worker_stops_at_the_minimum(tmp_path: Path) -> None:
    runs, results, logs = await _measure(tmp_path, "op_s", [2.0])
    assert runs == RUNS and [r.value for r in results] == [2.0] * RUNS
    assert [(log.level, log.category) for log in logs] == [("info", "adaptive")]
    assert f"after {RUNS} runs" in logs[0].message


async def test_a_noisy_worker_stops_at_the_maximum_with_a_warning(tmp_path: Path) -> None:
    runs, results, logs = await _measure(tmp_path, "op_s", [1.0, 3.0])
    assert runs == MAX_RUNS and len(results) == MAX_RUNS  # every run is recorded, none dropped
    assert [(log.level, log.category) for log in logs] == [("warning", "unstable")]
    assert f"after {MAX_RUNS} runs (worker.max_runs)" in logs[0].message


async def test_the_noisiest_metric_decides(tmp_path: Path) -> None:
    runs, results, logs = await _measure(tmp_path, "steady,op_s", [1.0, 3.0])
    assert runs == MAX_RUNS and len(results) == 2 * MAX_RUNS
    assert [log.category for log in logs] == ["unstable"]


@pytest.mark.parametrize("first, then, stops_at", [(1.15, 1.08, 5), (1.12, 1.06, 4)])
async def test_a_settling_worker_stops_at_the_first_run_within_the_target(tmp_path: Path, first, then,
                                                                          stops_at) -> None:
    values = [1.0, first] + [then] * (MAX_RUNS - 2)
    runs, results, logs = await _measure(tmp_path, "op_s", values)
    cvs = {k: statistics.stdev(values[:k]) / statistics.fmean(values[:k]) for k in range(RUNS, MAX_RUNS + 1)}
    assert min(k for k, cv in cvs.items() if cv <= TARGET) == stops_at  # the case is what it says
    assert runs == stops_at and [r.value for r in results] == values[:stops_at]
    assert [log.category for log in logs] == ["adaptive"]
