"""`labtui sql`: --timeout and Ctrl-C stop a long query with DuckDB's interrupt; the store is unchanged."""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from labtui.cli import build_parser
from labtui.commands import dispatch
from labtui.commands.query import DEFAULT_TIMEOUT_S
from labtui.core.events import Result, SessionStarted
from labtui.store import StoreWriter

REPO = Path(__file__).resolve().parents[2]
#: 10^12 rows: runs for hours unless it is interrupted.
SLOW_SQL = "select sum(a.range * b.range) from range(1000000) a, range(1000000) b"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "run"))
    db = tmp_path / "lab.duckdb"
    with StoreWriter.open(db) as writer:
        writer.add(SessionStarted("s1", "boot", "scaling", "process", "local", {}, 0, ts=1.79e9))
        writer.add(Result("s1", 0, 0, 0, "local", "w1", "boot", "boot_time", 0.5, "s", "lower", 1.79e9))
    return db


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _args(db: Path, query: str, **extra) -> argparse.Namespace:
    """`labtui --db DB sql QUERY` as the parser reads it, with extra values (a --timeout the parser would refuse) set after."""
    args = build_parser().parse_args(["--db", str(db), "sql", query])
    vars(args).update(extra)
    return args


def _holds_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open (it has connected to the store)."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the store opened")
def test_sigint_interrupts_a_long_query_exit_130_store_unchanged(store: Path) -> None:
    before = _digest(store)
    proc = subprocess.Popen(
        [sys.executable, "-m", "labtui", "sql", SLOW_SQL, "--db", str(store)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not _holds_open(proc.pid, store):  # imports may take seconds on a busy machine
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "labtui sql never opened the store"
            time.sleep(0.05)
        time.sleep(1.0)  # the query is running now
        assert proc.poll() is None
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)  # the query alone runs for hours: only a lost SIGINT gets here
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert "labtui sql: interrupted" in err  # the query's own handler, not an interrupt during imports
    assert "Traceback" not in err and out == ""
    assert _digest(store) == before
    with StoreWriter.open(store):  # no lock left behind
        pass


def test_timeout_stops_a_long_query(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _digest(store)
    # The query alone runs for hours: a timeout that does not stop it leaves the thread running past 120 s.
    status: list[int] = []
    worker = threading.Thread(target=lambda: status.append(dispatch(_args(store, SLOW_SQL, timeout=0.5))), daemon=True)
    worker.start()
    worker.join(120)
    assert status == [1], "the query was not stopped by its --timeout"
    err = capsys.readouterr().err
    assert "ran longer than 0.5 s and was stopped (raise --timeout)" in err
    assert _digest(store) == before


def test_a_query_within_the_timeout_answers(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch(_args(store, "select metric, value from results", timeout=30.0)) == 0
    out = capsys.readouterr().out
    assert "boot_time" in out and "0.5" in out


def test_default_timeout_when_the_option_is_absent(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert DEFAULT_TIMEOUT_S == 60.0
    assert dispatch(_args(store, "select count(*) as n from results")) == 0
    assert "1" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_timeout_is_one_line_exit_2(store: Path, capsys: pytest.CaptureFixture[str], bad: float) -> None:
    assert dispatch(_args(store, "select 1", timeout=bad)) == 2
    err = capsys.readouterr().err
    assert err.startswith("labtui sql: --timeout must be a positive number of seconds") and err.count("\n") == 1


def test_timeout_option_on_the_command_line(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from labtui.cli import build_parser, main

    sql_parser = build_parser()._subparsers._group_actions[0].choices["sql"]
    if not any("--timeout" in action.option_strings for action in sql_parser._actions):
        pytest.skip("labtui/cli.py has no `sql --timeout` yet")
    assert main(["sql", SLOW_SQL, "--timeout", "0.3", "--db", str(store)]) == 1
    assert "ran longer than 0.3 s" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("INSERT INTO events VALUES ('x', now(), 'info', 'k', 'm')", "INSERT"),
        ("COPY results TO '/tmp/labtui-stolen.csv'", "COPY"),
        ("ATTACH '/tmp/other.duckdb' AS other", "ATTACH"),
        ("SET threads = 1", "SET"),
        ("DELETE FROM results", "DELETE"),
    ],
)
def test_the_command_still_refuses_writes(store: Path, capsys: pytest.CaptureFixture[str], sql: str, kind: str) -> None:
    before = _digest(store)
    assert dispatch(_args(store, sql, timeout=10.0)) == 2
    assert f"{kind} statements are not allowed" in capsys.readouterr().err
    assert _digest(store) == before


def test_errors_of_the_query_are_one_line(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch(_args(store, "select 1; select 2", timeout=10.0)) == 2
    assert "expected one SQL statement, got 2" in capsys.readouterr().err
    assert dispatch(_args(store, "select * from read_csv('/etc/passwd')", timeout=10.0)) == 2
    assert "disabled by configuration" in capsys.readouterr().err
    assert dispatch(_args(store.with_name("missing.duckdb"), "select 1", timeout=10.0)) == 2
    assert "no labtui store" in capsys.readouterr().err
