"""A real `labtui run` interrupted by one or two signals at random moments, and what its store says after.

Shared by tests/e2e/test_session_service.py (local process backend) and tests/e2e/test_signals_host_kinds.py
(the other host kinds).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb


@dataclass(frozen=True)
class Interrupted:
    """How an interrupted run ended: its session row, the exit status and what it printed on stderr."""

    session: str
    status: str
    message: str
    returncode: int
    stderr: str


def terminal_signals() -> None:
    """In a child before it runs labtui: SIGHUP as a program in a terminal gets it (its default), whatever the
    tests inherited (a CI started under nohup ignores it, and labtui keeps an ignored SIGHUP ignored)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def interrupt_run(argv: list[str], db: Path, first: signal.Signals, second: signal.Signals | None, *,
                  env: dict[str, str] | None = None, latest_s: float = 3.0) -> Interrupted:
    """Run `python -m labtui run ARGV --db DB`, send `first` within `latest_s` of its session row appearing
    (and `second` 0.05-0.5 s later if it still runs), then wait for its end."""
    proc = subprocess.Popen([sys.executable, "-m", "labtui", "run", *argv, "--db", str(db)],
                            env={**os.environ, "COLUMNS": "200", **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=terminal_signals)
    deadline = time.monotonic() + 180
    while session_row(db) is None:  # the session has started (its row is committed)
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the session never started"
        time.sleep(0.1)
    time.sleep(random.uniform(0.0, latest_s))
    proc.send_signal(first)
    if second is not None:
        time.sleep(random.uniform(0.05, 0.5))
        if proc.poll() is None:
            proc.send_signal(second)
    _, err = proc.communicate(timeout=300)
    row = session_row(db)
    assert row is not None, err
    return Interrupted(*row, proc.returncode, err)


def open_store(db: Path) -> duckdb.DuckDBPyConnection:
    """The store read-only, waiting (up to 60 s) while a writer holds it."""
    deadline = time.monotonic() + 60
    while True:
        try:
            return duckdb.connect(str(db), read_only=True)
        except duckdb.Error:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def session_row(db: Path) -> tuple[str, str, str] | None:
    if not db.exists():
        return None
    with open_store(db) as con:
        try:
            return con.execute("select session_id, status, coalesce(message, '') from sessions").fetchone()
        except duckdb.CatalogException:  # the file exists, its tables are not committed yet
            return None


def open_rows(db: Path, session: str) -> list[tuple]:
    """Instance rows of the session that no outcome closed."""
    with open_store(db) as con:
        return con.execute("select instance_id, state from instances where session_id = ? "
                           "and destroyed_at is null and state <> 'exited'", [session]).fetchall()


def check_torn_down(run: Interrupted, first: signal.Signals) -> None:
    """Ended aborted naming the first signal (or completed before it landed), exit status 128 + the first
    signal's number when aborted (130 SIGINT, 143 SIGTERM, 129 SIGHUP), as a shell reports it."""
    assert run.status in ("aborted", "completed"), (run.status, run.message, run.stderr)
    if run.status == "aborted":
        assert run.returncode == 128 + first, run.stderr
        assert run.message == f"aborted by {first.name}", (run.message, run.stderr)
