"""Every key is safe at every moment, typed as a terminal types it (issue 42).

The console runs on a pseudo-terminal (tests/pty_console.py) and keys arrive as bytes, from the
first byte on: no waiting for a frame or for the views, as Pilot would.  Two tests:

- every binding of every view (and of the app), sent once per delay of a sweep after launch
  (0 ms to 1 s: before the first frame, while the views import, while they mount), each view's
  keys after its tab key;
- random keys under fixed seeds for `RANDOM_S` each, from the first byte.

Either fails when the console exits before it is told to quit, or leaves a crash log or a
traceback.  At the end the console is quit (ctrl+q, and `t` to tear down a run a key started) and
must exit 0.  What runs here sees only its own instances, where namespaces can be made (root and
unshare): the console runs in a PID namespace of its own, so the process backend, which finds
instances by their labels in /proc, lists and can destroy only the processes started inside it
(and they end with it), and in a mount namespace where the Docker socket is hidden.  Without them
`y`, which confirms a destroy, is left out of the keys.  The clean-up after a test destroys the
instances of the sessions its own store knows, never "orphans" (with a lock directory of its own,
every other test's running session would look like one).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import pytest
from pty_console import Pty
from textual.binding import Binding

from labtui.ui.app import LabApp
from labtui.ui.tabs import SESSIONS, TABS

pytestmark = pytest.mark.slow

SIZE = (80, 24)
DELAYS_S = (0.0, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
SEEDS = (1, 2, 3)
RANDOM_S = 60.0
#: Keys that end the console: sent only at the end.
QUITS = frozenset({"q", "ctrl+q", "ctrl+c"})
#: A key's bytes as xterm sends them, for the keys that are not one printable character.
BYTES = {
    "escape": b"\x1b", "enter": b"\r", "tab": b"\t", "space": b" ", "colon": b":", "question_mark": b"?",
    "slash": b"/", "up": b"\x1b[A", "down": b"\x1b[B", "right": b"\x1b[C", "left": b"\x1b[D",
    "ctrl+up": b"\x1b[1;5A", "ctrl+down": b"\x1b[1;5B", "ctrl+enter": b"\x1b[27;5;13~", "f2": b"\x1bOQ",
    "f3": b"\x1bOR", "f4": b"\x1bOS", "f5": b"\x1b[15~", "f8": b"\x1b[19~",
    "pagedown": b"\x1b[6~", "pageup": b"\x1b[5~", "home": b"\x1b[H", "end": b"\x1b[F",
}
#: After an escape the terminal parser waits to tell it from the start of a sequence.
AFTER_ESCAPE_S = 0.15
PACE_S = 0.03
DOCKER_SOCKET = Path("/var/run/docker.sock")


def key_bytes(key: str) -> bytes:
    """What the terminal sends for a Textual key name; a name with no bytes here fails the test."""
    if key in BYTES:
        return BYTES[key]
    if len(key) == 1:
        return key.encode()
    if key.startswith("ctrl+") and len(key) == 6 and key[-1].isalpha():
        return bytes([ord(key[-1]) - 96])
    raise AssertionError(f"no terminal bytes known for the key {key!r}: add them to BYTES")


def bindings_by_tab() -> dict[str, list[str]]:
    """Every key bound in each view's module (the view, its panes, its screens), and the app's, by tab key.

    After `4`, into the SQL editor, the Sessions+SQL view's keys go again (the SQL pane's act only while the
    focus is in it), then the app's."""
    found: dict[str, list[str]] = {}
    for number, tab in enumerate(TABS, start=1):
        module = importlib.import_module(tab.module)
        keys = []
        for _, cls in inspect.getmembers(module, inspect.isclass):
            for binding in cls.__dict__.get("BINDINGS", ()) if cls.__module__.startswith("labtui") else ():
                keys += (binding.key if isinstance(binding, Binding) else binding[0]).split(",")
        found[str(number)] = sorted({k.strip() for k in keys} - QUITS)
    sql_keys = found[str(TABS.index(SESSIONS) + 1)]
    app_keys = {k for b in LabApp.BINDINGS for k in b.key.split(",")} - QUITS
    found["4"] = sql_keys + sorted(app_keys - set(sql_keys))
    return found


