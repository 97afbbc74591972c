"""Full-disk soak: the disk under the store and the journals fills at a random moment of a run.

Each round mounts an 8 MiB tmpfs, starts `labtui run boot-scaling` (2 per step, up to 400 steps,
samples every 0.1 s) with its store and journals on it, waits a seeded random delay (0.2-6 s
after start), then fills the tmpfs with `dd`.  It checks:

- the run ends by itself (exit 1, "store error" naming the store; 0 when the run had already
  ended; 2, "cannot open store", when the disk filled before the store could be opened, and then
  nothing was created) within 5 minutes;
- no instance of the session is left (`labtui instances --session ID`);
- once the filler is gone, the store opens and every step recorded ok has its results.

Prints one line per round and a summary; exits 1 when any check failed.  Needs root (mount).

    python tests/perf/soak_full_disk.py --rounds 20 [--seed N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[2]


def labtui(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "labtui", *args], env=env, capture_output=True, text=True,
                          timeout=300, cwd=REPO)


def one_round(number: int, delay: float, tmp: Path) -> list[str]:
    """Run, fill the disk after `delay` s, check; the problems found (none: an empty list)."""
    mount = tmp / f"full{number}"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)], check=True)
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp / f"rt{number}"), "COLUMNS": "200", "PYTHONPATH": str(REPO)}
    db = mount / "lab.duckdb"
    problems: list[str] = []
    try:
        run = subprocess.Popen([sys.executable, "-m", "labtui", "run", "boot-scaling", "--db", str(db),
                                "--set", "scale.steps=400", "--set", "scale.per_step=2",
                                "--set", "sampling.interval_s=0.1", "--set", "suite.repetitions=1",
                                "--set", "sampling.quiet_timeout_s=0"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        time.sleep(delay)
        subprocess.run(["dd", "if=/dev/zero", f"of={mount / 'filler'}", "bs=64k"], capture_output=True)
        try:
            out, err = run.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            run.kill()
            out, err = run.communicate()
            problems.append("the run did not end within 300 s of the full disk")
        refused = run.returncode == 2 and "cannot open store" in err and "No space left" in err
        if refused:  # the disk filled before the store could be opened: nothing started, nothing to check
            left = labtui("instances", "--format", "json", env=env)
            if json.loads(left.stdout or "[]"):
                problems.append(f"refused at the start, yet instances exist: {left.stdout.strip()}")
        elif run.returncode == 1 and not ("store error" in err and "lab.duckdb" in err):
            problems.append(f"exit 1 without a store error: {err[-300:]}")
        elif run.returncode not in (0, 1):
            problems.append(f"exit {run.returncode}: {err[-300:]}")
        sid = err.split("session ")[1].split()[0] if "session " in err else None
        if refused:
            pass
        elif sid is None:
            problems.append(f"no session id in: {err[-300:]}")
        else:
            left = labtui("instances", "--session", sid, "--format", "json", env=env)
            if left.returncode != 0 or json.loads(left.stdout or "[]"):
                problems.append(f"instances left: {left.stdout.strip()} {left.stderr.strip()}")
        (mount / "filler").unlink(missing_ok=True)
        if db.exists():
            con = duckdb.connect(str(db), read_only=True)
            try:
                steps = con.execute("select count(*) from steps where ok").fetchone()[0]
                with_results = con.execute(
                    "select count(distinct (session_id, repetition, step)) from results "
                    "join steps using (session_id, repetition, step) where ok").fetchone()[0]
            finally:
                con.close()
            if with_results != steps:
                problems.append(f"{steps} steps ok, {with_results} with results")
        print(f"round {number}: fill after {delay:.2f} s, exit {run.returncode}: "
              f"{'ok' if not problems else '; '.join(problems)}", flush=True)
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=40)
    ns = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root: each round mounts a tmpfs")
        return 2
    rng = random.Random(ns.seed)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for number in range(1, ns.rounds + 1):
            failed += bool(one_round(number, rng.uniform(0.2, 6.0), Path(tmp)))
    print(f"full-disk soak: {ns.rounds - failed} of {ns.rounds} rounds clean (seed {ns.seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
