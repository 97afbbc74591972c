"""The store's own process: it reads and feeds the DuckDB store for a run, at a low priority.

``python -m labtui.session.store_child`` is started by `StoreProcess` (its
parent side).  It serves one request at a time from its standard input and
answers on its standard output, each a frame (labtui.session.store_frames),
until its input ends:

- ``("view", db)``: what reconciling needs from the store (``StoreView`` or None);
- ``("history", db, suite, host, backend, config)``: the latest comparable completed session's steps, for the
  run's time left (labtui.session.estimate.read_history: a ``PastRows``);
- ``("open", db, wait)``: check or create the store for writing; the answer is a
  notice (the store is held by another program) or None;
- ``("feed", journals, wait)``: move the journals' new rows in: (rows, the
  journals it emptied).

A request that fails answers with its exception, which the parent raises (as
a StoreError when it is not labtui's own: the parent never loads DuckDB).

Once the store is open the process lowers its priority (nice NICENESS, the
lowest best-effort I/O level): low enough to yield to everything the run
starts, never starved.  SCHED_IDLE and the idle I/O class were tried: on a
host kept busy by something else a feed, and the run's last feed with it,
may then never finish, and an unprivileged process cannot raise its priority
back.  What keeps the feed out of the figures is the quiet window, not the
priority.  The process ignores the terminal's stop signals (its parent decides
when it ends: it closes the pipe), and is sent SIGCONT when its parent dies,
so that a feed the parent had paused for a measurement finishes and the
process sees its input end.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import signal
import sys
from pathlib import Path
from typing import IO, Any

from labtui.core.errors import LabError
from labtui.lifecycle.reconcile import START_READ_WAIT_S, read_store_quietly
from labtui.session.estimate import PastRows, read_history
from labtui.session.store_frames import read_frame, write_frame
from labtui.store.access import check_file
from labtui.store.errors import StoreBusy, StoreError
from labtui.store.feed import feed
from labtui.store.writer import StoreWriter

#: The nice value the process takes once the store is open.
NICENESS = 10
#: ioprio_set(2) by machine (the C library has no wrapper); IOPRIO_WHO_PROCESS, the best-effort class at its
#: lowest level (7).
_IOPRIO_SET = {"x86_64": 251, "aarch64": 30}
_IOPRIO_WHO_PROCESS, _IOPRIO_BEST_EFFORT_LOWEST = 1, (2 << 13) | 7
_PR_SET_PDEATHSIG = 1


def lower_priority() -> None:
    """Nice NICENESS and the lowest best-effort I/O level: this process yields to the run and what it starts."""
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, 0, max(NICENESS, os.getpriority(os.PRIO_PROCESS, 0)))
    number = _IOPRIO_SET.get(platform.machine())
    if number is not None:
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).syscall(number, _IOPRIO_WHO_PROCESS, 0, _IOPRIO_BEST_EFFORT_LOWEST)


def _continue_when_orphaned(parent: int) -> None:
    """SIGCONT when the parent dies (it may have paused this process); exit when it died already."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGCONT)
    if os.getppid() != parent:
        sys.exit(0)


class _Store:
    """The requests, with the one writer of the run's store."""

    def __init__(self) -> None:
        self.writer: StoreWriter | None = None

    def view(self, db: Path) -> object:
        return read_store_quietly(db)

    def history(self, db: Path, suite: str, host: str, backend: str, config: dict[str, Any]) -> PastRows:
        return read_history(db, suite, host, backend, config, wait=START_READ_WAIT_S)  # a held store: no past

    def open(self, db: Path, wait: float) -> str | None:
        try:
            self.writer = StoreWriter.open(db, wait=wait)
        except StoreBusy as exc:
            check_file(db)  # at least a DuckDB file: its labtui schema is checked once it is free
            self.writer = StoreWriter(db, [])
            return f"{exc}: the run records into its journal and the store catches up once it is free"
        return None

    def feed(self, journals: list[Path], wait: float) -> tuple[int, list[Path]]:
        if self.writer is None:
            raise RuntimeError("feed before open")
        fed = feed(self.writer, journals, wait=wait)
        return fed.rows, fed.drained


def serve(requests: IO[bytes], answers: IO[bytes]) -> None:
    """Answer requests until their stream ends."""
    store = _Store()
    while (request := read_frame(requests)) is not None:
        name, *args = request
        try:
            answer: object = getattr(store, name)(*args)
            if name == "open":  # started at the caller's priority: a busy host does not hold the run's start
                lower_priority()
        except LabError as exc:  # StoreError, StoreBusy: the parent raises it as it is
            answer = exc
        except Exception as exc:  # duckdb.Error, OSError, a bug
            answer = StoreError(f"{type(exc).__name__}: {exc}")
        write_frame(answers, answer)


def main() -> None:
    """Serve the parent on stdin and stdout; nothing else may write to stdout."""
    parent = int(sys.argv[1]) if len(sys.argv) > 1 else os.getppid()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)
    _continue_when_orphaned(parent)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print goes to stderr, not into an answer
    with answers:
        serve(sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()
