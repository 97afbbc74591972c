"""`labtui import` of a 1M-row CSV against DuckDB's own load of the same file.

Both load the same CSV into the `results` table of an existing labtui store:

- DuckDB: `INSERT INTO results (session_id, ...) SELECT 'duck', * FROM
  read_csv('file')` (its reader, auto-detecting) on a connection of its own:
  open, load, close;
- labtui: `labtui import FILE --session S`, which reads the file with read_csv
  and explicit types straight into the store, with every check in SQL, in one
  transaction with the session's row.

The figure that counts (issue 43) is a new process each, timed from its start
to its exit: `python -m labtui import ...` against `python -c` running DuckDB's
load, so Python's start-up and imports are in both.  The same two loads in this
process (the load alone) are timed too.  Rounds alternate between the two, the
first of a round taking turns, so drift of a shared machine falls on both; the
CPU time (user + system) of each is printed beside its wall time, a figure a
loaded machine moves less.  The target is labtui within 1.5x of DuckDB.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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
#: DuckDB's own load, as a program of its own would write it.
DUCKDB_SQL = f"INSERT INTO results (session_id, {', '.join(COLUMNS)}) SELECT 'duck', * FROM read_csv('{{source}}')"
DUCKDB_PROGRAM = """import sys, duckdb
con = duckdb.connect(sys.argv[1])
con.execute(sys.argv[2])
con.close()
"""


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


def timed(run: Callable[[], None], who: int) -> tuple[float, float]:
    """Wall time of run(), and the CPU time (user + system) `who` (RUSAGE_SELF or RUSAGE_CHILDREN) spent in it."""
    cpu = resource.getrusage(who)
    start = time.perf_counter()
    run()
    wall = time.perf_counter() - start
    after = resource.getrusage(who)
    return wall, after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime


def duckdb_process(db: Path, source: Path) -> None:
    subprocess.run([sys.executable, "-c", DUCKDB_PROGRAM, str(db), DUCKDB_SQL.format(source=source)],
                   check=True, stdout=subprocess.DEVNULL, cwd=REPO)


def labtui_process(db: Path, source: Path) -> None:
    subprocess.run([sys.executable, "-m", "labtui", "import", str(source), "--session", "cli", "--db", str(db)],
                   check=True, stdout=subprocess.DEVNULL, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})


def duckdb_load(db: Path, source: Path) -> None:
    con = duckdb.connect(str(db))
    con.execute(DUCKDB_SQL.format(source=source))
    con.close()


def labtui_load(db: Path, source: Path) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        code = labtui_main(["import", str(source), "--session", "s", "--db", str(db)])
    if code != 0:
        raise SystemExit(f"labtui import exited {code}")


def rows_in(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM results").fetchall()[0][0]
    finally:
        con.close()


Times = dict[str, list[tuple[float, float]]]


def alternate(pair: dict[str, Callable[[Path, Path], None]], tmp: Path, source: Path, rows: int, rounds: int,
              who: int) -> Times:
    """Each of the pair once per round on a fresh store, the first of a round taking turns; their (wall, CPU) times."""
    times: Times = {name: [] for name in pair}
    names = list(pair)
    for i in range(rounds):
        for name in names if i % 2 == 0 else names[::-1]:
            db = fresh_store(tmp / f"{name}.duckdb")
            times[name].append(timed(lambda: pair[name](db, source), who))  # noqa: B023 (called at once)
            assert rows_in(db) == rows, name
    return times


def show(title: str, times: Times) -> float:
    """Print each side's wall times (median, best, n, all) and CPU median; return the ratio of the wall medians."""
    print(title)
    for name, values in times.items():
        walls = [wall for wall, _ in values]
        print(f"  {name:<8} median {statistics.median(walls):.3f} s  best {min(walls):.3f} s  n={len(walls)}  "
              f"CPU median {statistics.median(cpu for _, cpu in values):.3f} s  "
              f"(all: {', '.join(f'{t:.3f}' for t in walls)})")
    duck, lab = [[wall for wall, _ in times[name]] for name in ("duckdb", "labtui")]
    ratio = statistics.median(lab) / statistics.median(duck)
    cpu = statistics.median(c for _, c in times["labtui"]) / statistics.median(c for _, c in times["duckdb"])
    print(f"  ratio    median {ratio:.2f}x  best {min(lab) / min(duck):.2f}x  "
          f"per round {statistics.median(a / b for a, b in zip(lab, duck)):.2f}x (median)  CPU {cpu:.2f}x")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="200,000 rows instead of 1,000,000")
    parser.add_argument("--rounds", type=int, default=7, help="alternating rounds of each (default 7)")
    args = parser.parse_args()
    rows = 200_000 if args.quick else 1_000_000
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        source = tmp / "results.csv"
        write_csv(source, rows)
        processes = {"duckdb": duckdb_process, "labtui": labtui_process}
        alternate(processes, tmp, source, rows, 1, resource.RUSAGE_CHILDREN)  # the page cache, .pyc files
        by_process = alternate(processes, tmp, source, rows, args.rounds, resource.RUSAGE_CHILDREN)
        loads = {"duckdb": duckdb_load, "labtui": labtui_load}
        alternate(loads, tmp, source, rows, 1, resource.RUSAGE_SELF)  # labtui's modules imported
        by_load = alternate(loads, tmp, source, rows, args.rounds, resource.RUSAGE_SELF)
    print(f"rows: {rows:,}; rounds: {args.rounds}, alternating; load average {os.getloadavg()[0]:.2f}")
    ratio = show("new process, exec to exit (`python -c` DuckDB load vs `python -m labtui import`):", by_process)
    in_process = show("in this process (the load alone):", by_load)
    duck = statistics.median(wall for wall, _ in by_process["duckdb"])
    report("import_vs_duckdb", ratio, "x DuckDB's own load, new process each",
           f"DuckDB's read_csv in a new process at {rows / duck:,.0f} rows/s, ceiling {CEILING}x",
           CEILING / ratio, ratio <= CEILING)
    report("import_vs_duckdb_in_process", in_process, "x DuckDB's own load, in process", f"ceiling {CEILING}x",
           CEILING / in_process, in_process <= CEILING)


if __name__ == "__main__":
    main()
