"""labtui-runat: its closing line, its errors, and signals passed on to the program it runs.

The binary is built for real on this machine (labtui.programs.native.ensure_program, as on any host).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from labtui.hosts.local import LocalHost
from labtui.programs import runat


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


def test_runat_waits_under_fifo_where_allowed_and_the_program_keeps_the_callers_policy(binary: str) -> None:
    at = time.time_ns() + 100_000_000
    policies = 'cut -d" " -f41 /proc/$PPID/stat /proc/$$/stat'  # labtui-runat's policy, then the program's
    done = subprocess.run([binary, str(at), "--", "sh", "-c", policies], capture_output=True, text=True, timeout=10)
    runat_policy, program_policy = done.stdout.split()
    assert done.returncode == 0 and program_policy == "0"  # SCHED_OTHER, as it was started
    if os.geteuid() == 0:
        assert runat_policy == "1"  # SCHED_FIFO while it waited and waits for the program
    batch = subprocess.run(["chrt", "--batch", "0", binary, str(at + 100_000_000), "--", "sh", "-c", policies],
                           capture_output=True, text=True, timeout=10)
    assert batch.returncode == 0 and batch.stdout.split()[1] == "3"  # a caller's SCHED_BATCH is kept


def test_a_missing_program_is_its_complaint_and_status_127(binary: str, tmp_path: Path) -> None:
    done = subprocess.run([binary, "0", "--", str(tmp_path / "nope")], capture_output=True, text=True, timeout=10)
    assert done.returncode == 127
    assert runat.complaint(done.stderr).startswith(f"labtui-runat: cannot execute {tmp_path / 'nope'}")


def wait_for_child(pid: int) -> None:
    """Until labtui-runat has forked its program (so its handlers are in place)."""
    for _ in range(500):
        if Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
            return
        time.sleep(0.01)
    raise AssertionError(f"labtui-runat {pid} never started its program")


def wait_until_sleeping(pid: int) -> None:
    """Until labtui-runat sleeps in its wait (its handlers are installed before it)."""
    for _ in range(500):
        stat = Path(f"/proc/{pid}/stat").read_text()
        if "(labtui-runat" in stat and stat.rsplit(")", 1)[1].split()[0] == "S":
            return
        time.sleep(0.01)
    raise AssertionError(f"labtui-runat {pid} never slept")


def test_sigterm_reaches_the_program_or_ends_the_wait(binary: str) -> None:
    running = subprocess.Popen([binary, "0", "--", "sleep", "30"], stderr=subprocess.PIPE, text=True)
    wait_for_child(running.pid)
    running.send_signal(signal.SIGTERM)
    _, stderr = running.communicate(timeout=5)
    assert running.returncode == 128 + signal.SIGTERM
    assert (runat.closing_line(stderr) or (0, 0, 0))[2] == 128 + signal.SIGTERM  # the program got it and died
    holding = subprocess.Popen([binary, str(time.time_ns() + 60_000_000_000), "--", "true"], stderr=subprocess.PIPE,
                               text=True)
    wait_until_sleeping(holding.pid)
    holding.send_signal(signal.SIGTERM)
    _, stderr = holding.communicate(timeout=5)
    assert holding.returncode == 128 + signal.SIGTERM and runat.closing_line(stderr) is None
