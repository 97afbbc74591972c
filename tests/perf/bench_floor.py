"""How far labtui's boot_time lies above the floor: the same boots from a plain loop of labtui-agent.

    PYTHONPATH=. python tests/perf/bench_floor.py [--quick] [--rounds N] [--steps N] [--per-step N]
        [--repetitions N] [--faces floor,run,console]

The protocol is boot-scaling's (`suites/boot-scaling.toml`, process backend), by default the
5-level one: `--steps 4 --per-step 10 --repetitions 5`.  Per repetition and level (background 0,
per_step, 2*per_step, ...): start the missing sleepers, 10 warm-up boots of the hello probe
(discarded), 5 measured boots; the sleepers are killed at the repetition's end.  It is run by
three faces, interleaved round by round (floor, run, console, floor, ...) so that a drift of the
machine's load falls on all alike:

- floor: a generated /bin/sh script runs the very agent invocations the process backend makes
  (`labtui-agent spawn --session S --role worker --wait exit --timeout 60 --log-dir D --instance
  woN -- hello`, one `spawn --wait ready` of per_step sleepers per level, `kill --grace 2`), with
  no labtui process alive; it prints the agent's records, read once it has ended;
- run: `labtui run boot-scaling --set scale.steps=.. --set scale.per_step=.. --set
  suite.repetitions=.. --set sampling.quiet_timeout_s=0 --db TMP` (no wait for a quiet host
  before a repetition: the floor has none);
- console: `python -m labtui --db TMP` in a tmux window of its own: `s` opens the start dialog,
  the suite file field gets a copy of boot-scaling.toml with a profile of the same values, the
  profile is chosen, ctrl+s starts the run, and the screen is read until `status completed`.

A repetition's figure at a level is the median of its 5 measured boots (labtui's own: the store's
`results`, metric boot_time).  Printed, per face and level: the median of those figures (over all
rounds' repetitions) and their CoV over a run's repetitions (median over the rounds); then per face:
the median over the levels of face median / floor median (goal <= 1.10) and the median CoV against
the floor's (goal <= 1.5x).  The load average is printed first and last; a floor whose own median
CoV is above 10% is said to be noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import duckdb  # noqa: E402
from common import report  # noqa: E402

FACES = ("floor", "run", "console")
#: Goals: a face's median boot time within 10% of the floor's, its median CoV within 1.5x the floor's.
GOAL_RATIO = 1.10
GOAL_COV_RATIO = 1.5
#: A floor whose own median CoV is above this is noisy: the machine, not labtui, sets the spread.
NOISY_FLOOR = 0.10
#: What the process backend passes the agent (labtui.engine.context.INSTANCE_TIMEOUT_S, ProcessBackend.stop_grace_s).
TIMEOUT_S = "60"
GRACE_S = "2"
TMUX = shutil.which("tmux")
#: The console's window size.
SIZE = (160, 48)
#: The profile the console's copy of the suite carries.
PROFILE = "floor-protocol"

#: Per level (background count), each repetition's median boot time, ms.
Levels = dict[int, list[float]]


@dataclass(frozen=True)
class Protocol:
    """The boot-scaling run all faces do."""

    steps: int
    per_step: int
    repetitions: int
    warmup: int = 10
    runs: int = 5

    @property
    def levels(self) -> list[int]:
        return [step * self.per_step for step in range(self.steps + 1)]

    def overrides(self) -> list[str]:
        """The suite keys a labtui face sets (`--set` for run, the profile for the console)."""
        return [f"scale.steps={self.steps}", f"scale.per_step={self.per_step}",
                f"suite.repetitions={self.repetitions}", "sampling.quiet_timeout_s=0"]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def cov(values: list[float]) -> float:
    """stdev / mean (0 for fewer than 2 values)."""
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0


def per_repetition(boots: dict[tuple[int, int], list[float]]) -> Levels:
    """(repetition, background) -> boots, ms, into background -> each repetition's median."""
    found: Levels = defaultdict(list)
    for (_, background), values in sorted(boots.items()):
        found[background].append(statistics.median(values))
    return dict(sorted(found.items()))


# --- the floor: labtui-agent from /bin/sh ----------------------------------------------------------

