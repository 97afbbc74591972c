"""Benchmark the time left: the estimate against the time that was actually left, at 10, 50 and 90 % of a run.

    python tests/perf/bench_time_left.py [--quick] [--runs N] [--suite NAME] [--set KEY=VALUE ...] [--db PATH]
        [--screen] [--floor] [--verbose] [--replay STORE ...]

Runs a suite (default the README's `labtui run boot-scaling`, about a minute on an idle 2-core machine;
`--quick`: 10 steps of 10, 3 repetitions) `--runs` times (default 2) one after another in one store, on the
process backend.  Each run is driven as `labtui run` drives it: a LabRun, and the clock its progress line shows
(`LabRun.step_clock`, fed every event of the session).  The estimate is read where the CLI reads it, at its
redraws (every 0.25 s once no measured operation is in flight; every second while the run waits for an idle
host), and only there: reading it at every event, as this benchmark did, walked the run's step times some 30,000
times, in the run's own process, and doubled the run it measured (116 s against `labtui run`'s 58 s).  The first
run has no past session in a fresh store; each later one leans on the one before (the same suite and sizes,
completed) until it has measured a repetition of its own.

For each run it prints, at 10, 50 and 90 % of the session's duration (SessionStarted to SessionEnded), the error
of the last estimate read by then against the time that was actually left when it was read (to SessionEnded),
`ok` within 20 % and `MISSED` beyond, or when the clock had no estimate yet (no past session and fewer than two
steps ended); and the waits for a busy host the run made (each up to `sampling.quiet_timeout_s`, from the
quiet-wait line to the step).  `--verbose` adds the clock's state at each reading.  `--screen` runs `labtui run`
itself in a tmux window instead, and reads the time left off its progress line as a person would (every
SCREEN_POLL_S), against the session's start and end in the store.  Without `--quick` it takes
two full boot-scaling runs: two minutes on an idle 2-core machine, more on a loaded one.

`--floor` adds the reference: before each run, the same protocol as a bare loop of labtui's own agent with no
labtui alive (bench_floor.py's floor script, marking each level's start and end and each teardown), its marks
replayed through the same clock and read every REDRAW_S, each loop after the first with the one before as its
past session, as each labtui run after the first has; FLOOR_SETTLE_S apart from the runs.  What the clock
misses there is the host's own drift from one repetition to the next, which no estimate made at 10 % of a run
can know; what it misses only in the labtui runs is labtui's.

`--replay STORE ...` runs nothing: it replays every completed session of the suite (process backend) in each
store, oldest first, through the clock as its events came (each with the session before it in the same store as
its past session, as the run had when the store was fed in that order), reads it every REDRAW_S, and prints the
same checkpoints and their root mean square: how a change to the clock does on runs already measured.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_floor
from common import report

from labtui.core.events import Event, InstanceDestroyed, Log, SessionEnded, SessionStarted, StepEnded, StepStarted
from labtui.engine.kinds import Plan, plan_for
from labtui.session import LabRun, RunRequest
from labtui.session.estimate import (
    MIN_STEPS,
    QUIET_WAIT,
    History,
    Line,
    PartedLine,
    Shape,
    StepClock,
    clock,
    session_events,
    session_rows,
)
from labtui.suites import load_suite

#: The issue's goal: the estimate within this share of what is actually left.
GOAL = 0.20
CHECKPOINTS = (0.10, 0.50, 0.90)
QUICK = ("scale.steps=10", "suite.repetitions=3")
#: As labtui.commands.run: a redraw every REDRAW_S once no measured operation is in flight; every WAIT_REDRAW_S
#: during a wait for an idle host.
REDRAW_S, WAIT_REDRAW_S = 0.25, 1.0


#: --screen: how often the tmux screen is read, and the progress line's time left on it.
SCREEN_POLL_S = 0.2
SCREEN_LEFT = re.compile(r"~(?:(\d+):)?(\d+):(\d\d) left")

#: --verbose: each checkpoint's reading also shows the clock's state (its line, gaps and place).
VERBOSE = False
#: --floor: seconds between a bare loop and the labtui run after or before it (without, the run's first
#: repetition waited for a busy host and its steps were slower: +15 to +20 % at 10 %).
FLOOR_SETTLE_S = 10.0


def state(clock_: StepClock) -> str:
    durations, gaps = clock_.durations(), clock_.gaps()
    fitted = "none" if durations is None else f"{describe(durations.shape)}, x {durations.speed:.2f}"
    return (f"at rep {clock_._repetition} position {clock_._position}; steps {fitted}; gaps inner {gaps.inner:.2f}, "
            f"teardown {gaps.teardown:.2f}, check {gaps.check:.2f}, wait {gaps.wait:.2f} s; busy wait "
            f"{clock_.busy_wait():.2f} s{'; waiting' if clock_.waiting() is not None else ''}")


def describe(shape: Shape) -> str:
    if isinstance(shape, PartedLine):
        bends = ", ".join(f"{1000 * b:+.0f}" for b in shape.offsets)
        return f"{describe(shape.line)} bent by {bends} ms a part"
    return f"{shape.intercept:.3f} s + {shape.slope:.4f} s a position" if isinstance(shape, Line) else str(shape)


async def one_run(suite_name: str, overrides: tuple[str, ...], db: Path) -> tuple[list[tuple[float, float | None, str]],
                                                                                  float, float, list[str], str]:
    """Run the suite once; (time, estimated seconds left) at every redraw, the session's start and end,
    the waits' notes and the session id."""
    suite = load_suite(suite_name, overrides, None)
    lab = LabRun(RunRequest(suite, db, ("local",), None))
    lab.prepare()
    session_id = lab.sessions[0].session_id
    clock_ = lab.step_clock(session_id)
    readings: list[tuple[float, float | None, str]] = []
    span = {"start": 0.0, "end": 0.0}
    waits: list[str] = []
    events = lab.events()

    def read(at: float) -> None:
        readings.append((at, clock_.left(at), state(clock_) if VERBOSE else ""))

    async def follow() -> None:
        started_step: float | None = None
        while (event := await events.get()) is not None:
            clock_.apply(event)
            if isinstance(event, SessionStarted):
                span["start"] = event.ts
            elif isinstance(event, SessionEnded):
                span["end"] = event.ts
            elif isinstance(event, Log) and event.category == QUIET_WAIT:
                started_step = event.ts
            elif isinstance(event, StepStarted) and started_step is not None:
                waits.append(f"rep {event.repetition}: {event.ts - started_step:.1f} s")
                started_step = None

    async def redraws() -> None:
        drawn = 0.0
        while True:
            await asyncio.sleep(REDRAW_S)
            await lab.quiet.until_untimed()
            if lab.quiet.timing or (lab.quiet.is_open and time.monotonic() - drawn < WAIT_REDRAW_S):
                continue
            if span["start"]:
                read(time.time())
            drawn = time.monotonic()

    watcher = asyncio.create_task(follow())
    drawer = asyncio.create_task(redraws())
    try:
        outcome = (await lab.run())[0]
        await watcher
    finally:
        drawer.cancel()
    if outcome.status != "completed":
        raise SystemExit(f"session {session_id} {outcome.status}: {outcome.message}")
    past = lab.pasts.get(session_id)
    return readings, span["start"], span["end"], waits, session_id + (f" (past: {past.session_id})" if past else "")


