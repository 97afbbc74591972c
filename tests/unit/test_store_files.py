"""Files that are not (this labtui's) stores: one clear StoreError, never a write, never a traceback."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from labtui.core.events import Result, SessionStarted
from labtui.store import SCHEMA_VERSION, StoreError, StoreWriter, connect_readonly, record_events, run_sql

REPO = Path(__file__).resolve().parents[2]


def _fingerprint(directory: Path) -> dict[str, str]:
    """Every file of `directory` with a hash of its bytes (a new .wal or temp file shows too)."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*")) if p.is_file()
    }


def _labtui_store(path: Path) -> Path:
    record_events(path, [SessionStarted("s1", "boot", "scaling", "process", "local", {}, os.getpid(), ts=1.0)])
    return path


def _corrupt(path: Path) -> Path:
    data = bytearray(_labtui_store(path).read_bytes())
    data[4096:12288] = bytes(range(256)) * 32  # the database headers and first block, garbled
    path.write_bytes(bytes(data))
    return path


def _truncated(path: Path) -> Path:
    data = _labtui_store(path).read_bytes()
    path.write_bytes(data[:5000])
    return path


def _half(path: Path) -> Path:
    """A store cut to half its size, as a copy that stopped half way leaves it."""
    data = _labtui_store(path).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _directory(path: Path) -> Path:
    path.mkdir()
    return path


def _sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE results (x)")
    con.commit()
    con.close()
    return path


def _text(path: Path) -> Path:
    path.write_text("session_id,value\ns1,1.0\n" * 100)
    return path


def _empty(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def _foreign_duckdb(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE results (id INTEGER, label TEXT)")
    con.execute("INSERT INTO results VALUES (1, 'mine')")
    con.close()
    return path


def _foreign_meta(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE meta (name TEXT)")  # a table called meta, but not labtui's
    con.close()
    return path


def _newer(path: Path) -> Path:
    _labtui_store(path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION + 1)])
    con.close()
    return path


CASES = {
    "corrupt": (_corrupt, "damaged or not a DuckDB database"),
    "truncated": (_truncated, r"cannot open store .*: it is damaged \(truncated\)$"),
    "half": (_half, r"cannot open store .*: it is damaged \(truncated\)$"),
    "directory": (_directory, "is a directory, not a DuckDB file$"),
    "sqlite": (_sqlite, "is a SQLite database, not a labtui store"),
    "text": (_text, r"is not a DuckDB database \(unknown file header\)"),
    "empty": (_empty, r"is an empty file \(0 bytes\)"),
    "foreign duckdb": (_foreign_duckdb, "is a DuckDB database but not a labtui store .*results"),
    "foreign meta": (_foreign_meta, "is not a labtui store"),
    "newer schema": (_newer, f"schema version {SCHEMA_VERSION + 1}, newer than this labtui"),
}


@pytest.mark.parametrize("case", CASES)
def test_writer_refuses_and_leaves_the_file_byte_identical(tmp_path: Path, case: str) -> None:
    make, message = CASES[case]
    db = make(tmp_path / "lab.duckdb")
    before = _fingerprint(tmp_path)
    with pytest.raises(StoreError, match=message) as info:
        StoreWriter.open(db)
    assert str(db) in str(info.value) and "\n" not in str(info.value)
    assert _fingerprint(tmp_path) == before


@pytest.mark.parametrize("case", CASES)
def test_readers_refuse_with_one_line(tmp_path: Path, case: str) -> None:
    make, message = CASES[case]
    db = make(tmp_path / "lab.duckdb")
    before = _fingerprint(tmp_path)
    with pytest.raises(StoreError, match=message) as info:
        run_sql(db, "SELECT 1")
    assert str(db) in str(info.value) and "\n" not in str(info.value)
    assert _fingerprint(tmp_path) == before


def test_a_sqlite_file_is_refused_without_asking_the_network(tmp_path: Path) -> None:
    """DuckDB itself would try to download its SQLite extension; labtui reads the header first."""
    db = _sqlite(tmp_path / "lab.db")
    with pytest.raises(StoreError, match="SQLite") as info:
        connect_readonly(db)
    assert "download" not in str(info.value)


def test_an_empty_duckdb_database_becomes_a_store(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    duckdb.connect(str(db)).close()
    record_events(db, [SessionStarted("s1", "boot", "scaling", "process", "local", {}, os.getpid(), ts=1.0)])
    assert run_sql(db, "SELECT session_id FROM sessions").rows == [("s1",)]


def test_a_directory_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        StoreWriter.open(tmp_path)


def test_created_directories_are_private(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        db = tmp_path / "a" / "b" / "c" / "lab.duckdb"
        _labtui_store(db)
    finally:
        os.umask(old)
    for directory in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    assert stat.S_IMODE(db.stat().st_mode) == 0o600


def test_failed_first_open_leaves_nothing_behind(tmp_path: Path) -> None:
    """A full disk, imitated with a file size limit: no store, no temporary file, no new directory."""
    db = tmp_path / "new" / "deeper" / "lab.duckdb"
    code = textwrap.dedent("""
        import resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
        from labtui.store import StoreError, StoreWriter
        try:
            StoreWriter.open(sys.argv[1])
        except StoreError as exc:
            print(exc)
            sys.exit(2)
    """)
    out = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 2, out.stderr
    assert out.stdout.startswith(f"could not create store {db}") and out.stdout.count("\n") == 1
    assert out.stderr == ""
    assert list(tmp_path.iterdir()) == []


def test_a_store_opens_after_a_refused_file_is_moved_away(tmp_path: Path) -> None:
    db = _foreign_duckdb(tmp_path / "lab.duckdb")
    with pytest.raises(StoreError):
        StoreWriter.open(db)
    db.rename(tmp_path / "mine.duckdb")
    with StoreWriter.open(db) as writer:
        writer.add(Result("s1", 1, 1, 0, "local", "i", "b", "m", 1.0, "s", "lower", ts=2.0))
    assert run_sql(db, "SELECT count(*) FROM results").rows == [(1,)]
    assert duckdb.connect(str(tmp_path / "mine.duckdb"), read_only=True).execute(
        "SELECT label FROM results").fetchall() == [("mine",)]


@pytest.mark.parametrize("eighths", range(1, 8))
def test_a_store_cut_anywhere_is_damaged_whichever_read_finds_it(tmp_path: Path, eighths: int,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """DuckDB finds a cut where it first reads past the end: the open, the schema check or only the query."""
    from labtui.cli import main

    data = _labtui_store(tmp_path / "full.duckdb").read_bytes()
    db = tmp_path / "lab.duckdb"
    db.write_bytes(data[: len(data) * eighths // 8])
    before = _fingerprint(tmp_path)
    status = main(["sql", "select * from sessions, steps, results, resources, events", "--db", str(db)])
    err = capsys.readouterr().err
    if status != 0:
        assert (status, err) == (2, f"labtui sql: cannot open store {db}: it is damaged (truncated)\n")
    assert _fingerprint(tmp_path) == before