FLOOR_SCRIPT = r"""#!/bin/sh
# bench_floor.py's floor: boot-scaling with the process backend's agent calls, from a plain loop.
AGENT={agent}; HELLO={hello}; SLEEPER={sleeper}; S={session}; LOG={log}; BG={bg}
REPS={reps}; LEVELS={levels}; PER={per}; WARMUP={warmup}; RUNS={runs}
tab=$(printf '\t')
mark() {{ {mark}; }}  # bench_time_left.py's clock marks; a no-op here
handles=''
n=0
cleanup() {{
    if [ -n "$handles" ]; then
        "$AGENT" kill --grace {grace} --session "$S" --log-dir "$LOG" $handles >/dev/null
    fi
    handles=''
}}
fail() {{ echo "floor: $*" >&2; cleanup; exit 1; }}
trap 'cleanup; exit 130' INT TERM HUP
mark begin
rep=1
while [ $rep -le $REPS ]; do
    level=0
    while [ $level -lt $LEVELS ]; do
        mark start $rep $level
        if [ $level -gt 0 ]; then
            ids=''
            i=0
            while [ $i -lt $PER ]; do n=$((n + 1)); ids="$ids --instance ba$n"; i=$((i + 1)); done
            "$AGENT" spawn --session "$S" --role background --wait ready --log-dir "$LOG" $ids -- "$SLEEPER" >"$BG"
            status=$?
            while IFS="$tab" read -r kind id pid rest; do  # newest first: labtui destroys in reverse order
                [ "$kind" = instance ] && handles="$pid:$id $handles"
            done <"$BG"
            [ $status -eq 0 ] || fail "spawning sleepers exited $status: $(cat "$BG")"
        fi
        i=0
        while [ $i -lt $WARMUP ]; do
            n=$((n + 1))
            "$AGENT" spawn --session "$S" --role warmup --wait exit --timeout {timeout} --log-dir "$LOG" \
                --instance "wa$n" -- "$HELLO" >/dev/null || fail "warm-up boot wa$n failed"
            i=$((i + 1))
        done
        i=1
        while [ $i -le $RUNS ]; do
            n=$((n + 1))
            printf 'run\t%s\t%s\t' $rep $((level * PER))
            "$AGENT" spawn --session "$S" --role worker --wait exit --timeout {timeout} --log-dir "$LOG" \
                --instance "wo$n" -- "$HELLO" || fail "boot wo$n failed"
            i=$((i + 1))
        done
        mark end $rep $level
        level=$((level + 1))
    done
    cleanup
    mark torn $rep
    rep=$((rep + 1))
done
"""


async def programs() -> tuple[str, str, str]:
    """The agent, hello and sleeper the process backend runs (built and cached in the runtime dir)."""
    from labtui.backends.base import builtin_plugins_dir
    from labtui.hosts.local import LocalHost
    from labtui.programs.native import ensure_program, probe_source

    host = LocalHost()
    return (await ensure_program(host, builtin_plugins_dir() / "process" / "agent.c", "labtui-agent"),
            await ensure_program(host, probe_source("hello"), "hello"),
            await ensure_program(host, probe_source("sleeper"), "sleeper"))


def floor_script(protocol: Protocol, programs: tuple[str, str, str], session: str, log: Path, bg: Path,
                 mark: str = ":") -> str:
    """The floor's /bin/sh loop for `protocol`, with the agent, hello and sleeper of `programs`.  `mark`: the body
    of a shell function called at the loop's start (`begin`), at each level's start and end (`start REP LEVEL`,
    `end REP LEVEL`) and after each repetition's teardown (`torn REP`); a no-op by default."""
    agent, hello, sleeper = programs
    return FLOOR_SCRIPT.format(
        agent=shlex.quote(agent), hello=shlex.quote(hello), sleeper=shlex.quote(sleeper), session=session,
        log=shlex.quote(str(log)), bg=shlex.quote(str(bg)), reps=protocol.repetitions, levels=len(protocol.levels),
        per=protocol.per_step, warmup=protocol.warmup, runs=protocol.runs, grace=GRACE_S, timeout=TIMEOUT_S,
        mark=mark)


