"""The study's Unikraft suites on real Unikraft instances, and compare beside their Docker forms.

The unikernels are built from Unikraft's own source (../shared/vendor/unikraft)
and cached by digest in the user's cache directory (plugins/unikraft/build.py),
so a CI run builds each once, whichever test module asks first.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import cli_run
import duckdb
import pytest
from unikraft_needs import needs_unikraft

from labtui.suites import load_suite

REPO = Path(__file__).resolve().parents[2]
MIB = 1 << 20


pytestmark = needs_unikraft("Unikraft suite tests")


def labtui(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_run.labtui(*args, cwd=REPO, timeout=900, env={**os.environ, "COLUMNS": "200"})


def _docker_missing() -> str:
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode != 0:
        return "no Docker daemon answers `docker info`"
    return ""


def test_memory_scaling_measures_unikraft_sleepers(runtime_dir: Path, tmp_path: Path) -> None:
    assert load_suite("unikraft-memory-scaling").background.image == "unikraft:sleeper"
    db = tmp_path / "mem.duckdb"
    run = labtui("run", "unikraft-memory-scaling", "--profile", "quick", "--db", str(db))
    assert run.returncode == 0, run.stderr + run.stdout
    with duckdb.connect(str(db), read_only=True) as store:
        per = dict(store.execute("SELECT background, value FROM results WHERE metric = 'mem_per_instance'"
                                 ).fetchall())
        # a QEMU holding Unikraft in 16 MiB of guest memory: more than the guest touches, less than -m 64M
        assert set(per) == {5, 10} and all(8 * MIB < v < 128 * MIB for v in per.values()), per
        ready = store.execute("SELECT count(*) FROM instances WHERE role = 'background' AND boot_s > 0").fetchone()
        assert ready == (10,)


def test_compare_sets_docker_and_unikraft_boot_times_side_by_side(runtime_dir: Path, tmp_path: Path) -> None:
    if _docker_missing():
        if os.environ.get("LABTUI_CI"):
            pytest.fail(f"CI installs Docker, yet: {_docker_missing()}")
        pytest.skip(_docker_missing())
    db = tmp_path / "boot.duckdb"
    ids = []
    for suite in ("docker-boot-scaling", "unikraft-boot-scaling"):
        run = labtui("run", suite, "--profile", "quick", "--set", "scale.steps=1", "--db", str(db))
        assert run.returncode == 0, run.stderr + run.stdout
        with duckdb.connect(str(db), read_only=True) as store:
            (found,) = store.execute("SELECT session_id FROM sessions WHERE suite = ?", [suite]).fetchone()  # type: ignore[misc]
        ids.append(found)
    out = labtui("compare", *ids, "--db", str(db), "--format", "json")
    assert out.returncode == 0, out.stderr
    compared = json.loads(out.stdout)
    assert [(compared[side]["suite"], compared[side]["backend"]) for side in "ab"] == [
        ("docker-boot-scaling", "docker"), ("unikraft-boot-scaling", "unikraft")]
    rows = compared["rows"]
    assert sorted((r["metric"], r["background"]) for r in rows) == [("boot_time", 0), ("boot_time", 5)]
    for row in rows:
        assert row["present"] == "both" and row["mean_a"] > 0 and row["mean_b"] > 0
        assert row["ratio"] == pytest.approx(row["mean_b"] / row["mean_a"])
    table = labtui("compare", *ids, "--db", str(db))
    assert table.returncode == 0, table.stderr
    assert f"A: {ids[0]} (docker-boot-scaling, docker" in table.stdout
    assert f"B: {ids[1]} (unikraft-boot-scaling, unikraft" in table.stdout
    with duckdb.connect(str(db), read_only=True) as store:
        (accel,) = store.execute("SELECT isolation FROM hosts WHERE session_id = ?", [ids[1]]).fetchone()  # type: ignore[misc]
    assert accel in ("tcg-emulation", "hvm-kvm")
    assert f"unikraft, local, {accel};" in table.stdout  # a TCG figure says so beside its session
    assert compared["b"]["isolation"] == accel
    assert table.stdout.count("boot_time") == 2  # one row per step, both sessions in each
