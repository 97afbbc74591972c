"""Soak: SIGINT, SIGTERM, SIGHUP and a double SIGINT at random moments of real runs, ROUNDS each.

After every round, with no cleanup command run, checks that no instance of the session exists on the
backend, that no instance row is open, and that the session's end names the signal. Prints one line
per round and a summary; exits 1 if any round left something behind.

    python tests/perf/soak_signals.py [--backend process|docker] [--rounds 20] [--seed N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from labtui.backends.base import open_backend  # noqa: E402
from labtui.hosts.local import LocalHost  # noqa: E402
from labtui.store import StoreError, fetch_frame  # noqa: E402

SCHEDULES = {"INT": (signal.SIGINT, None), "TERM": (signal.SIGTERM, None), "HUP": (signal.SIGHUP, None),
             "INT+INT": (signal.SIGINT, signal.SIGINT)}
SUITE = {"process": "boot-scaling", "docker": "docker-boot-scaling"}


def session_row(db: Path) -> tuple[str, str, str] | None:
    try:
        frame = fetch_frame(db, "select session_id, status, coalesce(message, '') as m from sessions") if db.exists() else None
    except StoreError:
        return None
    return tuple(frame.row(0)) if frame is not None and frame.height else None  # type: ignore[return-value]


def one_round(backend: str, schedule: str, db: Path, rng: random.Random) -> str:
    first, second = SCHEDULES[schedule]
    argv = [sys.executable, "-m", "labtui", "run", SUITE[backend], "--db", str(db), "--set", "scale.steps=6",
            "--set", "scale.per_step=20", "--set", "suite.repetitions=1", "--set", "sampling.quiet_timeout_s=0"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while session_row(db) is None:
        if proc.poll() is not None or time.monotonic() > deadline:
            return f"never started: {proc.communicate()[1][-300:]}"
        time.sleep(0.1)
    time.sleep(rng.uniform(0.0, 4.0))
    proc.send_signal(first)
    if second is not None:
        time.sleep(rng.uniform(0.05, 0.6))
        if proc.poll() is None:
            proc.send_signal(second)
    err = proc.communicate(timeout=600)[1]
    session, status, message = session_row(db) or ("?", "?", "?")
    problems = []
    if status == "aborted" and message != f"aborted by {first.name}":
        problems.append(f"end says {message!r}")
    if status not in ("aborted", "completed"):
        problems.append(f"status {status}")
    left = asyncio.run(open_backend(backend, LocalHost()).list(session))
    if left:
        problems.append(f"{len(left)} instance(s) left")
    rows = fetch_frame(db, "select count(*) as n from instances where session_id = ? and destroyed_at is null "
                           "and state <> 'exited'", [session])["n"][0]
    if rows:
        problems.append(f"{rows} open row(s)")
    return "; ".join(problems) or f"ok ({status}, exit {proc.returncode})" + ("" if not err else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="process", choices=sorted(SUITE))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    print(f"soak: {args.backend}, {args.rounds} rounds per schedule, seed {seed}", flush=True)
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("LABTUI_RUNTIME_DIR", str(Path(tmp) / "runtime"))
        for schedule in SCHEDULES:
            for i in range(args.rounds):
                verdict = one_round(args.backend, schedule, Path(tmp) / f"{schedule}-{i}.duckdb", rng)
                bad += not verdict.startswith("ok")
                print(f"{schedule:8} round {i + 1:2}: {verdict}", flush=True)
    print(f"{bad} round(s) of {args.rounds * len(SCHEDULES)} left something behind")
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
