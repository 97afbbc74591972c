"""The run that measures stays lean: no DuckDB, dataframes, statistics or plots until its sessions have ended,
the store fed from a process of its own, and the observer's share recorded beside the host's samples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from labtui.store import run_sql

#: Modules the measuring process must not load before its last session has ended.
HEAVY = ("duckdb", "polars", "pyarrow", "numpy", "scipy", "matplotlib")

#: `labtui run ...` with an import hook that prints, on stderr, when each heavy module is first imported and
#: from which process (the store's child is another process: its imports are its own).
TRACED_RUN = """
import builtins, runpy, sys, time
heavy, seen, original = set(sys.argv[1].split(",")), set(), builtins.__import__
def traced(name, *args, **kwargs):
    top = name.split(".")[0]
    if top in heavy and top not in seen:
        seen.add(top)
        sys.stderr.write(f"HEAVY {top} {time.time():.6f}\\n")
    return original(name, *args, **kwargs)
builtins.__import__ = traced
sys.argv = ["labtui", *sys.argv[2:]]
runpy.run_module("labtui", run_name="__main__")
"""


def test_a_run_loads_no_store_or_dataframes_until_its_session_has_ended(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-c", TRACED_RUN, ",".join(HEAVY), "run", "boot-scaling", "--db", str(db),
         "--set", "scale.steps=6", "--set", "scale.per_step=5", "--set", "suite.repetitions=2",
         "--set", "sampling.interval_s=0.1", "--set", "sampling.quiet_timeout_s=0"],
        env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "boot_time" in done.stdout  # the final table was drawn, with the modules it needs
    loaded = {line.split()[1]: float(line.split()[2]) for line in done.stderr.splitlines() if line.startswith("HEAVY ")}
    assert {"duckdb", "polars"} <= set(loaded)
    ((sid, ended),) = run_sql(db, "SELECT session_id, epoch(ended_at) FROM sessions").rows
    early = {name: round(ended - at, 3) for name, at in loaded.items() if at < ended}
    assert not early, f"loaded before session {sid} ended (seconds before): {early}"
    ((samples, rss, helper_rss),) = run_sql(
        db, f"SELECT count(*), max(rss_bytes), max(helper_rss_bytes) FROM observer WHERE session_id = '{sid}'").rows
    assert samples >= 2
    assert 5 * 2**20 < rss < 100 * 2**20  # the measuring process, lean
    assert helper_rss > rss  # the store's process holds DuckDB
