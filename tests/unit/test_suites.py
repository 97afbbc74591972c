"""Suite files: the built-ins, --set overrides, and errors that say where."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
from pathlib import Path

import cli_run
import duckdb
import pytest

from labtui.suites import (
    Program,
    Scale,
    SuiteError,
    Worker,
    all_kinds,
    list_suites,
    load_suite,
    suite_to_dict,
)
from labtui.suites.kinds import most_instances, steps_per_repetition
from labtui.suites.kinds.concurrent import Concurrent
from labtui.suites.kinds.fairshare import Fairshare

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
    # 5 boots a step, their median the step's figure; as many warm-up boots as a step starts
    assert suite.worker == Worker(program="hello", measure="boot", runs=5, warmup=10)
    assert suite.background == Program(program="sleeper")
    assert suite.total_background() == 1000
    assert most_instances(suite) == 1001
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
    assert all(info.kind in all_kinds() and info.path.is_file() for info in infos.values())
    assert infos["isolation-cpu"].kind == "isolation"


def test_load_by_path(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, GOOD))
    assert suite.scale == Scale(start=0, steps=3, per_step=4)
    assert suite.sampling.interval_s == 1.0 and suite.worker.runs == 1


def test_unknown_builtin_name_says_the_close_one_or_lists_built_ins() -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite("boot-scalin")
    assert str(caught.value) == "boot-scalin: no such suite; did you mean 'boot-scaling'?"
    with pytest.raises(SuiteError) as caught:
        load_suite("nosuch")
    assert str(caught.value).startswith("nosuch: expected a suite file or one of aim9-arithmetic, ")
    assert "memory-scaling" in str(caught.value)  # every one: the CLI cuts the line to the terminal's width


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
    assert str(caught.value) == "--set scale.steps: expected an integer from 1 to 100000, got 'ten'"


def test_override_without_equals() -> None:
    with pytest.raises(SuiteError, match="expected key.path=value") as caught:
        load_suite("boot-scaling", ["scale.steps"])
    assert (caught.value.file, caught.value.key) == ("--set", "scale.steps")


# --- errors ---------------------------------------------------------------------


def test_wrong_type_names_file_line_and_key(tmp_path: Path) -> None:
    text = GOOD.replace("steps = 3", 'steps = "ten"')
    err = error(tmp_path, text)
    assert err.file.endswith("x.toml")
    assert (err.line, err.key) == (line_of(text, "steps ="), "scale.steps")
    assert str(err) == f"{err.file}:{err.line}: scale.steps: expected an integer from 1 to 100000, got 'ten'"


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


def test_unknown_kind_lists_the_supported_ones(tmp_path: Path) -> None:
    err = error(tmp_path, GOOD.replace('kind = "scaling"', 'kind = "migration"'))
    assert err.key == "suite.kind"
    assert "unknown kind 'migration'" in err.message and "supported kinds: scaling" in err.message
    assert "fairshare" in err.message


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


# --- profiles -------------------------------------------------------------------

PROFILED = GOOD + """
[profiles.quick]
"scale.steps" = 1
"suite.repetitions" = 1
"worker.args" = ["-q"]

