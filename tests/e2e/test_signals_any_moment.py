"""A stop signal at any moment of a run's life, from its first line on, ends it (issue 32, item 1).

A real `labtui run` (process backend, store in tmp_path, lock directory of its own) is signalled at
20 moments spread over its first 3 s (imports, reading and opening the store, the lock, the first
creates, step 0's warm-up boots), and at a few later ones, with each of SIGINT, SIGTERM, SIGHUP and
INT+INT.  Every other moment starts the runs as a script's `labtui run ... &` does, with SIGINT
ignored (POSIX shells ignore INT in the background jobs of a non-interactive shell).  A run's
moments count from when it begins to handle stop signals: from main's first line (it catches
SIGTERM), or, started with SIGINT ignored, from the first handler of SIGINT, whoever installs it
(before the fix, polars' import did, and swallowed the signal).  Before that, a signal meets the
interpreter's own start-up, or the kernel discards an ignored one, whatever the program.

Each run must exit (a run that is still there 60 s after the signal fails the test; the exit
delay is recorded as the property ``exit_delay_s_<schedule>``), end because of the signal, leave no
process of its own on the host, and leave no session ``running`` nor instance row open in its store.

A run whose backend stops answering (the simulated zones host's zoneadm halt hangs, over SSH) must
exit after SIGTERM too, naming the cleanup command, rather than wait out each destroy's timeout.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from interrupted_run import open_rows, open_store, session_row, terminal_signals
from simulators.fakehost import FakeHost, start_fake_host, write_lab
from sshd_fixture import sshd_available, write_key

#: The run of the report: big enough that no moment below sees its end.
RUN = ["boot-scaling", "--set", "scale.steps=30", "--set", "scale.per_step=10", "--set", "suite.repetitions=1"]
#: (first signal, second signal or None); the second follows 0.3 s later.  One run of each at every moment.
SCHEDULES = [(signal.SIGINT, None), (signal.SIGTERM, None), (signal.SIGHUP, None), (signal.SIGINT, signal.SIGINT)]
#: Seconds from main's first line: 20 over the first 3 s, and 4 later ones (a fixed seed, so
#: that every pytest-xdist worker collects the same tests).
_LATER = random.Random(32)
MOMENTS = [round(0.15 * i, 2) for i in range(20)] + sorted(round(_LATER.uniform(3.0, 8.0), 2) for _ in range(4))
#: A run still there this long after the signal never ends by itself.
NEVER_S = 60.0
#: The simulated illumos host whose zoneadm stops answering (an address no other test module uses).
HUNG_HOST, HUNG_ADDRESS = "sighung", "127.0.0.76"


def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:  # gone, or a zombie's
        return False


def _left_on_host(lock_dir: Path) -> list[str]:
    """Processes that inherited the run's environment (its agents, its instances), as "pid command"."""
    marker = f"LABTUI_LOCK_DIR={lock_dir}".encode()
    left = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and _environ_has(int(entry.name), marker):
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            left.append(f"{entry.name} {command}")
    return left


def _kill_left(lock_dir: Path) -> None:
    for line in _left_on_host(lock_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split()[0]), signal.SIGKILL)


