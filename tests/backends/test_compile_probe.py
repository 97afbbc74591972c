"""The compile probe (suite vserver-compile, the kernel compile of the VServer/Xen paper's Figure 6):
a real build with cc, and its failures."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from backend_lab import Lab

from labtui.hosts.local import LocalHost
from labtui.parsers.probe import parse_probe_output
from labtui.programs.native import ensure_program, probe_source

BACKEND = "process"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "compile"



async def test_compile_times_a_build_and_leaves_nothing(lab: Lab, tmp_path: Path) -> None:
    instance = await lab.run_program("compile", ["3", "2", str(tmp_path)], 60)
    assert instance.exit_code == 0, instance
    (reading,) = parse_probe_output(instance.output or "")
    assert (reading.benchmark, reading.metric, reading.unit, reading.better) == ("compile", "compile_3_s", "s", "lower")
    assert reading.value > 0
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args", [["0"], ["2", "0"], ["2", "300"]])
async def test_compile_refuses_bad_arguments(lab: Lab, args: list[str]) -> None:
    assert (await lab.run_program("compile", args, 60)).exit_code == 2


async def test_compile_without_cc_says_so(runtime_dir: Path, tmp_path: Path) -> None:
    binary = await ensure_program(LocalHost(), probe_source("compile"), "compile")
    done = subprocess.run([binary, "1", "1", str(tmp_path)], capture_output=True, text=True, timeout=60,
                          env={"PATH": str(tmp_path / "nothing")})
    assert done.returncode == 1 and done.stdout == ""
    assert "compile: cannot run cc (no C compiler in this instance)" in done.stderr
    assert list(tmp_path.iterdir()) == []
