"""`labtui run --tag KEY=VALUE --note TEXT`, shown by sessions, report and compare; `labtui sessions rm`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import duckdb
import pytest

from labtui.store import run_sql
from labtui.store.delete import SESSION_TABLES

QUICK = ["boot-scaling", "--profile", "quick", "--set", "sampling.quiet_timeout_s=0"]


def labtui(db: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return cli_run.labtui("--db", str(db), *args, input=stdin, env={**os.environ, "COLUMNS": "200"}, timeout=600)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, runtime_dir: Path) -> tuple[Path, str, str]:
    """A store with two finished sessions: the first tagged and noted, the second plain."""
    db = tmp_path_factory.mktemp("tags") / "lab.duckdb"
    tagged = labtui(db, "run", *QUICK, "--tag", "kernel=6.1", "--tag", "build=a b", "--tag", "kernel=6.6",
                    "--note", "after the BIOS update")
    plain = labtui(db, "run", *QUICK)
    assert tagged.returncode == 0 and plain.returncode == 0, tagged.stderr + plain.stderr
    first, second = (out.stderr.split("session ")[1].split()[0] for out in (tagged, plain))
    return db, first, second


def test_tags_and_the_note_are_recorded_with_the_session_and_listed(store) -> None:
    db, tagged, plain = store
    listed = {row["session_id"]: row for row in json.loads(labtui(db, "sessions", "--format", "json").stdout)}
    assert (listed[tagged]["tags"], listed[tagged]["note"]) == ("build=a b kernel=6.6", "after the BIOS update")
    assert (listed[plain]["tags"], listed[plain]["note"]) == (None, None)
    assert run_sql(db, f"SELECT tags FROM sessions WHERE session_id = '{tagged}'").rows == [
        ('{"build": "a b", "kernel": "6.6"}',)]  # the last --tag of a key wins


def test_the_report_and_compare_show_them(store, tmp_path: Path) -> None:
    db, tagged, plain = store
    out = labtui(db, "report", tagged, "--out", str(tmp_path / "report"))
    assert out.returncode == 0, out.stderr
    page = (tmp_path / "report" / "report.html").read_text()
    assert "build=a b kernel=6.6" in page and "after the BIOS update" in page
    compared = labtui(db, "compare", tagged, plain)
    assert compared.returncode == 0, compared.stderr
    (line_a,) = [line for line in compared.stdout.splitlines() if line.startswith(f"A: {tagged}")]
    assert "build=a b" in line_a and "kernel=6.6" in line_a and "note: after the BIOS update" in line_a
    as_json = json.loads(labtui(db, "compare", tagged, plain, "--format", "json").stdout)
    assert as_json["a"]["note"] == "after the BIOS update"


@pytest.mark.parametrize("bad", ["kernel", "=6.1", " =x"])
def test_a_tag_that_is_not_key_value_is_refused_naming_it(tmp_path: Path, bad: str) -> None:
    out = labtui(tmp_path / "lab.duckdb", "run", *QUICK, "--tag", bad)
    assert out.returncode == 2 and f"--tag {bad!r}: expected KEY=VALUE" in out.stderr
    assert not (tmp_path / "lab.duckdb").exists()


def test_sessions_rm_asks_first_and_deletes_every_row_of_the_session_only(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "lab.duckdb"
    runs = [labtui(db, "run", *QUICK) for _ in range(2)]
    keep, drop = (out.stderr.split("session ")[1].split()[0] for out in runs)
    refused = labtui(db, "sessions", "rm", drop, stdin="n\n")
    assert refused.returncode == 1 and drop in refused.stdout and "nothing deleted" in refused.stderr
    assert _rows(db, drop) > 0
    done = labtui(db, "sessions", "rm", drop[:-1], stdin="y\n")  # a unique prefix
    assert done.returncode == 0, done.stderr
    assert _rows(db, drop) == 0 and _rows(db, keep) > 0


def test_sessions_rm_never_deletes_a_running_session(tmp_path: Path, runtime_dir: Path) -> None:
    db = tmp_path / "lab.duckdb"
    run = subprocess.Popen([sys.executable, "-m", "labtui", "--db", str(db), "run", *QUICK, "--step"],
                           stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (db.exists() and run_sql(db, "SELECT count(*) FROM steps WHERE ended_at IS NOT NULL").rows[0][0]):
            assert run.poll() is None and time.monotonic() < deadline, "the run never finished a step"
            time.sleep(0.2)
        (session,) = [row[0] for row in run_sql(db, "SELECT session_id FROM sessions").rows]
        out = labtui(db, "sessions", "rm", session, "--yes")
        assert out.returncode == 2 and f"session {session} is running" in out.stderr
        assert _rows(db, session) > 0
    finally:
        _, err = run.communicate("a\n", timeout=300)
    assert run.returncode == 0, err


def test_an_exact_id_is_never_taken_for_the_prefix_of_a_longer_one(tmp_path: Path) -> None:
    from store_events import started

    from labtui.core.events import SessionEnded
    from labtui.store import record_events

    db = tmp_path / "lab.duckdb"
    record_events(db, [started("s1", pid=1), SessionEnded("s1", "completed"),
                       started("s10", pid=1), SessionEnded("s10", "completed")])
    assert labtui(db, "sessions", "rm", "s1", "--yes").returncode == 0
    assert [r[0] for r in run_sql(db, "SELECT session_id FROM sessions").rows] == ["s10"]


def _rows(db: Path, session: str) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sum(con.execute(f"SELECT count(*) FROM {t} WHERE session_id = ?", [session]).fetchone()[0]
                   for t in SESSION_TABLES)
    finally:
        con.close()
