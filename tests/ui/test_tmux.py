"""The console in a real terminal: `python -m labtui` under tmux, driven by send-keys, read by capture-pane."""

from __future__ import annotations

import asyncio
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from labtui.backends.base import InstanceSpec, Labels, open_backend
from labtui.core.liveness import session_lock
from labtui.hosts import get_host
from labtui.store import run_sql

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install tmux)")
REPO = Path(__file__).resolve().parents[2]


class Terminal:
    """One tmux server of our own (-L socket) running one window of a fixed size."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=10, check=True)
        return done.stdout

    def start(self, argv: list[str], env: dict[str, str], size: tuple[int, int]) -> None:
        envs = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
        # COLUMNS/LINES (set by pytest's terminal) would override the pane's real size
        self.tmux("new-session", "-d", "-s", "lab", "-x", str(size[0]), "-y", str(size[1]), "-c", str(REPO),
                  *envs, "env", "-u", "COLUMNS", "-u", "LINES", *argv)
        self.tmux("set-option", "-t", "lab", "remain-on-exit", "on")


    def keys(self, *keys: str, literal: bool = False) -> None:
        for key in keys:
            self.tmux("send-keys", "-t", "lab", *(["-l"] if literal else []), key)
            time.sleep(0.25)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "lab")

    def main_screen(self) -> str:
        """The normal screen, saved while the console draws on the alternate one (what a program it suspended for
        printed)."""
        return self.tmux("capture-pane", "-p", "-a", "-q", "-t", "lab")

    def wait(self, found: Callable[[str], bool], what: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if found(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; the screen:\n{screen}")
            time.sleep(0.2)

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


def instances_total(screen: str) -> int | None:
    """The total of the instances pane (the row ending in 'total  N')."""
    match = re.search(r"total\s+(\d+)\s", screen)
    return int(match[1]) if match else None


def result_cell(screen: str, column: str) -> int:
    """The number under a column header of the result grid."""
    lines = screen.splitlines()
    row = next(i for i, line in enumerate(lines) if column in line)
    start = lines[row].index(column)
    return int(lines[row + 1][start:start + len(column) + 4].strip())


def test_console_in_tmux_steps_counts_and_queries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "lab.duckdb"
    term = Terminal("labtui-test-" + secrets.token_hex(4))
    env = {"LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "LABTUI_STATE_DIR": str(tmp_path / "state"),
           "TERM": "xterm-256color"}
    for key in ("LABTUI_RUNTIME_DIR", "LABTUI_STATE_DIR"):
        monkeypatch.setenv(key, env[key])
    sessions: list[str] = []
    try:
        status_file = tmp_path / "exit-status"
        # a shell records the console's exit status (128 + N when a signal ended it)
        term.start(["sh", "-c", '"$0" -m labtui --db "$1"; echo $? > "$2"', sys.executable, str(db), str(status_file)],
                   env, (160, 50))
        term.wait(lambda s: "no run yet" in s and "CPU" in s, "the console to draw", 20)

        term.keys("s")
        term.wait(lambda s: "Start a run" in s and "process  ✔" in s, "the start dialog with process usable")
        term.keys("Tab", "Tab", "Tab", "Tab", "Tab", "3", "Tab", "3", "Tab", "1", "Tab", "Right", "Space")
        term.wait(lambda s: re.search(r"steps\s+▊\s+3\s+▎ per step ▊\s+3\s+▎ repetitions ▊\s+1\s", s) is not None,
                  "steps 3, per step 3, repetitions 1 in the dialog", 10)
        term.keys("C-s")
        screen = term.wait(lambda s: "press n" in s, "the baseline and the manual gate", 90)
        assert re.search(r"step\s+0/3", screen) and instances_total(screen) == 0

        for expected in (3, 6):  # each next adds one step of per_step=3 background instances
            term.keys("n")
            screen = term.wait(lambda s, e=expected: "press n" in s and instances_total(s) == e,
                               f"{expected} instances on screen", 60)
            assert f"background {expected}" in " ".join(screen.split())
        # the line chart and the slowdown table (one frame feeds both) have filled in up to background 6
        screen = term.wait(lambda s: "boot_time (ms) ● mean ±1 std" in s and re.search(r"boot_time\s+6\s", s) is not None,
                           "the live chart", 30)
        sessions.append(re.search(r"session\s+(\d{8}-\d{6}-[0-9a-f]{6})", screen)[1])
        assert len(asyncio.run(open_backend("process", get_host("local")).list(sessions[0]))) == 6

        term.keys("x", "y")
        term.wait(lambda s: "aborted" in s and instances_total(s) == 0, "the abort to tear down", 60)

        term.keys("3")
        term.wait(lambda s: sessions[0] in s and "sessions (enter opens)" in s, "the Sessions view")
        term.keys("4")  # the SQL editor, from any view; its footer shows only the editor's keys
        term.wait(lambda s: "run SQL" in s.splitlines()[-1] and "filter" not in s.splitlines()[-1], "the SQL editor's focus")
        term.keys("F7")  # select all the editor's text, so that typing replaces it
        term.keys("select count(*) from results", literal=True)
        term.wait(lambda s: "select count(*) from results" in s, "the query in the editor")
        term.keys("C-r")
        screen = term.wait(lambda s: "count_star()" in s and "1 row" in s, "the query result")
        shown = result_cell(screen, "count_star()")
        assert shown == 3 * 5  # baseline, 3 and 6 background: 5 boot results each (worker.runs)

        term.keys("Escape", "q")
        term.wait(lambda s: status_file.exists() and status_file.read_text().strip() != "", "the console to exit", 30)
        assert status_file.read_text().strip() == "0"
    finally:
        term.kill()
        for session in sessions:
            backend = open_backend("process", get_host("local"))
            for instance in asyncio.run(backend.list(session)):
                asyncio.run(backend.destroy(instance, force=True))
    assert asyncio.run(open_backend("process", get_host("local")).list(sessions[0])) == []
    assert run_sql(db, "select count(*) from results").rows == [(shown,)]


def test_console_in_tmux_runs_an_isolation_suite_to_its_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """isolation-cpu --profile quick, chosen and started with keystrokes only, runs to `completed`; then q."""
    db = tmp_path / "lab.duckdb"
    term = Terminal("labtui-test-" + secrets.token_hex(4))
    env = {"LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "LABTUI_STATE_DIR": str(tmp_path / "state"),
           "TERM": "xterm-256color"}
    for key in ("LABTUI_RUNTIME_DIR", "LABTUI_STATE_DIR"):
        monkeypatch.setenv(key, env[key])
    status_file = tmp_path / "exit-status"
    try:
        term.start(["sh", "-c", '"$0" -m labtui --db "$1"; echo $? > "$2"', sys.executable, str(db), str(status_file)],
                   env, (160, 48))
        term.wait(lambda s: "no run yet" in s and "CPU" in s, "the console to draw", 30)
        term.keys("s")
        term.wait(lambda s: "Start a run" in s and "process  ✔" in s, "the start dialog with process usable")
        term.keys("Tab")  # from the suite list to the suite file, which wins over the list
        term.keys("suites/isolation-cpu.toml", literal=True)
        term.keys("Tab")
        term.wait(lambda s: "isolation, 20 repetition(s) of" in s, "the suite's plan", 15)
        term.keys("Enter", "Down", "Enter")  # the profile list: the suite as written, then quick
        term.wait(lambda s: re.search(r"profile\s+▊\s+quick", s) is not None and "isolation, 2 repetition(s)" in s,
                  "profile quick and its plan", 15)
        term.keys("C-s")
        screen = term.wait(lambda s: re.search(r"status\s+completed", s) is not None, "the run to complete", 240)
        assert "isolation-cpu on process@local" in screen and "rep 2/2" in " ".join(screen.split())
        assert "by placement" in screen and "alone" in screen  # the chart: a bar per placement
        session = re.search(r"session\s+(\d{8}-\d{6}-[0-9a-f]{6})", screen)[1]
        assert instances_total(screen) == 0
        term.keys("q")  # no run is active: q quits without asking
        term.wait(lambda s: status_file.exists() and status_file.read_text().strip() != "", "the console to exit", 30)
        assert status_file.read_text().strip() == "0"
    finally:
        term.kill()
    assert run_sql(db, "select suite, status from sessions").rows == [("isolation-cpu", "completed")]
    placements = run_sql(db, "select count(distinct placement), count(distinct repetition) from results").rows[0]
    assert placements[0] >= 2 and placements[1] == 2  # the worker alone and at least one attacker placement, twice
    assert asyncio.run(open_backend("process", get_host("local")).list(session)) == []


def test_closing_the_terminal_mid_run_tears_down_records_and_ends_the_console(tmp_path: Path) -> None:
    """A closed terminal (SIGHUP) during a run: torn down, recorded 'aborted by SIGHUP', and the process ends."""
    db, pid_file = tmp_path / "lab.duckdb", tmp_path / "console.pid"
    term = Terminal("labtui-test-" + secrets.token_hex(4))
    env = {"LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "LABTUI_STATE_DIR": str(tmp_path / "state"),
           "TERM": "xterm-256color"}
    try:
        term.start(["sh", "-c", 'echo $$ > "$2"; exec "$0" -m labtui --db "$1"', sys.executable, str(db),
                    str(pid_file)], env, (160, 48))
        term.wait(lambda s: "no run yet" in s, "the console to draw", 30)
        term.keys("s")
        term.wait(lambda s: "Start a run" in s and "process  ✔" in s, "the start dialog with process usable", 60)
        term.keys("C-s")  # boot-scaling as written: long enough to be cut short
        term.wait(lambda s: re.search(r"status\s+running", s) is not None and instances_total(s), "instances", 90)
    finally:
        term.kill()  # the terminal closes: the console gets SIGHUP
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 120
    while Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text():
        assert time.monotonic() < deadline, "the console did not end after its terminal closed"
        time.sleep(0.5)
    (session, status, message), = run_sql(db, "select session_id, status, message from sessions").rows
    assert (status, message) == ("aborted", "aborted by SIGHUP")
    assert run_sql(db, "select count(*) from instances where state in ('creating', 'running', 'destroying')"
                   ).rows == [(0,)]
    assert asyncio.run(open_backend("process", get_host("local")).list(session)) == []


@pytest.mark.skipif(not Path("/var/run/docker.sock").is_socket(), reason="needs dockerd on /var/run/docker.sock")
def test_shell_key_opens_sh_in_a_docker_instance_and_comes_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`s` on a docker instance: the console steps aside for `docker exec -it ... /bin/sh`, a line typed there
    runs in the container, and `exit` brings the console back."""
    db = tmp_path / "lab.duckdb"
    term = Terminal("labtui-test-" + secrets.token_hex(4))
    env = {"LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "LABTUI_STATE_DIR": str(tmp_path / "state"),
           "TERM": "xterm-256color"}
    for key in ("LABTUI_RUNTIME_DIR", "LABTUI_STATE_DIR"):
        monkeypatch.setenv(key, env[key])
    session = "shell-" + secrets.token_hex(3)
    backend = open_backend("docker", get_host("local"))
    with session_lock(session):  # running: no cleanup of orphans elsewhere takes it
        (made,) = asyncio.run(backend.create_many([InstanceSpec(Labels(session, "idle", "dk"), program="sleeper")]))
        try:
            term.start([sys.executable, "-m", "labtui", "--db", str(db)], env, (80, 24))
            term.wait(lambda s: "no run yet" in s, "the console to draw", 30)
            term.keys("2")
            term.wait(lambda s: "instances ·" in s and "backends:" in s, "the Instances view listed", 60)
            term.keys("/")
            term.wait(lambda s: "filter: any text" in s, "the filter box", 10)
            term.keys(session, literal=True)
            term.keys("Enter")
            term.wait(lambda s: re.search(r"\bdk\s+running\b", s) is not None and "1 of " in s, "the instance alone", 60)
            term.keys("s")
            term.wait(lambda s: "the console comes back when it ends" in s and s.rstrip().endswith("#"),
                      "the container's shell prompt", 60)
            term.keys("echo shell-$((6*7)); exit", literal=True)
            term.keys("Enter")
            screen = term.wait(lambda s: "instances ·" in s and "ended (exit 0)" in " ".join(s.split()),
                               "the console back, saying the shell ended", 30)
            assert "shell-42" not in screen  # the console drew over it ...
            shell = term.main_screen()  # ... on its own screen: the shell's lines are on the terminal's
            assert f"docker exec -it {made.handle} /bin/sh" in "".join(shell.split("\n")) and "shell-42" in shell
            term.keys("q")
            term.wait(lambda s: "shell-42" in s, "the console to quit and give the terminal back", 30)
        finally:
            term.kill()
            asyncio.run(backend.destroy(made, force=True))