def screen_run(suite_name: str, overrides: tuple[str, ...], db: Path, tmp: Path) -> tuple[
        list[tuple[float, float | None, str]], float, float, list[str], str]:
    """`labtui run` in a tmux window of its own; the time left its progress line showed at each read of the
    screen, and the session's start and end from the store."""
    import duckdb

    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("--screen needs tmux (apt-get install tmux)")
    socket = f"labtui-time-left-{os.getpid()}"
    argv = [sys.executable, "-m", "labtui", "run", suite_name, "--db", str(db),
            *(arg for o in overrides for arg in ("--set", o))]
    env = f"LABTUI_RUNTIME_DIR={shlex.quote(str(tmp / 'runtime'))} LABTUI_STATE_DIR={shlex.quote(str(tmp / 'state'))}"
    done = tmp / "exit-status"
    done.unlink(missing_ok=True)
    subprocess.run([tmux, "-L", socket, "new-session", "-d", "-x", "120", "-y", "30",
                    f"{env} {shlex.join(argv)}; echo $? > {shlex.quote(str(done))}; sleep 60"], check=True)
    readings: list[tuple[float, float | None, str]] = []
    try:
        while not done.exists():
            screen = subprocess.run([tmux, "-L", socket, "capture-pane", "-p"], capture_output=True, text=True).stdout
            at = time.time()
            if found := SCREEN_LEFT.search(screen):
                hours, minutes, seconds = (int(g or 0) for g in found.groups())
                readings.append((at, 3600.0 * hours + 60 * minutes + seconds, found[0] if VERBOSE else ""))
            time.sleep(SCREEN_POLL_S)
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True)
    if done.read_text().strip() != "0":
        raise SystemExit(f"labtui run exited with {done.read_text().strip()}")
    con = duckdb.connect(str(db), read_only=True)
    try:
        session, start, end = con.execute("SELECT session_id, epoch(started_at), epoch(ended_at) FROM sessions "
                                          "ORDER BY started_at DESC LIMIT 1").fetchone()  # type: ignore[misc]
    finally:
        con.close()
    return readings, start, end, [f"{len(readings)} screens showed a time left"], session


