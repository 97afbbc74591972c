"""The tcp probe (suite vserver-iperf, the VServer/Xen paper's Figure 5): TCP bandwidth over
127.0.0.1, run as a process-backend instance, and its failures."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from backend_lab import Lab

from labtui.hosts.local import LocalHost
from labtui.parsers.probe import parse_probe_output
from labtui.programs.native import ensure_program, probe_source

BACKEND = "process"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "tcp"



async def test_tcp_reports_loopback_bandwidth(lab: Lab) -> None:
    instance = await lab.run_program("tcp", ["0.3", "65536"], 30)
    assert instance.exit_code == 0, instance
    (reading,) = parse_probe_output(instance.output or "")
    assert (reading.benchmark, reading.metric, reading.unit, reading.better) == ("tcp", "tcp_mb_s", "MB/s", "higher")
    assert reading.value > 1.0  # any loopback moves more than 1 MB/s


@pytest.mark.parametrize("args", [["0"], ["1", "0"], ["1", "99999999"]])
async def test_tcp_refuses_bad_arguments(lab: Lab, args: list[str]) -> None:
    instance = await lab.run_program("tcp", args, 30)
    assert instance.exit_code == 2


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
async def test_tcp_fails_at_once_where_loopback_is_down(runtime_dir: Path) -> None:
    """In a new network namespace lo is down: the probe exits 1 naming the error, without hanging."""
    binary = await ensure_program(LocalHost(), probe_source("tcp"), "tcp")
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace here")
    done = subprocess.run(["unshare", "-n", binary, "0.2"], capture_output=True, text=True, timeout=20)
    assert done.returncode == 1 and done.stdout == ""
    assert "tcp: connect to 127.0.0.1" in done.stderr