def floor_face(protocol: Protocol, tmp: Path, round_no: int, env: dict[str, str]) -> Levels:
    """Run the protocol as a /bin/sh loop of labtui-agent calls; parse its records once it has ended."""
    agent, hello, sleeper = asyncio.run(programs())
    session = f"floor-{os.getpid()}-r{round_no}"
    log = Path(env["LABTUI_RUNTIME_DIR"]) / "logs" / session
    script, out = tmp / f"floor-{round_no}.sh", tmp / f"floor-{round_no}.out"
    script.write_text(floor_script(protocol, (agent, hello, sleeper), session, log, tmp / f"floor-{round_no}.bg"))
    try:
        with out.open("w") as stdout:  # a file, not a pipe: nothing of ours reads while the loop measures
            # as LocalHost.run starts the agent: no stdin, a session of its own
            proc = subprocess.Popen(["/bin/sh", str(script)], stdin=subprocess.DEVNULL, stdout=stdout,
                                    stderr=subprocess.PIPE, env=env, cwd=tmp, text=True, start_new_session=True)
            try:
                _, err = proc.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                proc.terminate()  # its trap kills the sleepers it started
                proc.communicate(timeout=60)
                raise
        if proc.returncode != 0:
            raise RuntimeError(f"the floor script exited {proc.returncode}: {err.strip()[-800:]}")
    finally:
        sweep(agent, session, str(log))
    boots: dict[tuple[int, int], list[float]] = defaultdict(list)
    for line in out.read_text().splitlines():
        fields = line.split("\t")  # run REP BACKGROUND exit ID PID WALL_NS BOOT_NS CODE ISOLATION
        if fields[0] != "run" or len(fields) != 10 or fields[3] != "exit" or fields[8] != "0":
            raise RuntimeError(f"unexpected floor record {line!r}")
        boots[(int(fields[1]), int(fields[2]))].append(int(fields[7]) / 1e6)
    expected = protocol.repetitions * len(protocol.levels) * protocol.runs
    if sum(map(len, boots.values())) != expected:
        raise RuntimeError(f"the floor measured {sum(map(len, boots.values()))} boots, not {expected}")
    return per_repetition(boots)


def sweep(agent: str, session: str, log: str) -> None:
    """Kill whatever of the floor's session is still running (only its instances), and remove its logs."""
    listed = subprocess.run([agent, "ps", "--session", session], capture_output=True, text=True, timeout=30)
    handles = [f"{f[1]}:{f[4]}" for f in (line.split("\t") for line in listed.stdout.splitlines()) if f[0] == "proc"]
    if handles:
        print(f"floor: {len(handles)} instance(s) of {session} left running; killing them", file=sys.stderr)
        subprocess.run([agent, "kill", "--force", "--session", session, "--log-dir", log, *handles],
                       capture_output=True, timeout=60)
    shutil.rmtree(log, ignore_errors=True)


# --- labtui's faces ------------------------------------------------------------------------------


def store_levels(db: Path) -> Levels:
    """Each repetition's median boot time (ms) per background count, from a store holding one session."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("select repetition, background, value from results where metric = 'boot_time'").fetchall()
    finally:
        con.close()
    boots: dict[tuple[int, int], list[float]] = defaultdict(list)
    for repetition, background, value in rows:
        boots[(repetition, background)].append(value * 1000)
    return per_repetition(boots)


def run_face(protocol: Protocol, tmp: Path, round_no: int, env: dict[str, str]) -> Levels:
    """`labtui run boot-scaling --set ...` headless, into a store of its own."""
    db = tmp / f"run-{round_no}.duckdb"
    sets = [arg for key in protocol.overrides() for arg in ("--set", key)]
    argv = [sys.executable, "-m", "labtui", "run", "boot-scaling", *sets, "--db", str(db)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"labtui run exited {done.returncode}: {(done.stderr or done.stdout)[-800:]}")
    return store_levels(db)


class Tmux:
    """A tmux server of our own (-L socket) with one window of SIZE, read with capture-pane."""

    def __init__(self) -> None:
        if TMUX is None:
            raise SystemExit("the console face needs tmux (apt-get install tmux); or leave it out: --faces floor,run")
        self.socket = f"labtui-bench-floor-{os.getpid()}"
        self.socket_path = ""

    def tmux(self, *args: str) -> str:
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=10)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def start(self, argv: list[str], env: dict[str, str]) -> None:
        envs = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        self.tmux("new-session", "-d", "-s", "lab", "-x", str(SIZE[0]), "-y", str(SIZE[1]), "-c", str(REPO),
                  *envs, "env", "-u", "COLUMNS", "-u", "LINES", *argv)
        self.socket_path = self.tmux("display-message", "-p", "#{socket_path}").strip()

    def keys(self, *keys: str, literal: bool = False) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", "lab", *(["-l"] if literal else []), key)
            time.sleep(0.25)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "lab")

    def wait(self, pattern: str, what: str, timeout: float, poll: float = 0.2) -> str:
        """The screen once the regex pattern is on it; RuntimeError (with the screen) on timeout or a failed run."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if re.search(pattern, screen):
                return screen
            if re.search(r"status\s+(failed|aborted)", screen) or time.monotonic() > deadline:
                raise RuntimeError(f"the console: no {what}; the screen:\n{screen}")
            time.sleep(poll)

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, timeout=10)
        if self.socket_path:  # the server leaves its socket file behind
            Path(self.socket_path).unlink(missing_ok=True)


