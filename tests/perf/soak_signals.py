"""Soak: SIGINT, SIGTERM, SIGHUP and a double SIGINT at random moments of real runs, ROUNDS each.

After every round, with no cleanup command run, checks that no instance of the session exists on the
backend, that no instance row is open, and that the session's end names the signal. Prints one line
per round and, per schedule, rounds, failures and time; exits 1 if any round left something behind.

``--schedule random`` draws each round's first signal (INT, TERM or HUP), whether a second follows
and which (INT, TERM or HUP), and both moments from the seed, so a run with ``--seed $RANDOM`` is a
schedule no test knows; the seed is printed to replay it.

    python tests/perf/soak_signals.py [--backend process|docker] [--rounds 20] [--seed N]
                                      [--schedule INT --schedule INT+INT ... | --schedule random]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
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
KINDS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
SUITE = {"process": "boot-scaling", "docker": "docker-boot-scaling"}


def session_row(db: Path) -> tuple[str, str, str] | None:
    try:
        frame = fetch_frame(db, "select session_id, status, coalesce(message, '') as m from sessions") if db.exists() else None
    except StoreError:
        return None
    return tuple(frame.row(0)) if frame is not None and frame.height else None  # type: ignore[return-value]


def draw(schedule: str, rng: random.Random) -> tuple[signal.Signals, signal.Signals | None]:
    """The round's signals: the schedule's, or for ``random`` a first and maybe a second drawn from the seed."""
    if schedule != "random":
        return SCHEDULES[schedule]
    return rng.choice(KINDS), rng.choice((None, *KINDS))


def one_round(backend: str, schedule: str, db: Path, rng: random.Random) -> str:
    first, second = draw(schedule, rng)
    argv = [sys.executable, "-m", "labtui", "run", SUITE[backend], "--db", str(db), "--set", "scale.steps=6",
            "--set", "scale.per_step=20", "--set", "suite.repetitions=1", "--set", "sampling.quiet_timeout_s=0"]
    # SIGHUP as in a terminal (its default), even when this soak runs under nohup: labtui keeps an ignored one
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
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
        problems.append(f"status {status} ({message})")
    left = asyncio.run(open_backend(backend, LocalHost()).list(session))
    if left:
        problems.append(f"{len(left)} instance(s) left: " + ", ".join(f"{i.name} {i.state}" for i in left))
    rows = fetch_frame(db, "select instance_id, state from instances where session_id = ? and destroyed_at is null "
                           "and state <> 'exited'", [session])
    if rows.height:
        problems.append(f"{rows.height} open row(s): " + ", ".join(f"{i} {s}" for i, s in rows.iter_rows()))
    if problems and err.strip():
        problems.append("stderr: " + " | ".join(err.strip().splitlines()[-3:]))
    sent = first.name.removeprefix("SIG") + (f"+{second.name.removeprefix('SIG')}" if second else "")
    return "; ".join(problems) or f"ok ({sent}: {status}, exit {proc.returncode})" + ("" if not err else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="process", choices=sorted(SUITE))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--schedule", action="append", choices=[*SCHEDULES, "random"],
                        help="repeatable; default: INT, TERM, HUP and INT+INT")
    parser.add_argument("--keep", type=Path, default=None, help="copy the store of every failed round here")
    args = parser.parse_args()
    schedules = args.schedule or list(SCHEDULES)
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    rng = random.Random(seed)
    print(f"soak: {args.backend}, {args.rounds} rounds per schedule, seed {seed}", flush=True)
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ.setdefault("LABTUI_RUNTIME_DIR", str(Path(tmp) / "runtime"))
        for schedule in schedules:
            start, failed = time.monotonic(), 0
            for i in range(args.rounds):
                verdict = one_round(args.backend, schedule, Path(tmp) / f"{schedule}-{i}.duckdb", rng)
                failed += not verdict.startswith("ok")
                if args.keep and not verdict.startswith("ok"):
                    args.keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(Path(tmp) / f"{schedule}-{i}.duckdb", args.keep)
                print(f"{schedule:8} round {i + 1:2}: {verdict}", flush=True)
            summary.append((schedule, failed, time.monotonic() - start))
    for schedule, failed, took in summary:
        print(f"{schedule:8} {args.rounds} rounds, {failed} failed, {took:.0f} s")
    bad = sum(failed for _, failed, _ in summary)
    print(f"{bad} round(s) of {args.rounds * len(schedules)} left something behind (seed {seed})")
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
