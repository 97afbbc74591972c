"""Crash soak: `labtui run` killed with SIGKILL at a random moment, then `labtui cleanup --orphans`.

For each backend (process, and docker when an engine answers at /var/run/docker.sock),
one calibration run measures how long the small suite takes uncrashed; then every
round starts `labtui run` with its own --db, kills it after a seeded random delay
between start-up and near the end, runs `labtui cleanup --orphans` (or `--session ID`
with --cleanup session), and checks:

- no instance of the killed session is left on the backend;
- the store opens, and the session reads 'crashed';
- every step that ended ok (in the store or in the killed run's journal) has its results, exactly
  as committed before the kill: nothing the journal held is lost, nothing lands twice;
- no instance row is left open (destroyed_at NULL, not exited): reconciliation closed them all.

Prints one line per round and a summary per backend; exits 1 when any check failed.

    python tests/perf/soak_kill.py --rounds 10 [--seed N] [--backend process|docker|all] [--cleanup orphans|session]

`--cleanup orphans` destroys every labtui instance on the host whose session holds no
running-lock in this soak's lock dir (LABTUI_LOCK_DIR, inside its runtime dir): other labtui work on the machine (a test
suite with its own runtime dirs) loses its instances.  On a shared machine use
`--cleanup session`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))  # this checkout's labtui, not an installed one
from labtui.core.events import Result, StepEnded  # noqa: E402
from labtui.store.journal import journal_paths, read_events  # noqa: E402

DOCKER_SOCKET = Path("/var/run/docker.sock")
SMALL = ["--set", "suite.repetitions=2", "--set", "sampling.quiet_timeout_s=0", "--set", "sampling.interval_s=0.2"]
RUNS = {
    "process": ("boot-scaling", ["--set", "scale.steps=30", "--set", "scale.per_step=10", *SMALL]),
    "docker": ("docker-boot-scaling", ["--set", "scale.steps=3", "--set", "scale.per_step=2", *SMALL]),
}
#: Kill no later than this share of the calibration run's duration.
LATEST = 0.95


@dataclass
class Round:
    number: int
    delay: float
    killed: bool = False
    session: str = ""
    #: Seconds from the start of `labtui run` to its session's running-lock (None: never seen).
    began: float | None = None
    leftovers: int = 0
    store_ok: bool = True
    status: str = ""
    steps_ok: int = 0
    results_intact: bool = True
    open_rows: int = 0
    cleanup_ok: bool = True
    cleanup_s: float = 0.0
    #: What cleanup reported: "destroyed N, failed N, store rows closed N".
    cleaned: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.problems


def labtui(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "labtui", *args], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, check=False)


def docker_answers() -> str:
    """'' when a Docker engine answers /_ping at DOCKER_SOCKET, else why not."""
    if not DOCKER_SOCKET.is_socket():
        return f"no Docker engine socket at {DOCKER_SOCKET}"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(DOCKER_SOCKET))
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            answer = sock.recv(256).decode(errors="replace")
    except OSError as exc:
        return f"no Docker engine answers at {DOCKER_SOCKET}: {exc}"
    return "" if answer.startswith("HTTP/1.") and " 200 " in answer.split("\r\n")[0] else (
        f"the Docker engine at {DOCKER_SOCKET} answered {answer.splitlines()[0] if answer else 'nothing'!r}")


def start_run(backend: str, db: Path, env: dict[str, str], log: Path) -> subprocess.Popen:
    suite, sets = RUNS[backend]
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "labtui", "run", suite, "--backend", backend, "--db", str(db),
                                 *sets], env=env, cwd=REPO, stdout=out, stderr=out)


def calibrate(backend: str, work: Path, env: dict[str, str]) -> float:
    """Seconds one uncrashed run takes (its images or probes are built by a first, unmeasured run)."""
    durations = []
    for attempt in ("warm-up", "calibration"):
        start = time.monotonic()
        proc = start_run(backend, work / f"{attempt}.duckdb", env, work / f"{attempt}.log")
        code = proc.wait(timeout=600)
        durations.append(time.monotonic() - start)
        if code != 0:
            raise SystemExit(f"{backend}: the {attempt} run failed (exit {code}):\n{(work / f'{attempt}.log').read_text()}")
    return durations[-1]


def new_lock(locks: Path, before: set[Path]) -> str:
    """The session id of the killed run: the running-lock it created (kill -9 leaves the file)."""
    fresh = [p for p in locks.glob("*.lock") if p not in before] if locks.is_dir() else []
    return fresh[0].stem if len(fresh) == 1 else ""


def journalled_results(db: Path, session: str) -> dict[tuple[int, int], tuple[int, float]]:
    """What the killed run's journal committed: (repetition, step) of every step that ended ok -> (results
    rows, sum of values).  The store must hold exactly this once cleanup has moved the journal in."""
    events = [event for path in journal_paths(db) if path.stem == session for _, event in read_events(path, 0, 10**9)]
    ended = {(e.repetition, e.step) for e in events if isinstance(e, StepEnded) and e.ok}
    found: dict[tuple[int, int], tuple[int, float]] = {key: (0, 0.0) for key in ended}
    for e in events:
        if isinstance(e, Result) and (e.repetition, e.step) in ended:
            n, total = found[(e.repetition, e.step)]
            found[(e.repetition, e.step)] = (n + 1, total + e.value)
    return found


def completed_results(db: Path, session: str) -> dict[tuple[int, int], tuple[int, float]]:
    """(repetition, step) of every step that ended ok -> (results rows, sum of values)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = con.execute(
            "SELECT s.repetition, s.step, count(r.value), coalesce(sum(r.value), 0) FROM steps s "
            "LEFT JOIN results r USING (session_id, repetition, step) WHERE s.session_id = ? AND s.ok "
            "GROUP BY ALL", [session]).fetchall()
    finally:
        con.close()
    return {(rep, step): (n, total) for rep, step, n, total in found}