async def floor_run(suite_name: str, overrides: tuple[str, ...], tmp: Path, past: History | None) -> tuple[
        list[tuple[float, float | None, str]], float, float, History]:
    """The suite's protocol as bench_floor.py's bare loop of labtui-agent calls (bash, for its $EPOCHREALTIME:
    a mark forks nothing); its marks replayed through a StepClock of the suite's plan, read every REDRAW_S, with
    the previous bare loop as its past session (as a labtui run leans on the one before).  The readings, the
    loop's start and end, and the loop as a past session for the next."""
    suite = load_suite(suite_name, overrides, None)
    if suite.kind != "scaling" or suite.scale.start != 0:
        raise SystemExit("--floor runs a scaling suite that starts from 0 background instances")
    protocol = bench_floor.Protocol(suite.scale.steps, suite.scale.per_step, suite.repetitions, suite.worker.warmup,
                                    suite.worker.runs)
    programs = await bench_floor.programs()
    session, log, marks = f"floor-left-{os.getpid()}", tmp / "floor-logs", tmp / "floor-marks"
    marks.unlink(missing_ok=True)
    script = tmp / "floor.sh"
    script.write_text(bench_floor.floor_script(protocol, programs, session, log, tmp / "floor.bg",
                                               mark=f'echo "$* $EPOCHREALTIME" >> {shlex.quote(str(marks))}'))
    try:
        done = subprocess.run(["bash", str(script)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, start_new_session=True, timeout=1800,
                              env={**os.environ, "LC_ALL": "C"})  # $EPOCHREALTIME's decimal point is the locale's
    finally:
        bench_floor.sweep(programs[0], session, str(log))
    if done.returncode != 0:
        raise SystemExit(f"the floor script exited {done.returncode}: {done.stderr.strip()[-800:]}")
    events = floor_events(session, protocol, marks.read_text().splitlines())
    plan = dataclasses.replace(plan_for(suite), quiet_timeout_s=0.0)  # the loop checks for no idle host
    whole = StepClock(plan, events[0].ts)
    for event in events:
        whole.apply(event)
    return replayed(events, plan, past), events[0].ts, events[-1].ts, History(session, whole)


def replayed(events: list[Event], plan: Plan, past: History | None) -> list[tuple[float, float | None, str]]:
    """The clock's reading every REDRAW_S of a session whose `events` are known, from its start to its end."""
    clock_ = StepClock(plan, events[0].ts, past)
    readings: list[tuple[float, float | None, str]] = []
    pending = iter(events)
    upcoming = next(pending, None)
    at, end = events[0].ts, events[-1].ts
    while at < end:
        while upcoming is not None and upcoming.ts <= at and not isinstance(upcoming, SessionEnded):
            clock_.apply(upcoming)
            upcoming = next(pending, None)
        readings.append((at, clock_.left(at), state(clock_) if VERBOSE else ""))
        at += REDRAW_S
    return readings


def replay(suite_name: str, overrides: tuple[str, ...], stores: list[Path]) -> list[bool]:
    """`--replay`: every completed session of the suite in `stores` through the clock; the checkpoints' verdicts."""
    from labtui.store import connect_readonly

    plan = plan_for(load_suite(suite_name, overrides, None))
    verdicts, errors = [], []
    for store in stores:
        con = connect_readonly(store)
        try:
            found = con.execute("SELECT session_id, epoch(started_at), epoch(ended_at) FROM sessions WHERE suite = ? "
                                "AND backend = 'process' AND status = 'completed' ORDER BY started_at",
                                [suite_name]).fetchall()
            sessions = [session_rows(con, *row) for row in found]
        finally:
            con.close()
        past: History | None = None
        for n, rows in enumerate(sessions, 1):
            if len(rows.steps) != plan.repetitions * plan.steps_per_repetition:
                continue  # another size of the suite
            events = session_events(rows)
            print(f"{store} session {rows.session_id}{' (past: ' + past.session_id + ')' if past else ''}")
            found_verdicts = checkpoints(n, replayed(events, plan, past), events[0].ts, events[-1].ts, "replay",
                                         errors)
            verdicts += found_verdicts
            past = History.from_rows(rows, plan)
    for share, column in zip(CHECKPOINTS, zip(*errors)):
        print(f"rms at {share:.0%}: {100 * statistics.fmean(e * e for e in column) ** 0.5:.1f} %, mean "
              f"{100 * statistics.fmean(column):+.1f} % over {len(column)} sessions")
    return verdicts


def floor_events(session: str, protocol: bench_floor.Protocol, marks: list[str]) -> list[Event]:
    """The floor script's marks (`begin T`, `start REP LEVEL T`, `end REP LEVEL T`, `torn REP T`) as the events
    of a session: its start, each step's start and end, each teardown's end (as its last instance destroyed),
    and the session's end at the last teardown."""
    events: list[Event] = []
    steps = len(protocol.levels)
    for line in marks:
        what, *numbers, stamp = line.split()
        ts = float(stamp)
        if what == "begin":
            events.append(SessionStarted(session, "floor", "scaling", "process", "local", {}, 0, ts=ts))
        elif what in ("start", "end"):
            repetition, level = int(numbers[0]), int(numbers[1])
            background = protocol.levels[level]
            events.append(StepStarted(session, repetition, level, steps, background, 0.0, ts=ts) if what == "start"
                          else StepEnded(session, repetition, level, background, ts=ts))
        elif what == "torn":
            events.append(InstanceDestroyed(session, "", ts=ts))
    events.append(SessionEnded(session, "completed", ts=events[-1].ts))
    return events


def checkpoints(n: int, readings: list[tuple[float, float | None, str]], start: float, end: float,
                face: str = "run", errors: list[tuple[float, ...]] | None = None) -> list[bool]:
    """Print the estimate at each checkpoint against the truth; whether each is within GOAL.  `errors` gets the
    checkpoints' relative errors (when every checkpoint had an estimate)."""
    duration = end - start
    verdicts, found = [], []
    for share in CHECKPOINTS:
        # the last reading by then, against what was left when it was read (a reading is shown until the next)
        at, estimate, seen = max((r for r in readings if r[0] <= start + share * duration), default=(start, None, ""),
                                 key=lambda r: r[0])
        truth = end - at
        name = f"{face} {n}, time left at {share:.0%} ({clock(at - start)} in)"
        if estimate is None:
            print(f"{name}: no estimate yet, {truth:.1f} s left (no past session, under {MIN_STEPS} steps ended)"
                  "  MISSED", flush=True)
            verdicts.append(False)
            continue
        error = (estimate - truth) / truth
        verdicts.append(abs(error) <= GOAL)
        found.append(error)
        report(name, 100 * error, "% off", f"the {truth:.1f} s actually left; ~{estimate:.1f} s said",
               ok=abs(error) <= GOAL)
        if seen:
            print(f"    {seen}")
    if errors is not None and len(found) == len(CHECKPOINTS):
        errors.append(tuple(found))
    return verdicts


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 steps, 3 repetitions")
    parser.add_argument("--runs", type=int, default=2, help="runs one after another in one store (default 2)")
    parser.add_argument("--suite", default="boot-scaling")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--db", type=Path, help="the store (default: a fresh one in a temporary directory)")
    parser.add_argument("--verbose", action="store_true", help="show the clock's state at each checkpoint")
    parser.add_argument("--screen", action="store_true",
                        help="run `labtui run` in tmux and read the time left off its progress line")
    parser.add_argument("--floor", action="store_true",
                        help="before each run, the same clock over a bare loop of labtui's agent (the reference)")
    parser.add_argument("--replay", nargs="+", type=Path, metavar="STORE",
                        help="run nothing: replay the suite's completed sessions in these stores through the clock")
    args = parser.parse_args()
    global VERBOSE
    VERBOSE = args.verbose
    overrides = (*(QUICK if args.quick else ()), *args.overrides)
    if args.replay:
        verdicts = replay(args.suite, overrides, args.replay)
        print(f"{sum(verdicts)} of {len(verdicts)} readings within {GOAL:.0%} of the time actually left")
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-time-left-") as tmp:
        db = args.db or Path(tmp) / "lab.duckdb"
        print(f"labtui run {args.suite} " + " ".join(f"--set {o}" for o in overrides) + f"  ({args.runs} runs, {db})")
        verdicts, floor_verdicts = [], []
        floor_past: History | None = None
        for n in range(1, args.runs + 1):
            if args.floor:
                if n > 1:
                    await asyncio.sleep(FLOOR_SETTLE_S)  # the kernel still frees the last run's background
                readings, start, end, floor_past = await floor_run(args.suite, overrides, Path(tmp), floor_past)
                print(f"floor {n}: {clock(end - start)} ({end - start:.1f} s), no labtui alive")
                floor_verdicts += checkpoints(n, readings, start, end, "floor")
                await asyncio.sleep(FLOOR_SETTLE_S)  # the kernel still frees the loop's last background
            if args.screen:
                readings, start, end, notes, session = screen_run(args.suite, overrides, db, Path(tmp))
                print(f"run {n}: session {session}, {clock(end - start)} ({end - start:.1f} s); {notes[0]}")
            else:
                readings, start, end, waits, session = await one_run(args.suite, overrides, db)
                print(f"run {n}: session {session}, {clock(end - start)} ({end - start:.1f} s); "
                      f"busy-host waits: {', '.join(waits) or 'none'}")
            verdicts += checkpoints(n, readings, start, end)
    print(f"{sum(verdicts)} of {len(verdicts)} readings within {GOAL:.0%} of the time actually left")
    if floor_verdicts:
        print(f"the reference, the same clock over the bare loop: {sum(floor_verdicts)} of {len(floor_verdicts)} "
              f"within {GOAL:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
