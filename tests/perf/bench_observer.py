"""The observer effect: a probe run through labtui (sampling on) against the same probe run directly.

Floor: the medians agree within 2%.  The probe is `arith int` (CPU-bound,
0.5 s per run).  Rounds alternate: N runs directly, then N runs as the worker
of a headless `labtui run` on the process backend with the 1 Hz sampler on,
so that drift of a shared virtual machine falls on both series alike; the
medians of the pooled series are compared.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one
from common import report

from labtui.hosts.local import LocalHost
from labtui.programs.native import ensure_program, probe_source

SUITE = """
[suite]
name = "observer"
kind = "scaling"
repetitions = 1
[scale]
steps = 1
per_step = 1
[worker]
program = "arith"
args = ["int", "{seconds}"]
measure = "output"
runs = {runs}
warmup = 1
[background]
program = "sleeper"
[sampling]
interval_s = 1.0
quiet_timeout_s = 0
"""


def direct(binary: str, runs: int, seconds: float) -> list[float]:
    values = []
    for _ in range(runs + 1):  # the first run warms up, as in the suite
        out = subprocess.run([binary, "int", str(seconds)], check=True, capture_output=True, text=True).stdout
        values.append(json.loads(out)["value"])
    return values[1:]


def through_labtui(tmp: Path, runs: int, seconds: float) -> list[float]:
    suite = tmp / "observer.toml"
    suite.write_text(SUITE.format(runs=runs, seconds=seconds))
    db = tmp / "observer.duckdb"
    subprocess.run([sys.executable, "-m", "labtui", "run", str(suite), "--db", str(db)], check=True, capture_output=True)
    con = duckdb.connect(str(db), read_only=True)
    values = [v for (v,) in con.execute("select value from results where step = 0 order by ts").fetchall()]
    con.close()
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    rounds, runs, seconds = (2, 5, 0.3) if args.quick else (4, 8, 0.5)
    alone_values: list[float] = []
    observed_values: list[float] = []
    with tempfile.TemporaryDirectory() as d:
        os.environ["LABTUI_RUNTIME_DIR"] = str(Path(d) / "runtime")
        binary = asyncio.run(ensure_program(LocalHost(), probe_source("arith"), "arith"))
        for _ in range(rounds):
            alone_values += direct(binary, runs, seconds)
            observed_values += through_labtui(Path(d), runs, seconds)
    alone, observed = statistics.median(alone_values), statistics.median(observed_values)
    gap = abs(observed / alone - 1) * 100
    report("observer_effect", gap, "% difference of medians",
           f"arith int direct {alone:,.1f} vs through labtui {observed:,.1f} Mops/s, ceiling 2%", 2 / max(gap, 1e-9), gap <= 2)


if __name__ == "__main__":
    main()
