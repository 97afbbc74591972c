"""Tests of labtui.suites.model that close the escapes of its mutation run (tests/mutation, target
suite-validator; docs/testing.md).  Each loads a suite file written to tmp_path and checks what the
checked suite promises: that a file leaving an optional key out means the model's default (the
engine builds some parts, such as the fairshare worker, from those defaults), that a loaded suite
cannot be changed, and the plan it implies (levels, steps, instances, probe, caps)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from labtui.suites import Measure, Program, Sampling, Scale, Suite, Worker, list_suites, load_suite
from labtui.suites.kinds import kind_named, most_instances, steps_per_repetition
from labtui.suites.kinds.concurrent import Concurrent
from labtui.suites.kinds.creation import Creation
from labtui.suites.kinds.fairshare import Fairshare
from labtui.suites.kinds.isolation import Isolation
from labtui.suites.model import Load

SCALING = '[suite]\nname = "t"\nkind = "scaling"\n[scale]\nsteps = 3\nper_step = 4\n[background]\nprogram = "sleeper"\n'
WORKER = '[worker]\nprogram = "hello"\nmeasure = "boot"\n'
ISOLATION = ('[suite]\nname = "i"\nkind = "isolation"\n[worker]\nprogram = "hello"\nmeasure = "boot"\n'
             '[attacker]\nprogram = "attack-cpu"\n')
CONCURRENT = '[suite]\nname = "c"\nkind = "concurrent"\n[worker]\nprogram = "hello"\nmeasure = "boot"\n'
FAIRSHARE = '[suite]\nname = "fs"\nkind = "fairshare"\n'
LOAD = ('[suite]\nname = "l"\nkind = "scaling"\n[scale]\nsteps = 3\nper_step = 4\n[background]\nimage = "nginx"\n'
        '[worker]\nimage = "nginx"\nmeasure = "load"\n[load]\ntool = "wrk"\n')


def load(tmp_path: Path, text: str) -> Suite:
    path = tmp_path / "x.toml"
    path.write_text(text)
    return load_suite(str(path))


def defaults(suite: Suite, **given) -> Suite:
    """The Suite the model builds from only the required fields, its kind's tables at their defaults (and ``given``)."""
    settings = tuple((table, cls()) for table, (cls, _) in kind_named(suite.kind).tables.items())
    return Suite(name=suite.name, description="", kind=suite.kind, repetitions=1, scale=suite.scale,
                 worker=suite.worker, background=suite.background, measure=Measure(), sampling=Sampling(),
                 source=suite.source, settings=settings, **given)


# --- a key left out means the model's default ------------------------------------------------


def test_a_scaling_suite_without_optional_keys_loads_as_the_models_defaults(tmp_path: Path) -> None:
    suite = load(tmp_path, SCALING + WORKER)
    assert suite.scale == Scale(steps=3, per_step=4)
    assert suite.worker == Worker(program="hello", measure="boot")
    assert (suite.worker.runs, suite.worker.warmup) == (1, 1)
    assert suite == defaults(suite)
    assert suite.operation_timeout_s == 120.0 and suite.sampling == Sampling(1.0, 0.0, 10.0)


def test_a_load_table_with_only_its_tool_loads_as_the_models_defaults(tmp_path: Path) -> None:
    suite = load(tmp_path, LOAD)
    assert suite.load == Load(tool="wrk")
    assert suite.load == Load("wrk", 80, 30, 14, 20, 100000, 16, (), 30.0, 900.0)
    assert suite == defaults(suite, load=Load())


def test_isolation_concurrent_and_creation_tables_left_out_load_as_the_models_defaults(tmp_path: Path) -> None:
    isolation = load(tmp_path, ISOLATION)
    assert isolation.table(Isolation) == Isolation() == Isolation(settle_s=0.5)
    assert isolation == defaults(isolation, attacker=Program(program="attack-cpu"))
    concurrent = load(tmp_path, CONCURRENT)
    assert concurrent.table(Concurrent) == Concurrent() == Concurrent((1, 2, 4, 8), 1.0)
    assert Creation() == Creation("host", 1.0)
    assert concurrent == defaults(concurrent)


