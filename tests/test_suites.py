"""Suite files: the built-ins, --set overrides, and errors that say where."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from labtui.suites import Program, Scale, SuiteError, Worker, list_suites, load_suite, suite_to_dict

GOOD = """\
[suite]
name = "t"
kind = "scaling"
repetitions = 2

[scale]
steps = 3
per_step = 4

[worker]
program = "hello"
measure = "boot"

[background]
program = "sleeper"
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "x.toml"
    path.write_text(text)
    return str(path)


def error(tmp_path: Path, text: str, overrides: tuple[str, ...] = ()) -> SuiteError:
    with pytest.raises(SuiteError) as caught:
        load_suite(write(tmp_path, text), overrides)
    return caught.value


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


# --- built-ins ------------------------------------------------------------------


def test_boot_scaling_reproduces_the_study_boot_benchmark() -> None:
    suite = load_suite("boot-scaling")
    assert (suite.name, suite.kind, suite.repetitions) == ("boot-scaling", "scaling", 5)
    assert suite.scale == Scale(start=0, steps=100, per_step=10)
    assert suite.worker == Worker(program="hello", measure="boot", runs=1)
    assert suite.background == Program(program="sleeper")
    assert suite.total_background() == 1000
    assert suite.max_instances() == 1001
    assert suite.scale.levels()[:3] == (0, 10, 20)
    assert suite.source.endswith("boot-scaling.toml")


def test_memory_scaling_has_no_worker_and_measures_memory() -> None:
    suite = load_suite("memory-scaling")
    assert suite.worker is None
    assert suite.measure.memory is True
    assert suite.background == Program(program="sleeper")
    assert (suite.repetitions, suite.total_background()) == (5, 1000)


def test_list_suites_lists_the_built_ins() -> None:
    infos = {info.name: info for info in list_suites()}
    assert {"boot-scaling", "memory-scaling"} <= infos.keys()
    assert all(info.kind in ("scaling", "isolation") and info.path.is_file() for info in infos.values())
    assert infos["isolation-cpu"].kind == "isolation"


def test_load_by_path(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, GOOD))
    assert suite.scale == Scale(start=0, steps=3, per_step=4)
    assert suite.sampling.interval_s == 1.0 and suite.worker.runs == 1


def test_unknown_builtin_name_lists_built_ins() -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite("boot-scalin")
    assert "did you mean 'boot-scaling'" in str(caught.value)
    assert "memory-scaling" in str(caught.value)


def test_suite_to_dict_is_json() -> None:
    data = suite_to_dict(load_suite("boot-scaling", ["scale.steps=2"]))
    assert json.loads(json.dumps(data)) == data
    assert data["scale"]["steps"] == 2 and data["overrides"] == ["scale.steps=2"]


# --- overrides ------------------------------------------------------------------


def test_overrides_of_repetitions_steps_and_per_step() -> None:
    suite = load_suite("boot-scaling", ["suite.repetitions=1", "scale.steps=3", "scale.per_step=2"])
    assert suite.repetitions == 1
    assert suite.scale == Scale(start=0, steps=3, per_step=2)
    assert suite.overrides == ("suite.repetitions=1", "scale.steps=3", "scale.per_step=2")


def test_override_value_parsed_as_toml_else_string() -> None:
    suite = load_suite("boot-scaling", ["worker.program=sleeper", "sampling.settle_s=2", 'worker.args=["-v"]'])
    assert suite.worker.program == "sleeper"
    assert suite.sampling.settle_s == 2.0 and isinstance(suite.sampling.settle_s, float)
    assert suite.worker.args == ("-v",)


def test_override_of_unknown_key_names_set() -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite("boot-scaling", ["scale.step=3"])
    err = caught.value
    assert (err.file, err.line, err.key) == ("--set", None, "scale.step")
    assert str(err).startswith("--set scale.step: unknown key")
    assert "did you mean 'scale.steps'" in str(err)


def test_override_with_bad_value_blames_set() -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite("boot-scaling", ["scale.steps=ten"])
    assert str(caught.value) == "--set scale.steps: expected an integer >= 1, got 'ten'"


def test_override_without_equals() -> None:
    with pytest.raises(SuiteError, match="expected key.path=value"):
        load_suite("boot-scaling", ["scale.steps"])


