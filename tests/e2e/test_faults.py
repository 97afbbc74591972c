"""Fault injection: a full disk under the store, hostile values, malformed suite files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from cli_run import labtui
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from store_events import in_file

from labtui.suites import SuiteError, load_suite


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    if os.geteuid() != 0:
        pytest.skip(f"a full disk is a 700 KiB tmpfs, and mounting one needs root (running as uid {os.geteuid()})")
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=700k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"root, but cannot mount a tmpfs here (a container without CAP_SYS_ADMIN?): "
                    f"{done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_full_disk_under_the_store_ends_the_run_cleanly(tiny_tmpfs, env):
    db = tiny_tmpfs / "lab.duckdb"
    subprocess.run(["mount", "-o", "remount,size=8m", str(tiny_tmpfs)], check=True)  # room for a new store
    run = subprocess.Popen([sys.executable, "-m", "labtui", "run", "boot-scaling", "--db", str(db),
                            "--set", "scale.steps=400", "--set", "scale.per_step=2", "--set", "sampling.interval_s=0.1",
                            "--set", "suite.repetitions=1", "--set", "sampling.quiet_timeout_s=0"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    from labtui.store import StoreError

    def steps_done() -> int:
        """Steps committed to the file (labtui's readers would count the journal's too)."""
        try:
            return int(in_file(db, "select count(*) from steps where ok")[0]) if db.exists() else 0
        except StoreError:
            return 0

    deadline = time.monotonic() + 180
    while steps_done() < 3:  # readers are never locked out, so the test can watch the run
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the run never completed 3 steps"
        time.sleep(0.2)
    subprocess.run(["dd", "if=/dev/zero", f"of={tiny_tmpfs / 'filler'}", "bs=64k"], capture_output=True)  # ENOSPC
    out, err = run.communicate(timeout=300)
    assert run.returncode == 1, out + err
    assert "store error" in err and "lab.duckdb" in err
    sid = err.split("session ")[1].split()[0]
    left = labtui("instances", "--session", sid, "--format", "json", env=env)
    assert json.loads(left.stdout) == []  # the teardown still ran
    # what was committed is intact: the file opens and completed steps have their results
    (tiny_tmpfs / "filler").unlink()
    con = duckdb.connect(str(db), read_only=True)
    steps = con.execute("select count(*) from steps where ok").fetchone()[0]
    with_results = con.execute(
        "select count(distinct step) from results r join steps s using (session_id, repetition, step) where s.ok"
    ).fetchone()[0]
    con.close()
    assert 3 <= steps < 401 and with_results == steps


def test_shell_metacharacters_in_arguments_are_passed_literally(tmp_path, env):
    marker = tmp_path / "pwned"
    suite = tmp_path / "hostile.toml"
    suite.write_text(
        f"""
[suite]
name = "hostile"
kind = "scaling"
[scale]
steps = 1
per_step = 2
[worker]
program = "hello"
measure = "boot"
args = ["x; touch {marker}", "$(touch {marker})", "`touch {marker}`", "a'b\\"c", "line\\nbreak"]
[background]
program = "sleeper"
args = ["; rm -rf /tmp/nothing-here", "$(reboot)"]
"""
    )
    out = labtui("run", str(suite), "--db", str(tmp_path / "x.duckdb"), env=env)
    assert out.returncode == 0, out.stderr
    assert not marker.exists()


@pytest.mark.parametrize("name", ["x; rm -rf /", "$(reboot)", "a b", "../etc/passwd", "quote'd"])
def test_hostile_suite_names_are_refused_before_anything_runs(tmp_path, env, name):
    suite = tmp_path / "bad.toml"
    suite.write_text(f'[suite]\nname = {json.dumps(name)}\nkind = "scaling"\n[scale]\nsteps = 1\nper_step = 1\n'
                     '[worker]\nprogram = "hello"\nmeasure = "boot"\n[background]\nprogram = "sleeper"\n')
    db = tmp_path / "x.duckdb"
    out = labtui("run", str(suite), "--db", str(db), env=env)
    assert out.returncode == 2 and "suite.name" in out.stderr
    assert not db.exists()


@pytest.mark.parametrize("program", ["hello; reboot", "../../bin/sh", "$(id)", "/bin/sh"])
def test_hostile_program_names_are_refused(tmp_path, program):
    suite = tmp_path / "bad.toml"
    suite.write_text(f'[suite]\nname = "x"\nkind = "scaling"\n[scale]\nsteps = 1\nper_step = 1\n'
                     f'[worker]\nprogram = {json.dumps(program)}\nmeasure = "boot"\n[background]\nprogram = "sleeper"\n')
    with pytest.raises(SuiteError, match="worker.program"):
        load_suite(str(suite))


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
_keys = st.sampled_from(["suite", "scale", "worker", "background", "measure", "sampling", "name", "kind",
                         "steps", "per_step", "repetitions", "program", "image", "args", "runs", "x"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=st.dictionaries(_keys, st.dictionaries(_keys, _values, max_size=5) | _values, max_size=6),
       raw_tail=st.text(max_size=30))
def test_malformed_suite_files_give_a_suite_error_and_nothing_else(tmp_path, document, raw_tail):
    path = tmp_path / "fuzz.toml"
    path.write_text(_to_toml(document) + raw_tail)
    try:
        load_suite(str(path))
    except SuiteError as exc:
        assert str(path) in str(exc) or "fuzz.toml" in str(exc)


def _to_toml(document: dict) -> str:
    """A rough TOML rendering; what it gets wrong is more fuzz for the loader."""
    lines = []
    for key, value in document.items():
        if isinstance(value, dict):
            lines.append(f"[{json.dumps(key)}]")
            lines += [f"{json.dumps(k)} = {_literal(v)}" for k, v in value.items()]
        else:
            lines.insert(0, f"{json.dumps(key)} = {_literal(value)}")
    return "\n".join(lines) + "\n"


def _literal(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return '""'
    if isinstance(value, (int, str)):
        return json.dumps(value)
    if isinstance(value, float):
        return repr(value) if value == value and abs(value) != float("inf") else "nan"
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_literal(v)}" for k, v in value.items()) + "}"