def _still_left(lock_dir: Path) -> list[str]:
    """What is left after a short grace for processes that were killed and not yet reaped."""
    deadline = time.monotonic() + 2.0
    while (left := _left_on_host(lock_dir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def _sessions(db: Path) -> list[tuple[str, str]]:
    if not db.exists():
        return []
    with open_store(db) as con:
        tables = {row[0] for row in con.execute("select table_name from information_schema.tables").fetchall()}
        if "sessions" not in tables:
            return []
        return con.execute("select session_id, status from sessions").fetchall()


def _background_job() -> None:
    terminal_signals()
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _handling(pid: int, *, background_job: bool) -> bool:
    """Whether the process has begun to handle stop signals (SigCgt of /proc/PID/status): it catches
    SIGTERM (labtui run does from main's first line; the interpreter never does by itself), or, started
    with SIGINT ignored, SIGINT (whoever installed a handler for it: a library's counts too)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True  # gone: nothing more to wait for
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & 1 << (signal.SIGTERM - 1) or background_job and caught & 1 << (signal.SIGINT - 1))


@dataclass
class Run:
    """One `labtui run` of a test, with its schedule."""

    first: signal.Signals
    second: signal.Signals | None
    lock_dir: Path
    db: Path
    proc: subprocess.Popen[str]
    background_job: bool
    #: When its moments count from: when it began to handle stop signals (see _handling).
    zero: float | None = None
    signalled: float | None = None
    seconded: bool = False
    exited: float | None = None
    err: str = ""

    @property
    def name(self) -> str:
        return self.first.name + (f"+{self.second.name}" if self.second else "")


def _start(first: signal.Signals, second: signal.Signals | None, where: Path, runtime_dir: Path, *,
           background_job: bool) -> Run:
    where.mkdir()
    lock_dir, db = where / "locks", where / "lab.duckdb"
    env = {**os.environ, "LABTUI_LOCK_DIR": str(lock_dir), "LABTUI_RUNTIME_DIR": str(runtime_dir), "COLUMNS": "200"}
    proc = subprocess.Popen([sys.executable, "-m", "labtui", "run", *RUN, "--db", str(db)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_background_job if background_job else terminal_signals)
    return Run(first, second, lock_dir, db, proc, background_job)


def _signal_all(runs: list[Run], moment: float) -> None:
    """Send each run its first signal at the moment, and its second one 0.3 s later."""
    while not all(r.signalled is not None and (r.second is None or r.seconded) for r in runs):
        now = time.monotonic()
        for run in runs:
            if run.zero is None and _handling(run.proc.pid, background_job=run.background_job):
                run.zero = now
            if run.zero is not None and run.signalled is None and now >= run.zero + moment:
                run.proc.send_signal(run.first)
                run.signalled = now
            if run.signalled is not None and run.second is not None and not run.seconded and now >= run.signalled + 0.3:
                if run.proc.poll() is None:
                    run.proc.send_signal(run.second)
                run.seconded = True
        time.sleep(0.005)


def _wait(run: Run) -> None:
    """Wait for the run's exit (at most NEVER_S after its signal; then it is killed), and note when."""
    assert run.signalled is not None
    try:
        _, run.err = run.proc.communicate(timeout=max(1.0, run.signalled + NEVER_S - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(run.proc.pid, signal.SIGKILL)
        _, run.err = run.proc.communicate()
        return
    run.exited = time.monotonic()


def _check(run: Run, moment: float, record_property) -> None:
    """The run exited, because of its signal, and left nothing on the host nor running in its store."""
    err = run.err
    if run.exited is None or run.signalled is None:
        pytest.fail(f"{run.name} at {moment} s: still running {NEVER_S:g} s after the signal:\n{err[-3000:]}")
    delay = run.exited - run.signalled
    record_property(f"exit_delay_s_{run.name}", round(delay, 3))
    print(f"{run.name} at {moment} s: exit {run.proc.returncode} after {delay:.2f} s")
    what = (run.name, moment, run.proc.returncode, err[-3000:])
    assert run.proc.returncode == 128 + run.first, what
    assert _still_left(run.lock_dir) == [], what
    sessions = _sessions(run.db)
    assert [s for s in sessions if s[1] == "running"] == [], what
    for session, _ in sessions:
        assert open_rows(run.db, session) == [], what


@pytest.mark.slow
@pytest.mark.parametrize("moment", MOMENTS, ids=lambda m: f"{m:.2f}s")
def test_a_signal_at_any_moment_ends_the_run_and_leaves_nothing(
    moment: float, tmp_path: Path, runtime_dir: Path, record_property,
) -> None:
    """One run per schedule, all four at once (so that the file takes minutes, not a quarter of an hour)."""
    background_job = MOMENTS.index(moment) % 2 == 1
    runs = [_start(first, second, tmp_path / f"{first.name}-{second.name if second else 'once'}", runtime_dir,
                   background_job=background_job) for first, second in SCHEDULES]
    try:
        _signal_all(runs, moment)
        with ThreadPoolExecutor(len(runs)) as pool:  # each exit noted when it happens
            list(pool.map(_wait, runs))
        for run in runs:
            _check(run, moment, record_property)
    finally:
        for run in runs:
            if run.proc.poll() is None:
                os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.communicate()
            _kill_left(run.lock_dir)  # what a failed run left (instances have sessions of their own)


@pytest.mark.slow
def test_a_run_whose_backend_stops_answering_still_exits_after_its_signal(tmp_path: Path, runtime_dir: Path,
                                                                          record_property) -> None:
    """zoneadm halt and uninstall hang on the host when SIGTERM comes: every destroy would wait for its
    own timeout (minutes), so the run forces its teardown, then exits and names the cleanup command."""
    if not sshd_available():
        if os.environ.get("LABTUI_CI"):
            pytest.fail("CI installs OpenSSH's sshd, yet it is not here")
        pytest.skip("OpenSSH's sshd is not installed (apt install openssh-server)")
    write_key(tmp_path / "client_key")
    host = start_fake_host(tmp_path / "host", HUNG_HOST, HUNG_ADDRESS, "zones", tmp_path / "client_key.pub")
    (tmp_path / "lab").mkdir()
    env = {**os.environ, "LABTUI_CONFIG": str(write_lab(tmp_path / "lab", [host], tmp_path)),
           "LABTUI_LOCK_DIR": str(tmp_path / "locks"), "LABTUI_RUNTIME_DIR": str(runtime_dir), "COLUMNS": "200"}
    db = tmp_path / "lab.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "labtui", "run", "boot-scaling", "--backend", "zones", "--host",
                             HUNG_HOST, "--set", "scale.steps=5", "--set", "scale.per_step=3", "--set",
                             "suite.repetitions=1", "--set", "sampling.quiet_timeout_s=0", "--set", "worker.warmup=0",
                             "--set", "worker.runs=1", "--db", str(db)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        while (row := session_row(db)) is None or len(_zones(host)) < 3:  # background zones are up
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.1)
        host.knobs(hang=["halt", "uninstall"])
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=NEVER_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"still running {NEVER_S:g} s after SIGTERM:\n{proc.communicate()[1][-3000:]}")
        delay = time.monotonic() - signalled
        record_property("exit_delay_s", round(delay, 3))
        print(f"SIGTERM with zoneadm hung: exit {proc.returncode} after {delay:.2f} s")
        assert proc.returncode == 128 + signal.SIGTERM, err[-3000:]
        assert f"labtui cleanup --session {row[0]} --host {HUNG_HOST}" in err, err[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
        host.knobs()
        _kill_under(host.root)
        _kill_under(tmp_path / "lab")  # the simulated zones' programs run from the lab's runtime dir there
        host.server.stop()


def _zones(host: FakeHost) -> list[str]:
    """The zones running on the fake host, but the global one."""
    listing = host.tool("zoneadm", "list", "-p").stdout.splitlines()
    return [line for line in listing if line.split(":")[2:3] == ["running"] and ":global:" not in line]


def _kill_under(root: Path) -> None:
    """Kill the processes whose command lines name root: simulator commands left hanging, zones the run left."""
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and str(root).encode() in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ProcessLookupError):
            continue


def _ignore_sighup() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)


def test_a_run_started_under_nohup_outlives_its_terminal(tmp_path: Path, runtime_dir: Path) -> None:
    """`nohup labtui run ...` starts it with SIGHUP ignored: a closed terminal must not stop the run then (it
    did: labtui took SIGHUP over whatever it inherited), while SIGINT and SIGTERM still do."""
    lock_dir, db = tmp_path / "locks", tmp_path / "lab.duckdb"
    env = {**os.environ, "LABTUI_LOCK_DIR": str(lock_dir), "LABTUI_RUNTIME_DIR": str(runtime_dir), "COLUMNS": "200"}
    short = ["boot-scaling", "--set", "scale.steps=2", "--set", "scale.per_step=2", "--set", "suite.repetitions=1",
             "--set", "sampling.quiet_timeout_s=0"]
    proc = subprocess.Popen([sys.executable, "-m", "labtui", "run", *short, "--db", str(db)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_ignore_sighup)
    try:
        for moment in (0.05, 0.5, 1.5, 3.0):  # from the imports to the first steps
            time.sleep(moment - (0.05 if moment > 0.05 else 0.0))
            if proc.poll() is None:
                proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err[-3000:]
    assert [status for _, status in _sessions(db)] == ["completed"], err[-3000:]
    assert "SIGHUP" not in err
    assert _still_left(lock_dir) == []
