"""`labtui import` of a 1M-row CSV against DuckDB's own load of the same file.

Both load the same CSV into the `results` table of an existing labtui store:

- DuckDB: `INSERT INTO results (session_id, ...) SELECT 'duck', * FROM
  read_csv('file')` (its reader, auto-detecting) on a connection of its own:
  open, load, close;
- labtui: `labtui import FILE --session S` run in this process (so the
  figure is the load, not Python's start-up), which reads the file with
  read_csv and explicit types, validates every row in SQL, and inserts.

Rounds alternate between the two so drift of a shared machine falls on both.
The target (issue 22) is labtui within 1.5x of DuckDB.  The wall time of the
same import as a new `python -m labtui import` process is printed too.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one
from common import report

from labtui.cli import main as labtui_main
from labtui.store import StoreWriter

REPO = Path(__file__).resolve().parents[2]
COLUMNS = ("benchmark", "metric", "value", "unit", "better", "step", "background", "repetition", "host")
CEILING = 1.5


def write_csv(path: Path, rows: int) -> None:
    rng = random.Random(7)
    metrics = [("boot", "boot_time", "s", "lower"), ("memory", "rss_bytes", "bytes", "lower"),
               ("unixbench", "execl_throughput_p1", "lps", "higher"), ("lmbench", "fork_us", "us", "lower")]
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        for i in range(rows):
            bench, metric, unit, better = metrics[i % len(metrics)]
            step = i // 1000 % 100
            out.writerow((bench, metric, f"{rng.uniform(0.001, 5000):.6g}", unit, better, step, step * 10, i % 5,
                          f"h{i % 8}"))


def fresh_store(path: Path) -> Path:
    for file in (path, path.with_name(path.name + ".wal")):
        file.unlink(missing_ok=True)
    StoreWriter.open(path).close()
    return path


def duckdb_load(db: Path, source: Path) -> float:
    start = time.perf_counter()
    con = duckdb.connect(str(db))
    con.execute(f"INSERT INTO results (session_id, {', '.join(COLUMNS)}) SELECT 'duck', * FROM read_csv('{source}')")
    con.close()
    return time.perf_counter() - start


def labtui_load(db: Path, source: Path, session: str) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        code = labtui_main(["import", str(source), "--session", session, "--db", str(db)])
    elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"labtui import exited {code}")
    return elapsed


def rows_in(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM results").fetchall()[0][0]
    finally:
        con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200,000 rows instead of 1,000,000")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of each (default 5)")
    args = parser.parse_args()
    rows = 200_000 if args.quick else 1_000_000
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        source = tmp / "results.csv"
        write_csv(source, rows)
        # warm the page cache and both code paths once
        duckdb_load(fresh_store(tmp / "warm-d.duckdb"), source)
        labtui_load(fresh_store(tmp / "warm-l.duckdb"), source, "warm")
        ours, theirs = [], []
        for i in range(args.rounds):
            theirs.append(duckdb_load(fresh_store(tmp / "d.duckdb"), source))
            assert rows_in(tmp / "d.duckdb") == rows
            ours.append(labtui_load(fresh_store(tmp / "l.duckdb"), source, f"s{i}"))
            assert rows_in(tmp / "l.duckdb") == rows
        cli_db = fresh_store(tmp / "cli.duckdb")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "labtui", "import", str(source), "--session", "cli", "--db", str(cli_db)],
                       check=True, capture_output=True, cwd=REPO)
        cli = time.perf_counter() - start
    duck, lab = statistics.median(theirs), statistics.median(ours)
    ratio = lab / duck
    print(f"rows: {rows:,}; rounds: {args.rounds}")
    print(f"duckdb read_csv:   median {duck:.3f} s (all: {', '.join(f'{t:.3f}' for t in theirs)})")
    print(f"labtui import:     median {lab:.3f} s (all: {', '.join(f'{t:.3f}' for t in ours)})")
    print(f"labtui import as a new process (python start-up and imports included): {cli:.3f} s")
    report("import_vs_duckdb", ratio, "x DuckDB's own load",
           f"DuckDB's read_csv at {rows / duck:,.0f} rows/s, ceiling {CEILING}x",
           CEILING / ratio, ratio <= CEILING)


if __name__ == "__main__":
    main()
