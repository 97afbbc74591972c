"""The README's main job, 10 steps: labtui's own overhead against the instances' own boot time.

Runs `boot-scaling --set scale.steps=10 --set suite.repetitions=1` (the README's settings, 10 steps)
in-process through the session service, several times, each into a new store, and prints per run:

- the steps' wall time (first step's start to last step's end, from the store) against the sum of
  its instances' `boot_s` (from the store): the ratio issue 40 bounds at 2x (issue 31 at 3x);
- a step's time split into instance work (the backend's create and destroy calls), journal appends,
  feeds (in the store's own process, between measurements: a step waits for one only when a
  measurement is about to start while it runs) and sampling.

    python tests/perf/bench_journal.py [--runs 3] [--steps 10] [--hold] [--quick]

--hold also opens the store read-only from another process for the whole run (as a notebook or
the DuckDB CLI would), and prints the same figures: the run should not slow down.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one

from labtui.session import LabRun, RunRequest
from labtui.store import run_sql
from labtui.store.journal import Journal
from labtui.suites import load_suite


class Clock:
    """Seconds spent inside wrapped calls, by name."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = {}

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - began
        return timed

    def wrap_async(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        async def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.spent[name] = self.spent.get(name, 0.0) + time.perf_counter() - began
        return timed


def one_run(db: Path, steps: int) -> tuple[LabRun, Clock, float]:
    """Run the README's job with `steps` steps into db; the run, where its time went, and its wall time."""
    clock = Clock()
    suite = load_suite("boot-scaling", [f"scale.steps={steps}", "suite.repetitions=1"])
    lab = LabRun(RunRequest(suite, db))
    for runner in lab.prepare():
        backend, host = runner.ctx.backend, runner.ctx.host
        backend.create_many = clock.wrap_async("instance work", backend.create_many)  # type: ignore[method-assign]
        backend.destroy_many = clock.wrap_async("instance work", backend.destroy_many)  # type: ignore[method-assign]
        host.sample = clock.wrap_async("sampling", host.sample)  # type: ignore[method-assign]
    append, append_all = Journal.append, Journal.append_all
    Journal.append = clock.wrap("journal", append)  # type: ignore[method-assign]
    Journal.append_all = clock.wrap("journal", append_all)  # type: ignore[method-assign]
    try:
        began = time.perf_counter()
        asyncio.run(lab.run())
        whole = time.perf_counter() - began
    finally:
        Journal.append, Journal.append_all = append, append_all  # type: ignore[method-assign]
    return lab, clock, whole


def figures(db: Path, lab: LabRun, clock: Clock, whole: float) -> dict[str, float]:
    """The run's figures from the store (read once any holder has let go: this read moves the journal in)."""
    (session,) = [r.session_id for r in lab.runners]
    (steps_s, boots_s, count), = run_sql(db, (
        "SELECT (SELECT epoch(max(ended_at)) - epoch(min(started_at)) FROM steps WHERE session_id = $s), "
        "(SELECT sum(boot_s) FROM instances WHERE session_id = $s), "
        "(SELECT count(*) FROM steps WHERE session_id = $s)").replace("$s", f"'{session}'")).rows
    feeds = lab.feeder.feed_times if lab.feeder is not None else []
    return {"whole": whole, "steps": steps_s, "boots": boots_s, "count": count,
            "feed": sum(feeds), "feeds": len(feeds), **clock.spent}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--hold", action="store_true", help="hold the store open read-only from another process")
    parser.add_argument("--quick", action="store_true", help="one run (run_all.py --quick)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 1
    ratios = []
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(args.runs):
            db = Path(tmp) / f"run{number}.duckdb"
            holder = None
            if args.hold:
                one_run(db, 1)  # the store must exist before another program can hold it
                holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; "
                                           "c = duckdb.connect(sys.argv[1], read_only=True); print('held', flush=True); "
                                           "time.sleep(3600)", str(db)], stdout=subprocess.PIPE, text=True)
                assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            try:
                lab, clock, whole = one_run(db, args.steps)
            finally:
                if holder is not None:
                    holder.kill()
                    holder.wait()
            found = figures(db, lab, clock, whole)
            steps = found["count"]
            ratio = found["steps"] / found["boots"]
            ratios.append(ratio)
            print(f"run {number + 1}: {steps} steps in {found['steps']:.2f} s, boots {found['boots']:.3f} s: "
                  f"{ratio:.2f}x; whole run {found['whole']:.2f} s", flush=True)
            print(f"  a step: instance work {found.get('instance work', 0) / steps * 1000:.1f} ms, "
                  f"journal {found.get('journal', 0) / steps * 1000:.2f} ms, "
                  f"sampling {found.get('sampling', 0) / steps * 1000:.1f} ms, "
                  f"feed {found['feed'] / steps * 1000:.1f} ms ({found['feeds']} feeds, in the store's process)",
                  flush=True)
    print(f"steps / boots over {len(ratios)} runs: median {statistics.median(ratios):.2f}x "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}); issue 40's bound: 2x"
          + ("  ok" if statistics.median(ratios) <= 2 else "  MISSED"), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
