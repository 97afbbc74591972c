"""Which sessions are running right now, told by a lock each running session holds.

A running session holds an exclusive flock on ``<runtime>/running/<id>.lock``
for its whole life.  The kernel drops the lock when the process dies, even by
``kill -9``, so a session whose lock can be taken is not running any more and
its instances are orphans, whatever store file it wrote to.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from labtui.paths import local_runtime_dir


def _lock_dir() -> Path:
    path = local_runtime_dir() / "running"
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def session_lock(session_id: str) -> Iterator[None]:
    """Hold the running-lock of session_id for the duration of the block."""
    path = _lock_dir() / f"{session_id}.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)


def session_is_running(session_id: str) -> bool:
    """True while some process holds the running-lock of session_id."""
    path = _lock_dir() / f"{session_id}.lock"
    try:
        fd = os.open(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
