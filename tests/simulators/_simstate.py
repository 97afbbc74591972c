"""State shared by the simulated illumos and Xen commands (tests only).

Every simulator keeps its state in one JSON file per tool family under a state
directory: ``$LABTUI_SIM_STATE`` when set, else ``<dir of the command>/../state``
(the command's path as invoked, not resolved, so each fake host is a directory
``bin/`` of symlinks to these scripts beside its own ``state/``).  A flock on
``state/lock`` serialises changes across concurrent SSH sessions; nothing
sleeps while holding it.  ``state/sim.json`` holds the knobs a test sets:
delays in seconds, failures to inject, commands that hang.
"""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def state_dir() -> Path:
    named = os.environ.get("LABTUI_SIM_STATE")
    if named:
        return Path(named)
    return Path(os.path.abspath(sys.argv[0])).parent.parent / "state"


def knobs() -> dict[str, Any]:
    """The test's settings (sim.json), empty when absent."""
    path = state_dir() / "sim.json"
    return json.loads(path.read_text()) if path.exists() else {}


def delay(name: str, default: float = 0.0) -> None:
    """Sleep for the configured delay ``name`` (seconds)."""
    seconds = float(knobs().get(name, default))
    if seconds > 0:
        time.sleep(seconds)


def hang_if_asked(command: str) -> None:
    """Never return when the test listed this command under ``hang`` (to test timeouts)."""
    if command in knobs().get("hang", []):
        while True:
            time.sleep(3600)


def injected(kind: str, name: str) -> bool:
    """Whether name matches a glob listed under knob ``kind`` (e.g. fail_install)."""
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in knobs().get(kind, []))


@contextlib.contextmanager
def locked(family: str, initial: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The family's state, locked for the block and written back after it."""
    directory = state_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = directory / f"{family}.json"
        state = json.loads(path.read_text()) if path.exists() else initial
        yield state
        partial = path.with_suffix(".partial")
        partial.write_text(json.dumps(state, indent=1, sort_keys=True))
        os.replace(partial, path)


def err(message: str) -> None:
    sys.stderr.write(message + "\n")