def test_a_fairshare_table_left_out_loads_as_the_models_defaults(tmp_path: Path) -> None:
    suite = load(tmp_path, FAIRSHARE)
    assert suite.table(Fairshare) == Fairshare() == Fairshare(8, 0.25, ("weight", "cap"), 60.0, None, "output", None, None, 1.0)
    assert suite == defaults(suite)


# --- a loaded suite cannot be changed --------------------------------------------------------


@pytest.mark.parametrize("part, field", [
    (lambda s: s, "name"), (lambda s: s.scale, "steps"), (lambda s: s.worker, "runs"), (lambda s: s.load, "port"),
    (lambda s: s.background, "image"), (lambda s: s.measure, "memory"), (lambda s: s.sampling, "interval_s"),
    (lambda s: s.table(Isolation), "settle_s"), (lambda s: s.table(Concurrent), "instances"),
    (lambda s: s.table(Creation), "where"), (lambda s: s.table(Fairshare), "instances"), (lambda s: s, "settings"),
])
def test_no_part_of_a_loaded_suite_can_be_changed(tmp_path: Path, part, field: str) -> None:
    target = part(load(tmp_path, LOAD))
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(target, field, getattr(target, field))


# --- the plan a suite implies ----------------------------------------------------------------


def test_the_levels_run_from_the_start_through_the_last_step(tmp_path: Path) -> None:
    suite = load(tmp_path, SCALING.replace("steps = 3", "start = 2\nsteps = 3") + WORKER)
    assert suite.scale.levels() == (2, 6, 10, 14)
    assert suite.scale.levels()[-1] == suite.total_background() == 14


def test_a_repetition_measures_the_baseline_and_every_step_or_each_count(tmp_path: Path) -> None:
    assert steps_per_repetition(load(tmp_path, SCALING.replace("steps = 3", "steps = 5") + WORKER)) == 6
    assert steps_per_repetition(load(tmp_path, CONCURRENT + "[concurrent]\ninstances = [1, 2]\n")) == 2
    assert most_instances(load(tmp_path, CONCURRENT + "[concurrent]\ninstances = [1, 2, 3, 5, 9]\n")) == 9
    assert steps_per_repetition(load(tmp_path, ISOLATION)) == 5
    assert steps_per_repetition(load(tmp_path, FAIRSHARE)) == 3


def test_without_a_worker_the_most_instances_are_the_background(tmp_path: Path) -> None:
    suite = load(tmp_path, SCALING + "[measure]\nmemory = true\n")
    assert suite.worker is None and most_instances(suite) == suite.total_background() == 12
    assert most_instances(load(tmp_path, SCALING + WORKER)) == 13
    for text in (ISOLATION, CONCURRENT, FAIRSHARE):
        assert load(tmp_path, text).total_background() == 0


@pytest.mark.parametrize("table, probe", [
    ("", "hourglass"), ('measure = "cpu_time"\n', "attack-cpu"), ('program = "arith"\n', "arith"),
    ('image = "busybox"\n', None), ('image = "busybox"\nmeasure = "cpu_time"\n', None),
])
def test_the_fairshare_instances_run_the_named_probe_or_image(tmp_path: Path, table: str, probe: str | None) -> None:
    assert load(tmp_path, FAIRSHARE + "[fairshare]\n" + table).table(Fairshare).probe() == probe


def test_caps_split_the_cpu_set_as_requested(tmp_path: Path) -> None:
    fair = load(tmp_path, FAIRSHARE + "[fairshare]\ninstances = 4\nreserved_share = 0.4\n").table(Fairshare)
    assert fair.caps(1) == pytest.approx((0.4, 0.2))
    assert fair.caps(4) == pytest.approx((1.6, 0.8))
    reserved, other = fair.caps(4)
    assert reserved + 3 * other == pytest.approx(4.0)


def test_the_equal_configuration_requests_the_same_share_for_everyone(tmp_path: Path) -> None:
    fair = load(tmp_path, FAIRSHARE + "[fairshare]\ninstances = 4\nreserved_share = 0.4\n").table(Fairshare)
    assert fair.requested("equal") == pytest.approx((0.25, 0.25))
    assert fair.requested("weight") == fair.requested("cap") == pytest.approx((0.4, 0.2))


def test_a_listed_suite_cannot_be_changed() -> None:
    info = next(i for i in list_suites() if i.name == "boot-scaling")
    assert info.kind == "scaling" and info.path.name == "boot-scaling.toml"
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.kind = "isolation"