# --- errors ---------------------------------------------------------------------


def test_wrong_type_names_file_line_and_key(tmp_path: Path) -> None:
    text = GOOD.replace("steps = 3", 'steps = "ten"')
    err = error(tmp_path, text)
    assert err.file.endswith("x.toml")
    assert (err.line, err.key) == (line_of(text, "steps ="), "scale.steps")
    assert str(err) == f"{err.file}:{err.line}: scale.steps: expected an integer >= 1, got 'ten'"


def test_bool_is_not_an_int(tmp_path: Path) -> None:
    err = error(tmp_path, GOOD.replace("repetitions = 2", "repetitions = true"))
    assert err.key == "suite.repetitions" and "got true" in err.message


def test_int_is_accepted_where_a_float_is(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, GOOD + "[sampling]\ninterval_s = 2\n"))
    assert suite.sampling.interval_s == 2.0


def test_float_out_of_range(tmp_path: Path) -> None:
    err = error(tmp_path, GOOD + "[sampling]\ninterval_s = 0.01\n")
    assert err.key == "sampling.interval_s" and "from 0.1 to 60" in err.message


def test_unknown_key_suggests_the_closest(tmp_path: Path) -> None:
    text = GOOD.replace("per_step = 4", "per_stp = 4")
    err = error(tmp_path, text)
    assert (err.key, err.line) == ("scale.per_stp", line_of(text, "per_stp"))
    assert "did you mean 'per_step'?" in err.message


def test_unknown_table(tmp_path: Path) -> None:
    text = GOOD + "\n[sampeling]\ninterval_s = 1\n"
    err = error(tmp_path, text)
    assert (err.key, err.line) == ("sampeling", line_of(text, "[sampeling]"))
    assert "unknown table, did you mean 'sampling'?" in err.message


def test_missing_required_key_points_at_its_table(tmp_path: Path) -> None:
    text = GOOD.replace("steps = 3\n", "")
    err = error(tmp_path, text)
    assert (err.key, err.line, err.message) == ("scale.steps", line_of(text, "[scale]"), "missing required key")


def test_syntax_error_gives_line(tmp_path: Path) -> None:
    text = GOOD.replace("steps = 3", "steps = = 3")
    err = error(tmp_path, text)
    assert err.line == line_of(text, "steps = = 3")
    assert err.key is None and err.message.startswith("invalid TOML:")


@pytest.mark.parametrize("kind", ["creation", "fairshare"])
def test_planned_kinds_are_not_supported_yet(tmp_path: Path, kind: str) -> None:
    err = error(tmp_path, GOOD.replace('kind = "scaling"', f'kind = "{kind}"'))
    assert err.key == "suite.kind"
    assert "not supported yet" in err.message and "supported kinds: scaling" in err.message


def test_suite_without_worker_or_memory(tmp_path: Path) -> None:
    text = GOOD.replace('[worker]\nprogram = "hello"\nmeasure = "boot"\n', "")
    err = error(tmp_path, text)
    assert "add a [worker] table or set measure.memory = true" in err.message
    assert load_suite(write(tmp_path, text + "[measure]\nmemory = true\n")).worker is None


def test_program_and_image_are_exclusive(tmp_path: Path) -> None:
    text = GOOD.replace('program = "hello"', 'program = "hello"\nimage = "hello:latest"')
    err = error(tmp_path, text)
    assert (err.key, err.line) == ("worker", line_of(text, "[worker]"))


def test_bad_probe_name(tmp_path: Path) -> None:
    err = error(tmp_path, GOOD.replace('program = "hello"', 'program = "Hello World"'))
    assert err.key == "worker.program" and "probe name" in err.message


def test_error_survives_pickling(tmp_path: Path) -> None:
    err = error(tmp_path, GOOD.replace("steps = 3", "steps = 0"))
    assert str(pickle.loads(pickle.dumps(err))) == str(err)


def test_a_suite_names_its_backend_and_only_valid_names():
    assert load_suite("docker-boot-scaling").backend == "docker"
    assert load_suite("boot-scaling").backend is None
    with pytest.raises(SuiteError, match="suite.backend"):
        load_suite("boot-scaling", ["suite.backend=Not A Name"])
