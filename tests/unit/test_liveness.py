"""Running-locks: one directory per machine, whatever runtime dir a session used."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest

from labtui.core.liveness import LivenessError, lock_dir, session_is_running, session_lock, sessions_of

HOLD = """
import sys, time
from labtui.core.liveness import session_lock
with session_lock(sys.argv[1]):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_session_of_another_runtime_dir_is_seen_running_until_its_process_dies(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))
    sid = f"live-{os.getpid()}-{time.monotonic_ns()}"
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "other-runtime")}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, sid], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "my-runtime"))
        assert session_is_running(sid)
        assert sessions_of(holder.pid) == [sid]
        assert os.stat(lock_dir()).st_mode & 0o7777 == 0o1777
    finally:
        holder.kill()
        holder.wait()
    assert not session_is_running(sid)  # kill -9 drops the lock with the process


def test_a_lock_dir_anyone_may_empty_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unsafe = tmp_path / "open"
    unsafe.mkdir()
    os.chmod(unsafe, 0o777)  # world-writable without the sticky bit: anyone could delete a running lock
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(unsafe))
    with pytest.raises(LivenessError, match="not sticky"):
        session_is_running("x")
    link = tmp_path / "link"
    link.symlink_to(tmp_path)
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(link))
    with pytest.raises(LivenessError, match="not a directory"):
        with session_lock("x"):
            pass


def test_labtui_run_with_an_untrustworthy_lock_dir_is_a_usage_error(tmp_path: Path) -> None:
    unsafe = tmp_path / "open"
    unsafe.mkdir()
    os.chmod(unsafe, 0o777)
    env = {**os.environ, "LABTUI_LOCK_DIR": str(unsafe), "LABTUI_RUNTIME_DIR": str(tmp_path / "rt")}
    done = cli_run.labtui("run", "boot-scaling", "--set", "scale.steps=1", "--db", str(tmp_path / "x.duckdb"), env=env,
                          timeout=60)
    assert done.returncode == 2 and "not sticky" in done.stderr  # an error at once, not a hang


def test_a_failed_lock_leaves_the_holders_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))
    with session_lock("twice"):
        with pytest.raises(BlockingIOError):
            with session_lock("twice"):
                pass
        assert session_is_running("twice")  # the second attempt did not delete the holder's lock
    assert not session_is_running("twice")