[profiles.nested]
scale.per_step = 2
"""


def test_profile_is_applied_like_overrides_and_recorded(tmp_path: Path) -> None:
    path = write(tmp_path, PROFILED)
    plain = load_suite(path)
    assert (plain.scale.steps, plain.repetitions, plain.worker.args, plain.profile) == (3, 2, (), None)
    quick = load_suite(path, profile="quick")
    assert (quick.scale.steps, quick.scale.per_step, quick.repetitions, quick.worker.args) == (1, 4, 1, ("-q",))
    assert quick.profile == "quick" and quick.overrides == ()
    assert suite_to_dict(quick)["profile"] == "quick"
    # `scale.per_step = 2` written without quotes is the same dotted key
    assert load_suite(path, profile="nested").scale == Scale(start=0, steps=3, per_step=2)


def test_set_wins_over_the_profile(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, PROFILED), ["scale.steps=7"], profile="quick")
    assert (suite.scale.steps, suite.repetitions) == (7, 1)
    assert suite.overrides == ("scale.steps=7",)


def test_profile_with_unknown_key_names_file_line_and_key(tmp_path: Path) -> None:
    text = PROFILED.replace('"scale.steps" = 1', '"scale.stepz" = 1')
    err = error(tmp_path, text)  # checked even when no profile is chosen
    assert (err.line, err.key) == (line_of(text, "scale.stepz"), "profiles.quick.scale.stepz")
    assert "unknown suite key, did you mean 'scale.steps'?" in err.message
    err = error(tmp_path, PROFILED + '"sampeling.interval_s" = 2\n')
    assert err.key == "profiles.nested.sampeling.interval_s" and "unknown suite key" in err.message


def test_profile_value_of_the_wrong_type_names_file_line_and_key(tmp_path: Path) -> None:
    text = PROFILED.replace('"suite.repetitions" = 1', '"suite.repetitions" = "one"')
    err = error(tmp_path, text)
    assert err.file.endswith("x.toml")
    assert (err.line, err.key) == (line_of(text, '"suite.repetitions" = "one"'), "profiles.quick.suite.repetitions")
    assert str(err) == f"{err.file}:{err.line}: profiles.quick.suite.repetitions: expected an integer from 1 to 10000, got 'one'"
    err = error(tmp_path, PROFILED.replace('"worker.args" = ["-q"]', '"worker.args" = "-q"'))
    assert err.key == "profiles.quick.worker.args" and "a list of strings" in err.message


def test_profile_that_breaks_a_rule_is_blamed_on_its_line(tmp_path: Path) -> None:
    text = PROFILED + '\n[profiles.loaded]\n"load.tool" = "wrk"\n'
    path = write(tmp_path, text)
    assert load_suite(path).load is None  # a profile that is not chosen is only checked key by key
    with pytest.raises(SuiteError) as caught:
        load_suite(path, profile="loaded")
    err = caught.value
    assert (err.line, err.key) == (line_of(text, '"load.tool"'), "load")
    assert 'only a worker with measure = "load" uses [load]' in err.message


def test_profile_must_be_a_table(tmp_path: Path) -> None:
    err = error(tmp_path, GOOD + "\n[profiles]\nquick = 3\n")
    assert (err.key, err.line) == ("profiles.quick", line_of(GOOD + "\n[profiles]\nquick = 3\n", "quick = 3"))
    assert "expected a table of suite keys" in err.message


def test_unknown_profile_lists_the_suite_profiles(tmp_path: Path) -> None:
    path = write(tmp_path, PROFILED)
    with pytest.raises(SuiteError) as caught:
        load_suite(path, profile="quik")
    assert "unknown profile 'quik', did you mean 'quick'? profiles of this suite: quick, nested" in str(caught.value)
    with pytest.raises(SuiteError, match="unknown profile 'slow'; profiles of this suite: quick, nested"):
        load_suite(path, profile="slow")
    with pytest.raises(SuiteError, match=r"unknown profile 'quick': the suite has no \[profiles.NAME\] tables"):
        load_suite(write(tmp_path, GOOD), profile="quick")


@pytest.mark.parametrize("name", [info.name for info in list_suites()])
def test_every_builtin_has_a_small_quick_profile(name: str) -> None:
    full = load_suite(name)
    quick = load_suite(name, profile="quick")
    assert quick.profile == "quick" and quick.name == full.name
    measurements = quick.repetitions * steps_per_repetition(quick)
    assert measurements <= 10 and most_instances(quick) <= 32, (measurements, most_instances(quick))
    assert measurements < full.repetitions * steps_per_repetition(full) or quick.worker != full.worker \
        or quick.fairshare != full.fairshare
    assert quick.reproduces.startswith("study 00"), name


def test_new_study_suites_reproduce_their_tables() -> None:
    lmbench = {load_suite(info.name).worker.args[:1] for info in list_suites() if info.name.startswith("lmbench-")}
    assert {("fork",), ("exec",), ("shell",), ("map",), ("pagefault",)} <= lmbench  # Table 2's rows
    scale = load_suite("concurrent-sqlite")
    assert (scale.kind, scale.table(Concurrent).instances) == ("concurrent", (1, 2, 4, 8))
    assert scale.reproduces == "study 004 §4.4, Fig 7"
    disk = load_suite("isolation-disk")
    assert disk.attacker.program == "attack-disk" and disk.worker.program == "sqlite"
    assert load_suite("unixbench-execl").table(Concurrent).instances == (1, 2)


# --- the command line -------------------------------------------------------------


def labtui(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "400"}
    return cli_run.labtui(*args, env=env, timeout=120)


def test_run_with_a_profile_on_the_process_backend(tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    out = labtui(tmp_path, "run", "lmbench-fork", "--profile", "quick", "--set", 'worker.args=["fork", "0.2"]',
                 "--set", "sampling.quiet_timeout_s=0", "--db", str(db))
    assert out.returncode == 0, out.stderr
    con = duckdb.connect(str(db), read_only=True)
    (config,), = con.execute("select config from sessions").fetchall()
    recorded = json.loads(config)
    # the profile's repetitions, the --set's args over the profile's
    assert (recorded["profile"], recorded["repetitions"], recorded["worker"]["args"]) == ("quick", 2, ["fork", "0.2"])
    forks = con.execute("select repetition, value, unit, better from results where metric = 'fork_us' "
                        "order by repetition").fetchall()
    rates = dict(con.execute("select repetition, value from results where metric = 'fork_us_rate_sum'").fetchall())
    con.close()
    # one fork time per repetition of the profile, in microseconds, lower is better ...
    assert [(rep, unit, better) for rep, _, unit, better in forks] == [(1, "us", "lower"), (2, "us", "lower")]
    # ... parsed from the probe's output: a time, and the one instance's rate is its inverse
    for rep, value, _, _ in forks:
        assert value > 0 and rates[rep] == pytest.approx(1e6 / value, rel=1e-6)


def test_run_with_an_unknown_profile_is_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "x.duckdb"
    out = labtui(tmp_path, "run", "lmbench-fork", "--profile", "slow", "--db", str(db))
    assert out.returncode == 2
    assert "unknown profile 'slow'" in out.stderr and "profiles of this suite: quick" in out.stderr
    assert not db.exists()


def test_suites_command_says_what_each_reproduces(tmp_path: Path) -> None:
    out = labtui(tmp_path, "suites")
    assert out.returncode == 0
    assert "reproduces" in out.stdout
    row = next(line for line in out.stdout.splitlines() if " lmbench-fork " in line)
    assert "study 004 §4.2, Table 2: fork process" in row and "concurrent" in row


# --- the validator's edges (the escapes of the suite-loader mutation run, docs/testing.md) ----------

FAIRSHARE = '[suite]\nname = "fs"\nkind = "fairshare"\n'
CREATION = ('[suite]\nname = "c"\nkind = "creation"\n[scale]\nsteps = 3\nper_step = 1\n'
            '[worker]\nprogram = "proc"\nargs = ["fork", "1"]\nmeasure = "output"\n[background]\nprogram = "sleeper"\n')


def suite_error(tmp_path: Path, text: str, overrides: tuple[str, ...] = ()) -> SuiteError:
    with pytest.raises(SuiteError) as caught:
        load_suite(write(tmp_path, text), list(overrides))
    return caught.value


@pytest.mark.parametrize("cpus", ["0", "2-2", "0-3", "0,2-3", "1,1", "10-12,14"])
def test_a_cpu_list_with_ascending_ranges_is_taken(tmp_path: Path, cpus: str) -> None:
    assert load_suite(write(tmp_path, FAIRSHARE + f'[fairshare]\ncpus = "{cpus}"\n')).table(Fairshare).cpus == cpus


@pytest.mark.parametrize("cpus", ["3-2", "0,3-1", "", "0-", "-1", "0;1", "a", "0-1-2"])
def test_a_cpu_list_with_a_descending_range_or_junk_is_refused(tmp_path: Path, cpus: str) -> None:
    err = suite_error(tmp_path, FAIRSHARE + f'[fairshare]\ncpus = "{cpus}"\n')
    assert err.key == "fairshare.cpus" and "a CPU list" in err.message


@pytest.mark.parametrize("text", ["with space", "tab\there", "line\nbreak", "~tilde", "é"])
def test_printable_text_is_taken(tmp_path: Path, text: str) -> None:
    suite = load_suite(write(tmp_path, GOOD.replace('name = "t"\n', f'name = "t"\ndescription = {json.dumps(text)}\n')))
    assert suite.description == text


@pytest.mark.parametrize("char", ["\x00", "\x01", "\x1b", "\x1f", "\x7f", "\r"])
def test_control_characters_are_refused(tmp_path: Path, char: str) -> None:
    err = suite_error(tmp_path, GOOD.replace('name = "t"\n', f'name = "t"\ndescription = {json.dumps("a" + char + "b")}\n'))
    assert err.key == "suite.description" and "no control characters" in err.message


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", '"1.5"', "true"])
def test_a_number_key_takes_finite_numbers_only(value: str) -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite("boot-scaling", [f"sampling.settle_s={value}"])
    assert caught.value.key == "sampling.settle_s" and "a number from" in caught.value.message


def test_a_number_key_takes_an_integer_as_a_float() -> None:
    settle = load_suite("boot-scaling", ["sampling.settle_s=3"]).sampling.settle_s
    assert settle == 3.0 and isinstance(settle, float)


@pytest.mark.parametrize(("extra", "key", "message"), [
    ("start = 1\n", "scale.start", "starts from no instances: expected 0, got 1"),
    ("per_step = 2\n", "scale.per_step", "one instance per step: expected 1, got 2"),
])
def test_a_creation_suite_starts_from_none_and_adds_one_per_step(tmp_path: Path, extra: str, key: str,
                                                                  message: str) -> None:
    text = CREATION.replace("per_step = 1\n", "per_step = 1\n" + extra) if "start" in extra else \
        CREATION.replace("per_step = 1\n", extra)
    err = suite_error(tmp_path, text)
    assert err.key == key and message in err.message


def test_a_creation_suite_runs_a_program_not_an_image(tmp_path: Path) -> None:
    err = suite_error(tmp_path, CREATION.replace('program = "proc"\n', 'image = "labtui/proc"\n'))
    assert err.key == "worker.image" and "give program, not image" in err.message
    suite = load_suite(write(tmp_path, CREATION))
    assert suite.kind == "creation" and suite.scale == Scale(start=0, steps=3, per_step=1)


def test_a_fairshare_suite_refuses_a_worker_table_and_two_probes(tmp_path: Path) -> None:
    err = suite_error(tmp_path, FAIRSHARE + '[worker]\nprogram = "hello"\nmeasure = "boot"\n')
    assert err.key == "worker" and "runs its own probe" in err.message
    err = suite_error(tmp_path, FAIRSHARE + '[fairshare]\nprogram = "hourglass"\nimage = "x"\n')
    assert err.key == "fairshare" and "at most one of program" in err.message
    assert load_suite(write(tmp_path, FAIRSHARE + '[fairshare]\nimage = "x"\n')).table(Fairshare).image == "x"


def test_fairshare_weights_and_caps_must_be_settable(tmp_path: Path) -> None:
    # weight: the reserved instance's weight out of 1..10000 only matters when the weight method is used
    err = suite_error(tmp_path, FAIRSHARE + "[fairshare]\nreserved_share = 0.995\n")
    assert err.key == "fairshare.reserved_share" and "weights go from 1 to 10000" in err.message
    assert load_suite(write(tmp_path, FAIRSHARE + "[fairshare]\nmethods = []\nreserved_share = 0.995\n"))
    # the edges: a weight of 1 is the smallest there is, 0 is none; 10000 is the largest
    assert load_suite(write(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["weight"]\nreserved_share = 0.93458\n'))
    err = suite_error(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["weight"]\nreserved_share = 0.934585\n')
    assert "a CPU weight of 10001" in err.message
    # a reserved cap of exactly 0.01 is allowed: too many others is what made a cap too small
    err = suite_error(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["cap"]\ninstances = 200\nreserved_share = 0.01\n')
    assert err.key == "fairshare.instances", err
    assert load_suite(write(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["weight"]\nreserved_share = 0.001\n'))
    err = suite_error(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["weight"]\nreserved_share = 0.0007\n')
    assert err.key == "fairshare.reserved_share" and "a CPU weight of 0 against 100" in err.message
    # cap: the smallest cap is 0.01 of a CPU, blamed on the key that made it small
    err = suite_error(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["cap"]\nreserved_share = 0.005\n')
    assert err.key == "fairshare.reserved_share" and "smallest cap is 0.01" in err.message
    err = suite_error(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["cap"]\ninstances = 200\nreserved_share = 0.5\n')
    assert err.key == "fairshare.instances" and "cap an instance at 0.0025" in err.message
    assert load_suite(write(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["weight"]\nreserved_share = 0.005\n'))
    assert load_suite(write(tmp_path, FAIRSHARE + '[fairshare]\nmethods = ["cap"]\nreserved_share = 0.01\n'))


def test_a_fairshare_run_needs_an_operation_timeout_past_its_end(tmp_path: Path) -> None:
    # start_delay_s + duration_s + 10 s: exactly that is enough, a second less is not
    table = "[fairshare]\nduration_s = 100.0\nstart_delay_s = 5.0\n"

    def timeout(seconds: float) -> str:
        return FAIRSHARE + f"operation_timeout_s = {seconds}\n" + table

    assert load_suite(write(tmp_path, timeout(115.0))).table(Fairshare).duration_s == 100.0
    err = suite_error(tmp_path, timeout(114.0))
    assert err.key == "fairshare.duration_s" and "operation_timeout_s of at least 115" in err.message
    # a cpu_time run reads the domains' CPU time and holds no instance until then
    assert load_suite(write(tmp_path, timeout(20.0) + 'measure = "cpu_time"\n')).table(Fairshare).measure == "cpu_time"


@pytest.mark.parametrize("text", ["=3", " = 3", ".=3"])
def test_an_override_needs_a_key(text: str) -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite("boot-scaling", [text])
    assert caught.value.file == "--set"
    assert "expected key.path=value" in caught.value.message or "unknown key" in caught.value.message


def test_an_override_key_and_value_are_stripped_and_recorded() -> None:
    suite = load_suite("boot-scaling", [" scale . steps = 4 ", "sampling.settle_s= 0.5"])
    assert suite.scale.steps == 4 and suite.sampling.settle_s == 0.5
    assert suite.overrides == ("scale.steps=4", "sampling.settle_s=0.5")


def test_an_override_creates_the_table_a_file_left_out(tmp_path: Path) -> None:
    assert "[measure]" not in GOOD
    suite = load_suite(write(tmp_path, GOOD), ["measure.memory=true"])
    assert suite.measure.memory is True
    err = suite_error(tmp_path, "measure = 3\n" + GOOD, ("measure.memory=true",))  # not a table: reported as such
    assert err.key == "measure" and err.line == 1


def test_an_override_nested_too_deeply_is_one_error() -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite("boot-scaling", ["worker.args=" + "[" * 5000 + "]" * 5000])
    assert (caught.value.file, caught.value.key) == ("--set", "worker.args")
    assert "nested too deeply" in caught.value.message