def console_suite(protocol: Protocol, tmp: Path) -> tuple[Path, int]:
    """boot-scaling.toml with a profile of the protocol's values; the profile's place in the dialog's list."""
    from labtui.suites import suite_profiles

    path = tmp / "boot-scaling.toml"
    entries = "".join(f'"{key}" = {value}\n' for key, value in (o.split("=") for o in protocol.overrides()))
    path.write_text((REPO / "suites" / "boot-scaling.toml").read_text() + f"\n[profiles.{PROFILE}]\n{entries}")
    return path, suite_profiles(str(path)).index(PROFILE)


def console_face(protocol: Protocol, tmp: Path, round_no: int, env: dict[str, str]) -> Levels:
    """The console in tmux: s, the suite file, its profile, ctrl+s; wait for `status completed`; q."""
    db, status = tmp / f"console-{round_no}.duckdb", tmp / f"console-{round_no}.status"
    suite, index = console_suite(protocol, tmp)
    term = Tmux()
    try:
        term.start(["sh", "-c", '"$0" -m labtui --db "$1"; echo $? > "$2"', sys.executable, str(db), str(status)],
                   {**env, "TERM": "xterm-256color"})
        term.wait(r"no run yet[\s\S]*CPU|CPU[\s\S]*no run yet", "first frame", 60)
        term.keys("s")
        term.wait(r"Start a run[\s\S]*process  ✔", "start dialog with process usable", 60)
        term.keys("Tab")  # from the suite list to the suite file, which wins over the list
        term.keys(str(suite), literal=True)
        term.keys("Tab")  # to the profile list, filled from the file in a worker: open it until it lists ours
        for _ in range(20):
            term.keys("Enter")
            if PROFILE in term.screen():
                break
            term.keys("Enter")  # closes the list on its highlighted "none", as it was
        term.keys(*["Down"] * (index + 1), "Enter")  # past "none: the suite as written"
        plan = rf"profile\s+▊\s+{PROFILE}[\s\S]*scaling, {protocol.repetitions} repetition\(s\) of {protocol.steps + 1} step"
        term.wait(plan, f"profile {PROFILE} and its plan", 30)
        term.keys("C-s")
        term.wait(r"status\s+completed", "completed run", 1800, poll=1.0)
        term.keys("q")  # no run is active: q quits without asking
        deadline = time.monotonic() + 60
        while not (status.exists() and status.read_text().strip()):
            if time.monotonic() > deadline:
                raise RuntimeError("the console did not exit after q")
            time.sleep(0.2)
        if status.read_text().strip() != "0":
            raise RuntimeError(f"the console exited {status.read_text().strip()}")
    finally:
        term.kill()
    return store_levels(db)


# --- the report ----------------------------------------------------------------------------------


def summary(rounds: list[Levels]) -> dict[int, tuple[float, float, int]]:
    """Per level: median over every round's repetitions, the median over rounds of the CoV over a run's
    repetitions, and the number of repetitions."""
    out = {}
    for level in rounds[0]:
        pooled = [v for levels in rounds for v in levels[level]]
        out[level] = (statistics.median(pooled), statistics.median(cov(levels[level]) for levels in rounds), len(pooled))
    return out


