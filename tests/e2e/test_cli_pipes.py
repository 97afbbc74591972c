"""A reader that closes the pipe early ends the command quietly: no traceback, status 141 (128 + SIGPIPE)
when the command still had output to write, as git, docker and kubectl do, or 0 when all of it was written."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import cli_run
import pytest

from labtui.cli import EXIT_CLOSED_PIPE

DATA = Path(__file__).parents[1] / "data"

#: Every command that prints more than a line, with what it needs (A and B are the imported sessions).
COMMANDS = {
    "sessions": ("sessions",),
    "suites": ("suites",),
    "suites-csv": ("suites", "--format", "csv"),
    "backends-json": ("backends", "--format", "json"),
    "instances-json": ("instances", "--backend", "process", "--format", "json"),
    "hosts": ("hosts",),
    "info": ("info",),
    "sql-csv": ("sql", "select * from results", "--format", "csv"),
    "sql-table": ("sql", "select * from results"),
    "compare": ("compare", "A", "B"),
    "compare-json": ("compare", "A", "B", "--format", "json"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, runtime_dir: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    db = tmp_path_factory.mktemp("pipes") / "lab.duckdb"
    config = db.parent / "labtui.toml"
    config.write_text('[hosts.h1]\naddress = "127.0.0.1"\n')
    env = {**os.environ, "LABTUI_DB": str(db), "LABTUI_CONFIG": str(config)}
    for name, session in (("native", "A"), ("lxzone", "B")):
        cli_run.labtui("import", str(DATA / f"compare_brandz_{name}.csv"), "--session", session, env=env, check=True,
                       timeout=120)
    yield db, env


def _piped(args: tuple[str, ...], env: dict[str, str], *, read_first_line: bool) -> tuple[int, str, bytes]:
    """Run labtui into a pipe whose reader closes it after one line (or before reading anything)."""
    proc = subprocess.Popen([sys.executable, "-m", "labtui", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline() if read_first_line else b""
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err, first


@pytest.mark.parametrize("command", COMMANDS)
def test_head_1_ends_quietly(store: tuple[Path, dict[str, str]], command: str) -> None:
    """`labtui X | head -1`: the first line arrives; the status is 0 (all written before the close) or 141."""
    status, err, first = _piped(COMMANDS[command], store[1], read_first_line=True)
    assert first.strip()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert status in (0, EXIT_CLOSED_PIPE), (status, err)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_pipe_closed_before_the_output_ends_the_command_with_141(store: tuple[Path, dict[str, str]],
                                                                   command: str) -> None:
    """The reader is gone before labtui has started: every write meets a closed pipe."""
    status, err, _ = _piped(COMMANDS[command], store[1], read_first_line=False)
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err
    assert status == EXIT_CLOSED_PIPE, (status, err)


def test_a_large_csv_into_head_2_is_cut_after_two_lines(store: tuple[Path, dict[str, str]]) -> None:
    """`labtui sql ... --format csv | head -2` with far more than a pipe's buffer of output."""
    proc = subprocess.run(["bash", "-o", "pipefail", "-c",
                           f"{sys.executable} -m labtui sql 'select range from range(300000)' --limit 300000 "
                           "--format csv | head -2"], env=store[1], capture_output=True, text=True, timeout=120)
    assert proc.stdout.splitlines() == ["range", "0"]
    assert proc.stderr == "" and proc.returncode == EXIT_CLOSED_PIPE, proc.stderr


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
def test_a_large_output_into_head_1_ends_with_141_in_every_format(store: tuple[Path, dict[str, str]], fmt: str) -> None:
    """A table is written by rich in one large write, which a reader that has gone cut short without an error:
    the kernel returns the part written.  It exited 0 after `head -1` while csv and json gave 141."""
    proc = subprocess.run(["bash", "-o", "pipefail", "-c",
                           f"{sys.executable} -m labtui sql 'select range from range(200000)' --limit 200000 "
                           f"--format {fmt} | head -1"], env=store[1], capture_output=True, text=True, timeout=120)
    assert len(proc.stdout.splitlines()) == 1
    assert proc.stderr == "" and proc.returncode == EXIT_CLOSED_PIPE, (proc.returncode, proc.stderr)


@pytest.mark.parametrize("terminal", ["stdin", "stdout"])
def test_the_console_without_a_terminal_says_so_instead_of_drawing_into_a_file(tmp_path: Path, terminal: str) -> None:
    """`labtui > file` (or `labtui < /dev/null`, as in cron) used to draw the console's escape codes into the
    file for ever; with only one of its two streams on a terminal it now ends at once, in one line, status 2."""
    env = {**os.environ, "LABTUI_DB": str(tmp_path / "lab.duckdb")}
    out = tmp_path / "out.txt"
    leader, follower = pty.openpty()
    try:
        with open(out, "wb") as file, open(os.devnull, "rb") as nothing:
            streams = {"stdin": follower, "stdout": file} if terminal == "stdin" else {"stdin": nothing,
                                                                                       "stdout": follower}
            done = subprocess.run([sys.executable, "-m", "labtui"], stderr=subprocess.PIPE, env=env, timeout=60,
                                  **streams)
    finally:
        os.close(leader)
        os.close(follower)
    assert done.returncode == 2 and out.read_bytes() == b""
    assert done.stderr.decode().strip().startswith("labtui: the console needs a terminal")
    assert not (tmp_path / "lab.duckdb").exists()  # nothing opened
