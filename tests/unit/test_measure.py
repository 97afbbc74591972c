"""The engine's measuring of one worker run, in process: what a run records, when it fails, the worker's spec,
the spread that decides adaptive runs, and the warm-up runs that are discarded.

Runs go through the script backend of test_adaptive_repetitions (a real Python process per instance) or, for
`record_run`, through finished instances built here.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from test_adaptive_repetitions import WORKER, ScriptBackend

from labtui.backends.base import BackendError, Instance, Labels
from labtui.core.events import Log, Result
from labtui.engine.bus import EventBus
from labtui.engine.context import RunContext
from labtui.engine.gate import StepGate
from labtui.engine.worker_runs import measure_worker, record_run, worker_spec, worst_cv
from labtui.parsers import Reading
from labtui.suites import load_suite


def _suite(tmp_path: Path, worker: str):
    path = tmp_path / "measure.toml"
    path.write_text(f'[suite]\nname = "measure"\nkind = "concurrent"\n\n[worker]\n{worker}')
    return load_suite(str(path))


def _context(tmp_path: Path, worker: str) -> tuple[RunContext, list]:
    script = tmp_path / "fake_worker.py"
    script.write_text(WORKER)
    backend = ScriptBackend(script)
    bus = EventBus()
    events = bus.subscribe()
    ctx = RunContext("measure-test", _suite(tmp_path, worker), backend, backend.host, bus, StepGate())
    return ctx, [bus, events]


def _published(held: list) -> list:
    bus, events = held
    bus.close()
    seen = []
    while (event := events.get_nowait()) is not None:
        seen.append(event)
    return seen


def _finished(output: str | None = None, *, boot_s: float | None = 0.25, exit_code: int | None = 0) -> Instance:
    return Instance(Labels("measure-test", "worker", "wo7"), "lab-wo7", "script", "local", "exited", 1.0, 2.0,
                    boot_s, exit_code, output=output)


PROBE_LINE = '{"benchmark": "fake", "metric": "op_s", "value": 4.5, "unit": "s", "better": "lower"}'


def test_a_boot_run_records_its_boot_time_with_its_instance_placement_and_run(tmp_path: Path) -> None:
    ctx, held = _context(tmp_path, 'program = "hello"\nmeasure = "boot"\n')
    assert ctx.suite.worker is not None
    readings = record_run(ctx, ctx.suite.worker, _finished(boot_s=0.25), placement="alone", run=3)
    assert readings == [Reading("boot", "boot_time", 0.25, "s", "lower")]
    (result,) = [e for e in _published(held) if isinstance(e, Result)]
    assert (result.benchmark, result.metric, result.value, result.unit, result.better) == (
        "boot", "boot_time", 0.25, "s", "lower")
    assert (result.instance_id, result.placement, result.run) == ("wo7", "alone", 3)


def test_an_output_run_records_every_reading_its_parser_finds(tmp_path: Path) -> None:
    ctx, held = _context(tmp_path, 'program = "hello"\nmeasure = "output"\n')
    assert ctx.suite.worker is not None
    second = PROBE_LINE.replace("op_s", "other").replace("4.5", "6.0")
    readings = record_run(ctx, ctx.suite.worker, _finished(f"chatter\n{PROBE_LINE}\n{second}\n", exit_code=None))
    assert [(r.metric, r.value) for r in readings] == [("op_s", 4.5), ("other", 6.0)]
    assert [(e.metric, e.value, e.run) for e in _published(held) if isinstance(e, Result)] == [
        ("op_s", 4.5, 0), ("other", 6.0, 0)]


def test_a_failed_run_names_its_exit_code_and_its_last_three_lines(tmp_path: Path) -> None:
    ctx, held = _context(tmp_path, 'program = "hello"\nmeasure = "output"\n')
    assert ctx.suite.worker is not None
    with pytest.raises(BackendError) as failed:
        record_run(ctx, ctx.suite.worker, _finished("one\ntwo\nthree\nfour\n", exit_code=2))
    assert str(failed.value) == "worker lab-wo7 exited with code 2: two / three / four"
    with pytest.raises(BackendError) as silent:
        record_run(ctx, ctx.suite.worker, _finished("", exit_code=1))
    assert str(silent.value) == "worker lab-wo7 exited with code 1"
    assert not [e for e in _published(held) if isinstance(e, Result)]


def test_a_run_that_measured_nothing_is_an_error_naming_the_backend(tmp_path: Path) -> None:
    boot, _ = _context(tmp_path, 'program = "hello"\nmeasure = "boot"\n')
    assert boot.suite.worker is not None
    with pytest.raises(BackendError, match="^backend script measured no boot time for lab-wo7$"):
        record_run(boot, boot.suite.worker, _finished(boot_s=None))
    output, _ = _context(tmp_path, 'program = "hello"\nmeasure = "output"\n')
    assert output.suite.worker is not None
    with pytest.raises(BackendError, match="^backend script returned no output for lab-wo7$"):
        record_run(output, output.suite.worker, _finished(None))
    with pytest.raises(BackendError, match=r"^worker lab-wo7 \(hello\): no JSON reading line"):
        record_run(output, output.suite.worker, _finished("nothing measured\n"))


def test_the_worker_spec_captures_output_only_when_measured_by_it_and_stderr_only_for_a_real_tool(
    tmp_path: Path,
) -> None:
    cases = {'program = "hello"\nmeasure = "boot"\n': (False, False),
             'program = "hello"\nmeasure = "output"\n': (True, False),
             'tool = "/usr/bin/stress-ng"\nmeasure = "output"\noutput = "stress-ng"\n': (True, True)}
    for worker, (output, stderr) in cases.items():
        ctx, _ = _context(tmp_path, worker)
        assert ctx.suite.worker is not None
        spec = worker_spec(ctx, "worker", ctx.suite.worker, cpus="1", start_at=12.5)
        assert (spec.capture_output, spec.capture_stderr) == (output, stderr), worker
        assert (spec.wait, spec.cpus, spec.start_at, spec.labels.role) == ("exit", "1", 12.5, "worker")


def _readings(*values: tuple[str, str, float]) -> list[Reading]:
    return [Reading(benchmark, metric, value, "s", "lower") for benchmark, metric, value in values]


def test_the_worst_cv_is_the_largest_over_metrics_each_with_two_values_or_more() -> None:
    assert worst_cv([]) == 0.0
    assert worst_cv(_readings(("b", "m", 1.0))) == 0.0  # one value: no spread
    steady_and_noisy = _readings(("b", "m", 2.0), ("b", "m", 2.0), ("b", "n", 1.0), ("b", "n", 3.0))
    assert worst_cv(steady_and_noisy) == pytest.approx(math.sqrt(2) / 2)
    # the same metric of two benchmarks is two metrics: neither has a spread
    assert worst_cv(_readings(("a", "m", 1.0), ("b", "m", 3.0))) == 0.0
    # a negative mean gives a negative cv: its size counts
    assert worst_cv(_readings(("b", "m", -1.0), ("b", "m", -3.0))) == pytest.approx(math.sqrt(2) / 2)
    # a zero mean gives nan: no verdict from it, the others decide
    assert worst_cv(_readings(("b", "z", -1.0), ("b", "z", 1.0), ("b", "m", 1.0), ("b", "m", 1.1))) == (
        pytest.approx(math.sqrt(0.005) / 1.05))


@pytest.mark.parametrize("warmup", [0, 2])
async def test_warm_up_runs_are_made_and_discarded_then_the_runs_are_numbered_from_one(tmp_path: Path,
                                                                                       warmup: int) -> None:
    args = ", ".join(f'"{a}"' for a in (str(tmp_path / "count"), "op_s", "1.0", "2.0", "3.0", "4.0", "5.0"))
    ctx, held = _context(tmp_path, f'program = "hello"\nargs = [{args}]\nmeasure = "output"\nwarmup = {warmup}\n'
                                   f'runs = 3\n')
    assert isinstance(ctx.backend, ScriptBackend)
    await measure_worker(ctx)
    assert ctx.backend.created == warmup + 3
    results = [e for e in _published(held) if isinstance(e, Result)]
    assert [(r.run, r.value) for r in results] == [(1, 1.0 + warmup), (2, 2.0 + warmup), (3, 3.0 + warmup)]


async def test_the_adaptive_verdict_names_the_step_and_the_placement(tmp_path: Path) -> None:
    args = ", ".join(f'"{a}"' for a in (str(tmp_path / "count"), "op_s", "2.0"))
    ctx, held = _context(tmp_path, f'program = "hello"\nargs = [{args}]\nmeasure = "output"\nwarmup = 0\n'
                                   'runs = 2\nmax_runs = 4\ntarget_cv = 0.05\n')
    ctx.position.step = 3
    await measure_worker(ctx, placement="alone")
    (verdict,) = [e for e in _published(held) if isinstance(e, Log) and e.category == "adaptive"]
    assert verdict.message.endswith("after 2 runs at step 3 (alone)")


def test_an_unreadable_run_names_the_image_of_an_image_worker(tmp_path: Path) -> None:
    ctx, _ = _context(tmp_path, 'image = "my/probe"\nmeasure = "output"\n')
    assert ctx.suite.worker is not None
    with pytest.raises(BackendError, match=r"^worker lab-wo7 \(my/probe\): no JSON reading line"):
        record_run(ctx, ctx.suite.worker, _finished("nothing measured\n"))
