"""Store ingest and query speed.

- batched ingest of result and resource rows through StoreWriter: >= 300,000 rows/s,
  >= 30x a naive row-by-row executemany, within 2x DuckDB's own CSV COPY of the same rows;
- `labtui sql` of a grouped aggregate over 10 million resource rows: < 1 s.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one
from common import median_time, report  # noqa: E402

from labtui.events import ResourceSample, Result  # noqa: E402
from labtui.store import StoreWriter  # noqa: E402


def make_events(n: int) -> list:
    half = n // 2
    base = 1_790_000_000.0
    results = [
        Result("bench", 1, i % 100, (i % 100) * 10, "local", f"w{i}", "boot", "boot_time", 0.001 * (i % 7), "s", "lower", base + i)
        for i in range(half)
    ]
    samples = [
        ResourceSample("local", 0.9, 0.8, None, 1 << 30, 0.5, base + i, "bench", i % 1000)
        for i in range(n - half)
    ]
    return results + samples


def batched_rate(db: Path, events: list) -> float:
    writer = StoreWriter.open(db)
    start = time.perf_counter()
    for event in events:
        writer.add(event)
    writer.flush()
    elapsed = time.perf_counter() - start
    writer.close()
    return len(events) / elapsed


def naive_rate(db: Path, events: list) -> float:
    """Row-by-row executemany into the same tables (what the store must beat)."""
    StoreWriter.open(db).close()
    con = duckdb.connect(str(db))
    results = [e for e in events if isinstance(e, Result)]
    samples = [e for e in events if isinstance(e, ResourceSample)]
    start = time.perf_counter()
    con.executemany(
        "insert into results (session_id, repetition, step, background, host, instance_id, benchmark, metric, value, unit, better, ts) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, to_timestamp(?))",
        [(e.session_id, e.repetition, e.step, e.background, e.host, e.instance_id, e.benchmark, e.metric, e.value, e.unit, e.better, e.ts) for e in results],
    )
    con.executemany(
        "insert into resources values (?, ?, to_timestamp(?), ?, ?, ?, ?, ?, ?)",
        [(e.session_id, e.host, e.ts, e.cpu_avail, e.mem_avail, e.swap_avail, e.mem_used_bytes, e.load1, e.instances) for e in samples],
    )
    elapsed = time.perf_counter() - start
    con.close()
    return len(events) / elapsed


def copy_rate(db: Path, events: list, tmp: Path) -> float:
    """DuckDB's own CSV COPY of the same rows, CSV writing excluded."""
    StoreWriter.open(db).close()
    results_csv, resources_csv = tmp / "results.csv", tmp / "resources.csv"
    with open(results_csv, "w", newline="") as f:
        out = csv.writer(f)
        for e in events:
            if isinstance(e, Result):
                out.writerow((e.session_id, e.repetition, e.step, e.background, e.host, e.instance_id, e.benchmark, e.metric, e.value, e.unit, e.better, time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(e.ts))))
    with open(resources_csv, "w", newline="") as f:
        out = csv.writer(f)
        for e in events:
            if isinstance(e, ResourceSample):
                out.writerow((e.session_id, e.host, time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(e.ts)), e.cpu_avail, e.mem_avail, "", e.mem_used_bytes, e.load1, e.instances))
    con = duckdb.connect(str(db))
    start = time.perf_counter()
    con.execute(f"copy results (session_id, repetition, step, background, host, instance_id, benchmark, metric, "
                f"value, unit, better, ts) from '{results_csv}' (header false)")
    con.execute(f"copy resources from '{resources_csv}' (header false)")
    elapsed = time.perf_counter() - start
    con.close()
    return len(events) / elapsed


def sql_aggregate_time(tmp: Path, rows: int) -> float:
    db = tmp / "big.duckdb"
    StoreWriter.open(db).close()
    con = duckdb.connect(str(db))
    con.execute(
        f"""insert into resources select 's' || (i % 20), 'h' || (i % 4), to_timestamp(1.79e9 + i),
               random(), random(), null, (random() * 1e9)::bigint, random() * 4, (i % 1000)::int
            from range({rows}) t(i)"""
    )
    con.close()
    query = ("select session_id, host, count(*), avg(cpu_avail), avg(mem_avail), max(mem_used_bytes) "
             "from resources group by all order by 1, 2")
    cmd = [sys.executable, "-m", "labtui", "sql", query, "--db", str(db), "--format", "csv"]
    subprocess.run(cmd, check=True, capture_output=True)  # warm the page cache
    return median_time(lambda: subprocess.run(cmd, check=True, capture_output=True), 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, same figures")
    args = parser.parse_args()
    n = 200_000 if args.quick else 1_000_000
    naive_n = 20_000 if args.quick else 50_000
    events = make_events(n)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        batched = batched_rate(tmp / "a.duckdb", events)
        naive = naive_rate(tmp / "b.duckdb", events[: naive_n // 2] + events[n // 2 : n // 2 + naive_n // 2])
        copy = copy_rate(tmp / "c.duckdb", events, tmp)
        report("store_ingest_batched", batched, "rows/s", "floor 300,000 rows/s", batched / 300_000, batched >= 300_000)
        report("store_ingest_vs_naive", batched / naive, "x", f"naive executemany at {naive:,.0f} rows/s, floor 30x", batched / naive / 30, batched / naive >= 30)
        report("store_ingest_vs_copy", copy / batched, "x slower than COPY", f"CSV COPY at {copy:,.0f} rows/s, ceiling 2x", 2 / (copy / batched), copy / batched <= 2)
        rows = 2_000_000 if args.quick else 10_000_000
        elapsed = sql_aggregate_time(tmp, rows)
        report("sql_grouped_aggregate", elapsed * 1000, "ms", f"{rows:,} resource rows via `labtui sql`, ceiling 1000 ms", 1.0 / elapsed, elapsed < 1.0)


if __name__ == "__main__":
    main()