def hidden_docker() -> bool:
    """Whether the console can run in namespaces of its own (root, unshare): it sees only its own processes and no
    Docker socket, so `y` is safe."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


def console(tmp: Path) -> Pty:
    """The console on an 80x24 pty, in its own runtime and state directories; where namespaces can be made, in a
    PID namespace of its own (a shell its init, so that what the console leaves ends with it) with no Docker
    socket."""
    argv = [sys.executable, "-m", "labtui", "--db", str(tmp / "lab.duckdb")]
    if hidden_docker():
        hide = f"mount --bind /dev/null {DOCKER_SOCKET} 2>/dev/null; " if DOCKER_SOCKET.exists() else ""
        argv = ["unshare", "--mount", "--propagation", "private", "--pid", "--fork", "--kill-child", "--mount-proc",
                "sh", "-c", hide + '"$@"', "sh", *argv]
    env = {"LABTUI_RUNTIME_DIR": str(tmp / "runtime"), "LABTUI_STATE_DIR": str(tmp / "state"),
           "LABTUI_LOCK_DIR": str(tmp / "locks"), "LABTUI_CONFIG_DIR": str(tmp / "config")}
    return Pty(argv, env, size=SIZE)


def type_key(term: Pty, key: str) -> None:
    term.write(key_bytes(key))
    term.drain(AFTER_ESCAPE_S if key == "escape" else PACE_S)
    alive(term, f"after {key!r}")


def alive(term: Pty, when: str) -> None:
    if term.proc.poll() is not None:
        raise AssertionError(f"the console exited ({term.proc.returncode}) {when}:\n{screen_text(term)}")


def screen_text(term: Pty) -> str:
    return term.seen[-4000:].decode(errors="replace")


def quit_console(term: Pty, tmp: Path) -> None:
    """ctrl+q (and `t` should a run ask whether to tear down); it must exit 0, with no crash log."""
    for key in ("escape", "escape", "escape"):  # out of a dialog, the help or a question
        type_key(term, key)
    deadline = time.monotonic() + 90
    while term.proc.poll() is None and time.monotonic() < deadline:
        term.write(key_bytes("ctrl+q"))
        term.drain(1.0)
        if term.proc.poll() is None:
            term.write(b"t")
            term.drain(1.0)
    crashes = sorted((tmp / "state" / "crashes").glob("*.log")) if (tmp / "state" / "crashes").is_dir() else []
    assert not crashes, crashes[0].read_text()
    assert term.proc.poll() == 0, f"exit {term.proc.poll()}:\n{screen_text(term)}\n{stacks(term)}"
    assert b"Traceback" not in term.seen, screen_text(term)


def stacks(term: Pty) -> str:
    """Where a console that does not exit is stuck: py-spy's dump of it and its children, where py-spy is."""
    if term.proc.poll() is not None or shutil.which("py-spy") is None:
        return ""
    children = subprocess.run(["pgrep", "-P", str(term.proc.pid)], capture_output=True, text=True).stdout.split()
    return "\n".join(subprocess.run(["py-spy", "dump", "--pid", pid], capture_output=True, text=True).stdout
                     for pid in [str(term.proc.pid), *children])


def clean_up(tmp: Path) -> None:
    """End what a run the keys started left (the console's teardown normally has): the instances of each session
    its store (and journals) know, by their whole ids, and nothing of any other test."""
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp / "runtime"), "LABTUI_STATE_DIR": str(tmp / "state"),
           "LABTUI_LOCK_DIR": str(tmp / "locks")}
    db = ("--db", str(tmp / "lab.duckdb"))
    listed = cli_run.labtui(*db, "sessions", "--format", "json", env=env, timeout=120)
    for session in json.loads(listed.stdout or "[]") if listed.returncode == 0 else []:
        cli_run.labtui(*db, "cleanup", "--session", session["session_id"], "--backend", "process", env=env,
                       timeout=120)


@pytest.mark.parametrize("delay", DELAYS_S, ids=[f"{int(d * 1000)}ms" for d in DELAYS_S])
def test_every_binding_of_every_view_at_every_moment_of_the_start(tmp_path: Path, delay: float) -> None:
    keys = bindings_by_tab()
    if not hidden_docker():
        keys = {tab: [k for k in tab_keys if k != "y"] for tab, tab_keys in keys.items()}
    term = console(tmp_path)
    try:
        time.sleep(delay)
        for tab, tab_keys in keys.items():
            type_key(term, tab)
            for key in tab_keys:
                type_key(term, key)
                type_key(term, "escape")  # out of whatever the key opened, before the next one
        quit_console(term, tmp_path)
    finally:
        term.close()
        clean_up(tmp_path)


@pytest.mark.parametrize("seed", SEEDS)
def test_random_keys_from_the_first_byte(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    bound = sorted({k for keys in bindings_by_tab().values() for k in keys})
    pool = [*bound, *"abcdefghijklmnoprstuvwxz0123456789", "tab", "enter", "escape", "up", "down", "left", "right",
            "pagedown", "ctrl+p", "space"]
    if not hidden_docker():
        pool = [k for k in pool if k != "y"]
    term = console(tmp_path)
    typed: list[str] = []
    try:
        deadline = time.monotonic() + RANDOM_S
        while time.monotonic() < deadline:
            key = rng.choice(pool)
            typed.append(key)
            try:
                type_key(term, key)
            except AssertionError as exc:
                raise AssertionError(f"seed {seed}, last keys {typed[-20:]}: {exc}") from None
        quit_console(term, tmp_path)
    finally:
        term.close()
        clean_up(tmp_path)
