"""Which sessions are running right now, told by a lock each running session holds.

A running session holds an exclusive flock on ``<lock dir>/<id>.lock`` for its
whole life.  The kernel drops the lock when the process dies, even by
``kill -9``, so a session whose lock can be taken is not running any more and
its instances are orphans, whatever store file or runtime dir it used.

The lock dir is one per machine (``/tmp/labtui-running``, sticky and
world-writable like /tmp; ``LABTUI_LOCK_DIR`` names another), so that a
cleanup never takes another runtime dir's running session for an orphan.  It
is shared between users only when root owns it (root made it first, or an
installer did); a user who finds it owned by someone else uses
``/tmp/labtui-running-UID`` instead, since that owner could delete the locks.
A lock file holds the PID of the process that owns it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

LOCK_DIR_ENV = "LABTUI_LOCK_DIR"
DEFAULT_LOCK_DIR = "/tmp/labtui-running"


class LivenessError(OSError):
    """The lock dir cannot be trusted (not ours or root's, a symlink, writable by others without the sticky bit)."""


def lock_dir() -> Path:
    """The running-lock dir, created sticky and world-writable (1777) if missing."""
    named = os.environ.get(LOCK_DIR_ENV)
    path = _made(Path(named or DEFAULT_LOCK_DIR))
    if not named and path.lstat().st_uid not in (0, os.getuid()):
        path = _made(Path(f"{DEFAULT_LOCK_DIR}-{os.getuid()}"))
    _check(path)
    return path


def _made(path: Path) -> Path:
    try:
        path.mkdir(parents=True)
        os.chmod(path, 0o1777)
    except FileExistsError:
        pass
    return path


def _check(path: Path) -> None:
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise LivenessError(f"running-lock dir {path} is not a directory (a symlink?)")
    if info.st_uid not in (0, os.getuid()):
        raise LivenessError(f"running-lock dir {path} belongs to uid {info.st_uid}, not to root or to you")
    if info.st_mode & 0o002 and not info.st_mode & stat.S_ISVTX:
        raise LivenessError(f"running-lock dir {path} is writable by everyone but not sticky (chmod 1777 it)")


@contextlib.contextmanager
def session_lock(session_id: str) -> Iterator[None]:
    """Hold the running-lock of session_id for the duration of the block."""
    path = lock_dir() / f"{session_id}.lock"
    fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held by another process: raises, and its file stays
    except BaseException:
        os.close(fd)
        raise
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(fd)


def session_is_running(session_id: str) -> bool:
    """True while some process holds the running-lock of session_id."""
    path = lock_dir() / f"{session_id}.lock"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def sessions_of(pid: int) -> list[str]:
    """Ids of the running sessions whose lock process pid holds."""
    found = []
    for path in lock_dir().glob("*.lock"):
        with contextlib.suppress(OSError, ValueError, IndexError):  # a lock being written may still be empty
            if int(path.read_text().split()[0]) == pid and session_is_running(path.stem):
                found.append(path.stem)
    return found
