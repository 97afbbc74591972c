"""Store ingest and query speed.

- batched ingest of result and resource rows through StoreWriter: >= 300,000 rows/s,
  >= 30x a naive row-by-row executemany, within 2x DuckDB's own CSV COPY of the same rows;
- `labtui sql` of a grouped aggregate over 10 million resource rows: < 1 s.
- sharing: the writer holds the file only while it flushes.  Per flush of one step's rows
  (1 step, 20 instances, 200 results, 20 samples): the attach-write-detach flush against a
  connection held for the whole run, on an empty store and a large one; its CPU time (what the
  run costs the measured host); and a reader's open-and-query latency while another process
  flushes back to back (how long a reader waits; ceiling 2 s, the staleness bound).
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one
from common import median_time, report

from labtui.core.events import InstanceCreating, ResourceSample, Result, SessionStarted, StepEnded, StepStarted
from labtui.store import StoreWriter, run_sql


def make_events(n: int) -> list:
    half = n // 2
    base = 1_790_000_000.0
    results = [
        Result("bench", 1, i % 100, (i % 100) * 10, "local", f"w{i}", "boot", "boot_time", 0.001 * (i % 7), "s", "lower",
               base + i)
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
        "insert into results (session_id, repetition, step, background, host, instance_id, benchmark, metric, value, unit, "
        "better, ts) "
        "values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, to_timestamp(?))",
        [(e.session_id, e.repetition, e.step, e.background, e.host, e.instance_id, e.benchmark, e.metric, e.value, e.unit,
          e.better, e.ts) for e in results],
    )
    con.executemany(
        "insert into resources values (?, ?, to_timestamp(?), ?, ?, ?, ?, ?, ?)",
        [(e.session_id, e.host, e.ts, e.cpu_avail, e.mem_avail, e.swap_avail, e.mem_used_bytes, e.load1, e.instances)
         for e in samples],
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
                out.writerow((e.session_id, e.repetition, e.step, e.background, e.host, e.instance_id, e.benchmark, e.metric,
                              e.value, e.unit, e.better, time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(e.ts))))
    with open(resources_csv, "w", newline="") as f:
        out = csv.writer(f)
        for e in events:
            if isinstance(e, ResourceSample):
                out.writerow((e.session_id, e.host, time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(e.ts)), e.cpu_avail,
                              e.mem_avail, "", e.mem_used_bytes, e.load1, e.instances))
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


def step_events(step: int) -> list:
    """One step's rows: what a StepEnded flush of a scaling run writes."""
    sid, base = "share", 1_790_000_000.0 + step
    return (
        [StepStarted(sid, 1, step, 100, step * 20, ts=base)]
        + [InstanceCreating(sid, f"i{step}-{n}", "local", "process", "background", f"i{step}-{n}", base) for n in range(20)]
        + [Result(sid, 1, step, step * 20, "local", f"i{step}-{n % 20}", "boot", "boot_time", 0.01, "s", "lower", base)
           for n in range(200)]
        + [ResourceSample("local", 0.9, 0.8, None, 1 << 30, 0.5, base, sid, 20) for _ in range(20)]
        + [StepEnded(sid, 1, step, step * 20, ts=base + 1)]
    )


def grow(db: Path, rows: int) -> None:
    """A store that has seen many runs: `rows` results and as many samples, rows/100 instances."""
    StoreWriter.open(db).close()
    con = duckdb.connect(str(db))
    con.execute(f"""insert into results select 's' || (i % 500), 1, i % 100, i % 100, 'local', 'i' || i, 'b', 'm',
                    random(), 's', 'lower', to_timestamp(1.7e9 + i), null from range({rows}) t(i)""")
    con.execute(f"""insert into resources select 's' || (i % 500), 'local', to_timestamp(1.7e9 + i), random(),
                    random(), null, 1, 1, 1 from range({rows}) t(i)""")
    con.execute(f"""insert into instances select 's' || (i % 500), 'i' || i, 'local', 'process', 'bg', 'n' || i,
                    to_timestamp(1.7e9 + i), to_timestamp(1.7e9 + i), null, 0.1, 'running' from range({rows // 100}) t(i)""")
    con.close()


