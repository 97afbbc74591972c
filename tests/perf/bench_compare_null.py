"""Benchmark whether `labtui compare` survives many levels: identical runs, and one real difference.

    python tests/perf/bench_compare_null.py [--quick] [--pairs N] [--steps N] [--repetitions N]
        [--work-ms MS] [--keep]

Issue 41: `compare` tested each level at 5% with no correction, so two runs of the same command on
the same idle machine reported "B better, significant" at some level of 31 by chance.  This runs
`--pairs` pairs (default 20; 2 with `--quick`) of the same quick command, each pair into a store of
its own:

    labtui run boot-scaling --set scale.steps=10 --set suite.repetitions=3 --set sampling.quiet_timeout_s=0

and `labtui compare A B --format json` on each pair, then prints how many pairs report a condition
that differs after the correction (Benjamini-Hochberg, FDR 5%; goal: at most 1 of 20) beside how
many had a raw p < 0.05 somewhere (what compare said before).

Then one pair with a real difference, to show the correction has not made compare blind: the same
suite with the arith probe as the worker (`--set worker.program=arith`), which computes for
`--work-ms` milliseconds (A) or twice as long (B) before it exits.  Boot time is create to exit, so
B's is longer by `--work-ms` at every level; the pair should be found different at most levels.  The
suites' hello worker takes no argument, and a rate probe run for twice as long (aim9-arithmetic's
`arith aim9 SECONDS`) reports the same rate, so doubling the work of a boot is the honest difference
this suite can be given.

A pair takes about 35 s on a quiet 2-CPU machine (17 s a run); 20 pairs about 12 minutes.  The load
average is printed first and last: on a busy machine the runs of a pair drift apart (the machine's
state, not chance), which the correction rightly does not hide.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import duckdb
from common import report

REPO = Path(__file__).resolve().parents[2]
#: Identical pairs allowed to report a difference after the correction, per 20 pairs (issue 41's goal).
GOAL_PER_20 = 1


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def quick_args(steps: int, repetitions: int) -> list[str]:
    return ["--set", f"scale.steps={steps}", "--set", f"suite.repetitions={repetitions}",
            "--set", "sampling.quiet_timeout_s=0"]


def labtui(env: dict[str, str], *args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "labtui", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def run(env: dict[str, str], db: Path, args: list[str]) -> None:
    started = time.monotonic()
    done = labtui(env, "run", "boot-scaling", *args, "--db", str(db))
    if done.returncode != 0:
        raise SystemExit(f"labtui run boot-scaling failed (exit {done.returncode}): {(done.stderr or done.stdout)[-800:]}")
    print(f"  run {' '.join(args)}: {time.monotonic() - started:.0f} s", flush=True)


def sessions(db: Path) -> list[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [s for (s,) in con.execute("SELECT session_id FROM sessions ORDER BY started_at").fetchall()]
    finally:
        con.close()


def compare(env: dict[str, str], db: Path) -> dict:
    a, b = sessions(db)
    done = labtui(env, "compare", a, b, "--db", str(db), "--format", "json", timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"labtui compare failed (exit {done.returncode}): {done.stderr[-800:]}")
    return json.loads(done.stdout)


def tally(doc: dict) -> tuple[int, int, int]:
    """(conditions tested, significant after the correction, raw p < 0.05)."""
    tested = [r for r in doc["rows"] if r["p_value"] is not None]
    return len(tested), sum(bool(r["significant"]) for r in tested), sum(r["p_value"] < 0.05 for r in tested)


def main(tmp: Path, ns: argparse.Namespace) -> int:
    print(f"load average at start: {load()} ({os.cpu_count()} CPUs)", flush=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "LABTUI_RUNTIME_DIR": str(tmp / "rt"), "COLUMNS": "200"}
    args = quick_args(ns.steps, ns.repetitions)
    after = before = 0
    for i in range(ns.pairs):
        print(f"pair {i + 1} of {ns.pairs} (identical runs)", flush=True)
        db = tmp / f"pair{i}.duckdb"
        run(env, db, args)
        run(env, db, args)
        doc = compare(env, db)
        tested, found, raw = tally(doc)
        after += found > 0
        before += raw > 0
        print(f"  {found} of {tested} differ after correction, {raw} with raw p < 0.05: {doc['summary']}", flush=True)
    allowed = max(GOAL_PER_20, ns.pairs * GOAL_PER_20 // 20)
    report("identical pairs reporting a difference after correction", after, "pairs",
           f"goal at most {allowed} of {ns.pairs}", ok=after <= allowed)
    report("identical pairs with a raw p < 0.05 at some level (no correction)", before, "pairs",
           f"{ns.pairs} pairs")

    work = ns.work_ms / 1000.0
    print(f"real difference: arith worker computing {ns.work_ms:g} ms (A) and {2 * ns.work_ms:g} ms (B)", flush=True)
    db = tmp / "real.duckdb"
    for seconds in (work, 2 * work):
        run(env, db, [*args, "--set", "worker.program=arith", "--set", f'worker.args=["int", "{seconds:g}"]'])
    doc = compare(env, db)
    tested, found, raw = tally(doc)
    print(f"  {doc['summary']}", flush=True)
    report("real difference: levels found after correction", found, "levels",
           f"{tested} levels tested, {raw} with raw p < 0.05", ok=found > 0)
    print(f"load average at end: {load()}", flush=True)
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 pairs")
    parser.add_argument("--pairs", type=int, default=None, help="identical pairs (default 20, 2 with --quick)")
    parser.add_argument("--steps", type=int, default=10, help="loaded levels after the baseline")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--work-ms", type=float, default=10.0, help="the real pair's work before exit, A's (B twice)")
    parser.add_argument("--keep", action="store_true", help="keep the stores (printed path)")
    ns = parser.parse_args()
    ns.pairs = ns.pairs if ns.pairs is not None else (2 if ns.quick else 20)
    if ns.keep:
        kept = Path(tempfile.mkdtemp(prefix="bench-compare-"))
        print(f"stores in {kept}", flush=True)
        raise SystemExit(main(kept, ns))
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        raise SystemExit(main(Path(tmp), ns))