def session_state(db: Path, session: str) -> tuple[str, int]:
    """(status of the session or '', instance rows left open)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        status = con.execute("SELECT status FROM sessions WHERE session_id = ?", [session]).fetchall()
        (open_rows,) = con.execute(
            "SELECT count(*) FROM instances WHERE session_id = ? AND destroyed_at IS NULL "
            "AND coalesce(state, '') <> 'exited'", [session]).fetchone()
    finally:
        con.close()
    return (status[0][0] if status else ""), open_rows


def left_on_backend(backend: str, session: str, env: dict[str, str]) -> int:
    out = labtui("instances", "--backend", backend, "--session", session, "--format", "json", env=env)
    if out.returncode != 0:
        raise RuntimeError(f"labtui instances failed: {out.stderr.strip()}")
    return len(json.loads(out.stdout))


def one_round(backend: str, number: int, delay: float, work: Path, env: dict[str, str], scope: str) -> Round:
    result = Round(number, delay)
    directory = work / f"round-{number:03d}"
    directory.mkdir()
    db, locks = directory / "lab.duckdb", Path(env["LABTUI_RUNTIME_DIR"]) / "running"
    before = set(locks.glob("*.lock")) if locks.is_dir() else set()
    start = time.monotonic()
    proc = start_run(backend, db, env, directory / "run.log")
    while proc.poll() is None and (elapsed := time.monotonic() - start) < delay:
        if result.began is None and new_lock(locks, before):
            result.began = elapsed
        time.sleep(0.01)
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        result.killed = True
    proc.wait()  # reaped: a zombie's pid would still look alive to crash marking
    result.session = new_lock(locks, before)
    if not result.killed:
        if proc.returncode != 0:
            result.problems.append(f"run failed (exit {proc.returncode}) before the kill")
        return result  # it ran to its end first: a round without a kill
    try:
        recorded = completed_results(db, result.session) if db.exists() else {}
        recorded |= journalled_results(db, result.session)  # not yet fed: moved in by the cleanup
    except duckdb.Error as exc:
        result.store_ok = False
        result.problems.append(f"store does not open after the kill: {exc}")
        recorded = {}
    if scope == "session" and not result.session:
        return result  # killed before its session began: nothing was created, nothing to select
    select = ["--orphans"] if scope == "orphans" else ["--session", result.session]
    start = time.monotonic()
    out = labtui("cleanup", *select, "--backend", backend, "--db", str(db), env=env)
    result.cleanup_s = time.monotonic() - start
    (directory / "cleanup.log").write_text(out.stdout + out.stderr)
    result.cleaned = next((line for line in out.stdout.splitlines() if line.startswith("destroyed ")),
                          "nothing to clean up").replace("store rows closed", "rows closed")
    if out.returncode != 0:
        result.cleanup_ok = False
        result.problems.append(f"cleanup exited {out.returncode}")
    if not result.session:
        return result  # killed before the session began: nothing was created or recorded
    result.leftovers = left_on_backend(backend, result.session, env)
    if result.leftovers:
        result.problems.append(f"{result.leftovers} instance(s) left")
    if not db.exists():
        result.problems.append("a session began but the store was never created")
        return result
    try:
        result.status, result.open_rows = session_state(db, result.session)
        after = completed_results(db, result.session)
    except duckdb.Error as exc:
        result.store_ok = False
        result.problems.append(f"store does not open after cleanup: {exc}")
        return result
    result.steps_ok = len(after)
    if result.status not in ("crashed", ""):
        result.problems.append(f"session reads {result.status!r}")
    if result.open_rows:
        result.problems.append(f"{result.open_rows} instance row(s) left open")
    empty = [key for key, (n, _) in after.items() if n == 0]
    if after != recorded or empty:
        result.results_intact = False
        result.problems.append(f"results changed or missing for steps {sorted(set(after) ^ set(recorded)) or empty}")
    return result


def soak(backend: str, rounds: int, rng: random.Random, work: Path, env: dict[str, str], scope: str) -> list[Round]:
    full = calibrate(backend, work, env)
    suite, sets = RUNS[backend]
    print(f"{backend}: {suite} {' '.join(sets)}: an uncrashed run takes {full:.2f} s; "
          f"kills drawn from 0 to {LATEST * full:.2f} s", flush=True)
    done = []
    for number in range(1, rounds + 1):
        r = one_round(backend, number, rng.uniform(0.0, LATEST * full), work, env, scope)
        done.append(r)
        verdict = "ok" if r.passed else "FAILED: " + "; ".join(r.problems)
        began = f"{r.began:5.2f} s" if r.began is not None else "  -    "
        if not r.killed:
            print(f"{backend} round {number:2d}: kill at {r.delay:6.3f} s  the run ended first  {verdict}", flush=True)
            continue
        status = r.status or ("no session yet" if not r.session else "not recorded")
        print(f"{backend} round {number:2d}: kill at {r.delay:6.3f} s  session began {began}  "
              f"steps ok {r.steps_ok:2d}  status {status:14s}  left {r.leftovers}  open rows {r.open_rows}  "
              f"cleanup {r.cleanup_s:4.2f} s ({r.cleaned})  {verdict}", flush=True)
    return done


def summary(backend: str, rounds: list[Round]) -> bool:
    killed = [r for r in rounds if r.killed]
    delays = [r.delay for r in killed]
    failed = [r for r in rounds if not r.passed]
    print(f"{backend} summary: rounds {len(rounds)}, killed {len(killed)} "
          f"({sum(1 for r in killed if r.session)} after their session began), "
          f"ran to the end first {len(rounds) - len(killed)}, "
          f"leftovers {sum(r.leftovers for r in rounds)}, store failures {sum(1 for r in rounds if not r.store_ok)}, "
          f"not crashed {sum(1 for r in killed if r.status not in ('crashed', ''))}, "
          f"results changed {sum(1 for r in rounds if not r.results_intact)}, "
          f"open rows {sum(r.open_rows for r in rounds)}, cleanup failures {sum(1 for r in rounds if not r.cleanup_ok)}, "
          f"kill time min {min(delays, default=0):.3f} s median {statistics.median(delays) if delays else 0:.3f} s, "
          f"cleanup median {statistics.median([r.cleanup_s for r in killed if r.session] or [0]):.2f} s"
          f"  {'ok' if not failed else 'FAILED'}", flush=True)
    return not failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10, help="kills per backend (default 10)")
    parser.add_argument("--seed", type=int, help="seed of the kill delays (default: random, printed)")
    parser.add_argument("--backend", choices=["process", "docker", "all"], default="all")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs and stores of every round)")
    parser.add_argument("--cleanup", choices=["orphans", "session"], default="orphans",
                        help="`labtui cleanup --orphans` (default), or `--session ID` of the killed run: use "
                        "session when other labtui work shares the machine, whose instances look orphaned to "
                        "this soak (running-locks live in each runtime dir's LABTUI_LOCK_DIR)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    print(f"seed {seed} (rerun with --seed {seed}); cleanup --{args.cleanup}", flush=True)
    backends = ["process", "docker"] if args.backend == "all" else [args.backend]
    ok = True
    with tempfile.TemporaryDirectory(prefix="labtui-soak-") as tmp:
        work = Path(tmp)
        if args.keep:
            work = Path(tempfile.mkdtemp(prefix="labtui-soak-kept-"))
            print(f"keeping everything in {work}")
        for backend in backends:
            if backend == "docker" and (why := docker_answers()):
                print(f"docker: skipped ({why})", flush=True)
                continue
            runtime = work / f"runtime-{backend}"
            env = {**os.environ, "LABTUI_RUNTIME_DIR": str(runtime), "LABTUI_LOCK_DIR": str(runtime / "running"),
                   "COLUMNS": "200"}
            (work / backend).mkdir()
            rng = random.Random(f"{seed}-{backend}")
            ok &= summary(backend, soak(backend, args.rounds, rng, work / backend, env, args.cleanup))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