def print_report(found: dict[str, list[Levels]]) -> None:
    """Per face and level, then each face against the floor."""
    tables = {face: summary(rounds) for face, rounds in found.items()}
    print("face     background  reps  median ms    CoV")
    for face, table in tables.items():
        for level, (median, spread, n) in table.items():
            print(f"{face:<8} {level:10d} {n:5d} {median:10.3f} {spread:6.1%}")
    floor = tables.get("floor")
    if floor is None:
        print("no floor face: no ratios")
        return
    floor_cov = statistics.median(c for _, c, _ in floor.values())
    report("floor median CoV over levels", 100 * floor_cov, "%", "the noise of the machine itself")
    if floor_cov > NOISY_FLOOR:
        print(f"the floor itself is noisy: its median CoV is {floor_cov:.1%} (above {NOISY_FLOOR:.0%}); "
              "the machine sets the spread, and the ratios below are loose", flush=True)
    for face, table in tables.items():
        if face == "floor":
            continue
        ratio = statistics.median(table[level][0] / floor[level][0] for level in table)
        face_cov = statistics.median(c for _, c, _ in table.values())
        cov_ratio = face_cov / floor_cov if floor_cov else float("inf")
        report(f"{face}: median over levels of its boot median / the floor's", ratio, "x",
               f"the floor; goal <= {GOAL_RATIO:.2f}", ok=ratio <= GOAL_RATIO)
        report(f"{face}: median CoV over levels", 100 * face_cov, "%",
               f"the floor's {floor_cov:.1%}; goal <= {GOAL_COV_RATIO:g}x", ratio=cov_ratio,
               ok=cov_ratio <= GOAL_COV_RATIO)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds of every face (default 3)")
    parser.add_argument("--steps", type=int, default=None, help="loaded levels after the baseline (default 4)")
    parser.add_argument("--per-step", type=int, default=10, help="sleepers added per level (default 10)")
    parser.add_argument("--repetitions", type=int, default=None, help="repetitions per run (default 5)")
    parser.add_argument("--quick", action="store_true", help="steps 2, repetitions 2, rounds 1")
    parser.add_argument("--faces", default=",".join(FACES), help="comma-separated, of floor,run,console (default all)")
    args = parser.parse_args()
    quick = args.quick
    protocol = Protocol(args.steps if args.steps is not None else 2 if quick else 4, args.per_step,
                        args.repetitions if args.repetitions is not None else 2 if quick else 5)
    rounds = args.rounds if args.rounds is not None else 1 if quick else 3
    faces = [f.strip() for f in args.faces.split(",") if f.strip()]
    if unknown := set(faces) - set(FACES):
        parser.error(f"unknown face(s) {', '.join(sorted(unknown))}; the faces are {', '.join(FACES)}")
    if "console" in faces and TMUX is None:
        parser.error("the console face needs tmux (apt-get install tmux); or leave it out: --faces floor,run")
    run = {"floor": floor_face, "run": run_face, "console": console_face}
    print(f"load average at start: {load()} ({os.cpu_count()} CPUs)", flush=True)
    print(f"protocol: boot-scaling, levels {protocol.levels}, {protocol.repetitions} repetition(s), "
          f"{protocol.warmup} warm-up + {protocol.runs} measured boots a level; {rounds} round(s) of {', '.join(faces)}",
          flush=True)
    found: dict[str, list[Levels]] = {face: [] for face in faces}
    with tempfile.TemporaryDirectory(prefix="labtui-bench-floor-") as name:
        tmp = Path(name)
        env = {**os.environ, "PYTHONPATH": str(REPO), "LABTUI_RUNTIME_DIR": str(tmp / "runtime"),
               "LABTUI_STATE_DIR": str(tmp / "state"), "COLUMNS": "200"}
        os.environ.update({key: env[key] for key in ("LABTUI_RUNTIME_DIR", "LABTUI_STATE_DIR")})
        asyncio.run(programs())  # built once, before any face is timed
        for round_no in range(1, rounds + 1):
            for face in faces:
                started = time.monotonic()
                levels = run[face](protocol, tmp, round_no, env)
                found[face].append(levels)
                medians = " ".join(f"{statistics.median(v):.3f}" for v in levels.values())
                print(f"round {round_no} {face}: {time.monotonic() - started:.1f} s, median ms per level: {medians} "
                      f"(load {load()})", flush=True)
    print_report(found)
    print(f"load average at end: {load()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
