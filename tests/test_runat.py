"""labtui-runat: its closing line, its errors, and signals passed on to the program it runs.

The binary is built for real on this machine (labtui.native.ensure_program, as on any host).
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from pathlib import Path

import pytest

from labtui import runat
from labtui.hosts.local import LocalHost


def test_the_closing_line_is_read_alone() -> None:
    stderr = "probe: warming up\nlabtui-runat\t1700000000000000001\t1700000000500000000\t0\n"
    assert runat.closing_line(stderr) == (1700000000000000001, 1700000000500000000, 0)
    assert runat.closing_line("labtui-runat: cannot execute /x: No such file or directory\n") is None
    assert runat.closing_line("") is None
    assert runat.program_stderr(stderr) == "probe: warming up"
    assert runat.complaint("x\nlabtui-runat: fork: Resource temporarily unavailable\n") == \
        "labtui-runat: fork: Resource temporarily unavailable"
    assert runat.complaint(stderr) == ""
    assert runat.at_ns(1.5) == 1_500_000_000


@pytest.fixture(scope="module")
def binary(tmp_path_factory: pytest.TempPathFactory) -> str:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path_factory.mktemp("runat-rt")))
        return asyncio.run(runat.build(LocalHost()))


def test_it_holds_the_program_until_the_given_moment_and_reports_when_it_ran(binary: str) -> None:
    at = time.time_ns() + 300_000_000
    done = subprocess.run([binary, str(at), "--", "sh", "-c", "echo out; echo err >&2; exit 3"],
                          capture_output=True, text=True, timeout=10)
    start, end, status = runat.closing_line(done.stderr) or (0, 0, -1)
    assert done.returncode == 3 and status == 3 and done.stdout == "out\n"
    assert at <= start <= end and start - at < 200_000_000
    assert runat.program_stderr(done.stderr) == "err"


def test_the_program_runs_under_the_normal_policy_whatever_runat_waited_under(binary: str) -> None:
    at = time.time_ns() + 100_000_000
    done = subprocess.run([binary, str(at), "--", "sh", "-c", 'cut -d" " -f41 /proc/$$/stat'],
                          capture_output=True, text=True, timeout=10)
    assert done.returncode == 0 and done.stdout.strip() == "0"  # SCHED_OTHER


def test_a_missing_program_is_its_complaint_and_status_127(binary: str, tmp_path: Path) -> None:
    done = subprocess.run([binary, "0", "--", str(tmp_path / "nope")], capture_output=True, text=True, timeout=10)
    assert done.returncode == 127
    assert runat.complaint(done.stderr).startswith(f"labtui-runat: cannot execute {tmp_path / 'nope'}")


def test_sigterm_reaches_the_program_or_ends_the_wait(binary: str) -> None:
    running = subprocess.Popen([binary, "0", "--", "sleep", "30"], stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    running.send_signal(signal.SIGTERM)
    _, stderr = running.communicate(timeout=5)
    assert running.returncode == 128 + signal.SIGTERM
    assert (runat.closing_line(stderr) or (0, 0, 0))[2] == 128 + signal.SIGTERM  # the program got it and died
    holding = subprocess.Popen([binary, str(time.time_ns() + 60_000_000_000), "--", "true"], stderr=subprocess.PIPE,
                               text=True)
    time.sleep(0.3)
    holding.send_signal(signal.SIGTERM)
    _, stderr = holding.communicate(timeout=5)
    assert holding.returncode == 128 + signal.SIGTERM and runat.closing_line(stderr) is None
