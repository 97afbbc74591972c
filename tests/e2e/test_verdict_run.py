"""`labtui run` says what its table shows (issue 41, item 1): the metric's verdict above the run table, the trust
column on every row of an 80-column terminal, and no slowdown from one repetition (`--profile quick` said
"+110%" from n=1)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import duckdb

from labtui.figures.table import repetition_samples
from labtui.figures.verdict import verdict

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def run_in_terminal(args: list[str], env: dict[str, str], columns: int, timeout: float = 240) -> tuple[int, str]:
    """Run `python -m labtui ARGS` with its stdout on a terminal `columns` wide; its exit status and what it drew
    there, escape codes taken out."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "labtui", *args], stdout=follower, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the terminal closed: the command ended
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(leader)
    return code, ANSI.sub("", out.decode("utf-8", "replace")).replace("\r\n", "\n")


def test_a_quick_run_in_an_80_column_terminal_shows_its_verdict_and_trust_and_no_slowdown_from_n_1(
        tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "80", "TERM": "xterm"}
    env.pop("NO_COLOR", None)
    code, text = run_in_terminal(["run", "boot-scaling", "--profile", "quick", "--set", "sampling.quiet_timeout_s=0",
                                  "--db", str(db)], env, 80)
    assert code == 0, text
    with duckdb.connect(str(db), read_only=True) as con:
        (sid,), = con.execute("SELECT session_id FROM sessions").fetchall()
    samples = repetition_samples(db, sid)
    levels = {r["background"]: r["samples"] for r in samples.iter_rows(named=True) if r["metric"] == "boot_time"}
    expected = verdict("boot_time", "s", levels).line
    title = text.index("boot: boot_time (ms, lower is better)")
    # the verdict, wrapped to the terminal, is what comes just above the table
    above = " ".join(line.strip() for line in text[:title].splitlines()[-4:])
    assert above.endswith(expected), (above, expected)
    table = text[title:].splitlines()
    header = next(line for line in table if line.startswith("┃") and "trust" in line)
    rows = [line for line in table if line.startswith("│")]
    assert len(rows) == 4 and max(len(line) for line in table[:len(rows) + 4]) <= 80  # the baseline and 3 steps
    cells = [[c.strip() for c in row.split("│")[1:-1]] for row in rows]
    assert all(c[-1] == "n=1: no spread" for c in cells), rows  # trust, whole, on every row
    slowdown = [c.strip() for c in header.split("┃")[1:-1]].index("median slowdown %")
    assert all(c[slowdown] == "-" for c in cells), rows  # n=1: the value, no slowdown