def flush_costs(db: Path, flushes: int) -> dict[str, float]:
    """Median wall and CPU seconds of a step's flush: open-write-close (now) and on a held connection (before)."""
    writer = StoreWriter.open(db)
    writer.add(SessionStarted("share", "boot", "scaling", "process", "local", {}, 1))
    writer.flush()
    walls, cpus = [], []
    for step in range(flushes):
        for event in step_events(step):
            writer.add(event)
        wall, cpu = time.perf_counter(), time.process_time()
        writer.flush()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    held = duckdb.connect(str(db))
    held_walls, held_cpus = [], []
    for step in range(flushes, 2 * flushes):
        for event in step_events(step):
            writer.add(event)
        appends, upserts = writer._appends, writer._upserts  # the old way, for comparison
        writer._appends, writer._upserts, writer._pending = {}, {}, 0
        wall, cpu = time.perf_counter(), time.process_time()
        writer._write(held, appends, upserts)
        held_walls.append(time.perf_counter() - wall)
        held_cpus.append(time.process_time() - cpu)
    held.close()
    quantile = statistics.quantiles(walls, n=20)[-1] if len(walls) >= 20 else max(walls)
    return {"wall": statistics.median(walls), "p95": quantile, "cpu": statistics.median(cpus),
            "held": statistics.median(held_walls), "held_cpu": statistics.median(held_cpus)}


def reader_wait(db: Path, reads: int) -> tuple[float, float, float]:
    """A reader's open+query+close latency (median, p95, max) while another process flushes back to back."""
    code = f"""
import sys, time
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from labtui.core.events import Result, StepEnded, StepStarted
from labtui.store import StoreWriter
w = StoreWriter.open({str(db)!r})
print("ready", flush=True)
step = 0
deadline = time.monotonic() + 600
while time.monotonic() < deadline:
    step += 1
    w.add(StepStarted("hammer", 1, step, 0, 0))
    for n in range(200):
        w.add(Result("hammer", 1, step, 0, "local", "i", "b", "m", 1.0, "s", "lower"))
    w.add(StepEnded("hammer", 1, step, 0))
    w.flush()
"""
    writer = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        times = []
        for _ in range(reads):
            start = time.perf_counter()
            run_sql(db, "select count(*) from results")
            times.append(time.perf_counter() - start)
    finally:
        writer.kill()
        writer.wait()
    return statistics.median(times), statistics.quantiles(times, n=20)[-1], max(times)


def sharing(tmp: Path, quick: bool) -> None:
    flushes = 20 if quick else 50
    small, big = tmp / "share-small.duckdb", tmp / "share-big.duckdb"
    rows = 1_000_000 if quick else 5_000_000
    grow(big, rows)
    for name, db in (("empty", small), (f"{rows // 1_000_000}M rows", big)):
        costs = flush_costs(db, flushes)
        report(f"store_flush_{'small' if db is small else 'big'}", costs["wall"] * 1000, "ms",
               f"a step's flush into an {name} store; p95 {costs['p95'] * 1000:.1f} ms; "
               f"{costs['held'] * 1000:.1f} ms on a connection held all run")
        report(f"store_flush_cpu_{'small' if db is small else 'big'}", costs["cpu"] * 1000, "ms CPU",
               f"per flush ({costs['held_cpu'] * 1000:.1f} ms on a held connection); at one flush every 2 s "
               f"that is {costs['cpu'] / 2 * 100:.2f}% of a core")
    median, p95, worst = reader_wait(big, 40 if quick else 100)
    report("store_reader_wait", median * 1000, "ms",
           f"open+count+close while another process flushes back to back; p95 {p95 * 1000:.0f} ms, "
           f"max {worst * 1000:.0f} ms; ceiling 2000 ms", 2.0 / worst, worst < 2.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, same figures")
    parser.add_argument("--sharing", action="store_true", help="only the sharing figures (flush cost, reader wait)")
    args = parser.parse_args()
    if args.sharing:
        with tempfile.TemporaryDirectory() as d:
            sharing(Path(d), args.quick)
        return
    n = 200_000 if args.quick else 1_000_000
    naive_n = 20_000 if args.quick else 50_000
    events = make_events(n)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        batched = batched_rate(tmp / "a.duckdb", events)
        naive = naive_rate(tmp / "b.duckdb", events[: naive_n // 2] + events[n // 2 : n // 2 + naive_n // 2])
        copy = copy_rate(tmp / "c.duckdb", events, tmp)
        report("store_ingest_batched", batched, "rows/s", "floor 300,000 rows/s", batched / 300_000, batched >= 300_000)
        report("store_ingest_vs_naive", batched / naive, "x", f"naive executemany at {naive:,.0f} rows/s, floor 30x",
               batched / naive / 30, batched / naive >= 30)
        report("store_ingest_vs_copy", copy / batched, "x slower than COPY", f"CSV COPY at {copy:,.0f} rows/s, ceiling 2x",
               2 / (copy / batched), copy / batched <= 2)
        rows = 2_000_000 if args.quick else 10_000_000
        elapsed = sql_aggregate_time(tmp, rows)
        report("sql_grouped_aggregate", elapsed * 1000, "ms", f"{rows:,} resource rows via `labtui sql`, ceiling 1000 ms",
               1.0 / elapsed, elapsed < 1.0)
        sharing(tmp, args.quick)


if __name__ == "__main__":
    main()
