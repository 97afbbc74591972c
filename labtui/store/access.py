"""Opening the store file: its header checked without DuckDB, connections and ATTACHes retried while
another holder has it, and the turnstile that lets labtui's writers go one at a time past a queue of readers."""

from __future__ import annotations

import fcntl
import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import duckdb

from labtui.store.errors import StoreBusy, StoreError, damaged, first_line
from labtui.store.schema import check_store

#: How long a reader waits for a writer's flush to let go of the file (seconds).
READ_WAIT_S = 10.0
#: How long a writer waits for other writers' flushes and readers (seconds).
WRITE_WAIT_S = 60.0
#: Longest pause between two attempts to open a busy store (seconds).
_MAX_BACKOFF_S = 0.05
#: Never fetch extensions from the network (DuckDB would, to open a SQLite file).
_BASE_CONFIG = {"autoinstall_known_extensions": False}

T = TypeVar("T")

_SQLITE_MAGIC = b"SQLite format 3\x00"
_DUCKDB_MAGIC = b"DUCK"  # bytes 8..12 of every DuckDB database file


def check_file(path: Path) -> None:
    """StoreError unless `path` starts like a DuckDB database file (read without DuckDB)."""
    try:
        with open(path, "rb") as file:
            head = file.read(16)
    except IsADirectoryError:
        raise StoreError(f"store {path} is a directory, not a DuckDB file") from None
    except OSError as exc:
        raise StoreError(f"cannot read store {path}: {exc.strerror or exc}") from None
    if head[8:12] == _DUCKDB_MAGIC:
        return
    if not head:
        what = "an empty file (0 bytes), not a DuckDB database"
    elif head.startswith(_SQLITE_MAGIC):
        what = "a SQLite database, not a labtui store"
    else:
        what = "not a DuckDB database (unknown file header)"
    raise StoreError(f"store {path} is {what}; labtui will not touch it")


def _classify(path: Path, exc: duckdb.Error) -> StoreError:
    """A DuckDB error from opening `path`: StoreBusy when someone else holds it, else StoreError."""
    text = str(exc)
    if isinstance(exc, duckdb.IOException) and "lock" in text.lower():
        holder = "another process"
        if "Conflicting lock is held in " in text:
            holder = text.split("Conflicting lock is held in ", 1)[1].split(")", 1)[0] + ")"
        return StoreBusy(f"store {path} is in use by {holder}")
    if isinstance(exc, (duckdb.ConnectionException, duckdb.ResourceInUseException)):
        return StoreBusy(f"store {path} is open in this process with other settings ({first_line(text)})")
    if broken := damaged(path, exc):
        return broken
    if isinstance(exc, duckdb.IOException):
        return StoreError(f"cannot open store {path}: {first_line(text)}")
    return StoreError(f"cannot open store {path}: it is damaged or not a DuckDB database ({first_line(text)})")


def _open_once(path: Path, read_only: bool, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    """One attempt; StoreBusy when another holder has the file, StoreError when it cannot be read."""
    try:
        return duckdb.connect(str(path), read_only=read_only, config={**_BASE_CONFIG, **config})
    except duckdb.Error as exc:
        raise _classify(path, exc) from exc


def _attach_once(con: duckdb.DuckDBPyConnection, path: Path, alias: str, *, read_only: bool = False) -> None:
    quoted = str(path).replace("'", "''")
    try:
        con.execute(f"ATTACH '{quoted}' AS {alias}" + (" (READ_ONLY)" if read_only else ""))
    except duckdb.Error as exc:
        raise _classify(path, exc) from exc


def memory_connection() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB for a writer that attaches the store for each write (see `attach`)."""
    return duckdb.connect(":memory:", config=dict(_BASE_CONFIG))


def turnstile_path(path: Path) -> Path:
    """The store's turnstile: a small lock file beside it (`lab.duckdb.lock`)."""
    return path.with_name(path.name + ".lock")


#: After a write, this process's next write waits this long, so that readers queued at the
#: turnstile get in between two flushes that come back to back (seconds).
_WRITER_GRACE_S = 0.02
#: Readers poll the turnstile at least this often, so they catch that gap (seconds).
_READER_POLL_S = 0.005
_last_write_end: dict[str, float] = {}


def _flock(fd: int, how: int, deadline: float, max_delay: float = _MAX_BACKOFF_S) -> bool:
    """flock `fd` (polling, with a bounded backoff) until `deadline`; False when it never came."""
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, how | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, delay * random.uniform(0.5, 1.5)))
            delay = min(delay * 2, max_delay)


@contextmanager
def writing_turn(path: Path, wait: float | None = None) -> Iterator[None]:
    """Hold the store's turnstile for one write (a flush): writers go one at a time.

    While a writer holds it, new readers wait at the turnstile (see
    `_reader_turn`), so a stream of overlapping readers cannot keep a writer
    out of the DuckDB file for ever.
    """
    wait = WRITE_WAIT_S if wait is None else wait
    lock = turnstile_path(path)
    gap = _last_write_end.get(str(lock), 0.0) + _WRITER_GRACE_S - time.monotonic()
    if gap > 0:
        time.sleep(gap)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StoreError(f"cannot open the store's lock file {lock}: {exc.strerror or exc}") from None
    try:
        if not _flock(fd, fcntl.LOCK_EX, time.monotonic() + wait):
            raise StoreBusy(
                f"store {path} is being written by another labtui process, and it did not finish "
                f"within {wait:g} s"
            )
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            _last_write_end[str(lock)] = time.monotonic()
    finally:
        os.close(fd)


@contextmanager
def _reader_turn(path: Path, deadline: float) -> Iterator[bool]:
    """Hold the turnstile shared while a reader opens the file; False when a writer kept it past the deadline.

    A writer holds it exclusively from before it opens the file until it has
    closed it, so a reader that has passed cannot lose the file to that
    writer, and one that has not waits for the write.  Readers do not create
    the turnstile (a file labtui never wrote gets nothing beside it); a store
    without one has no labtui writer.
    """
    try:
        fd = os.open(turnstile_path(path), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        yield True
        return
    try:
        if not _flock(fd, fcntl.LOCK_SH, deadline, _READER_POLL_S):
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _retrying(path: Path, wait: float, attempt: Callable[[], T], *, reader: bool) -> T:
    """attempt() until it is not StoreBusy, with a bounded, jittered backoff, for `wait` seconds."""
    deadline = time.monotonic() + wait
    delay = 0.002
    while True:
        try:
            if not reader:
                return attempt()
            with _reader_turn(path, deadline) as passed:
                if not passed:
                    raise StoreError(
                        f"store {path} is being written by a labtui process that did not finish "
                        f"within {wait:g} s (it may be waiting for another program that holds the file)"
                    )
                return attempt()
        except StoreBusy as busy:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StoreBusy(
                    f"{busy}, and it was not released for {wait:g} s (labtui sessions hold "
                    "the store only while they write; another program keeps it open)"
                ) from busy.__cause__
            time.sleep(min(left, delay * random.uniform(0.5, 1.5)))
            delay = min(delay * 2, _MAX_BACKOFF_S)


def connect(
    path: Path, *, read_only: bool, config: dict[str, Any] | None = None, wait: float | None = None,
) -> duckdb.DuckDBPyConnection:
    """Open `path` with DuckDB, retrying with a bounded backoff while another holder has it.

    labtui's writers hold the file only while they flush (milliseconds), so a
    busy file is retried for `wait` seconds (READ_WAIT_S for readers,
    WRITE_WAIT_S for writers) before StoreBusy says who holds it.  Readers
    pass the turnstile while they open, so they queue behind a writer.
    """
    if wait is None:
        wait = READ_WAIT_S if read_only else WRITE_WAIT_S
    return _retrying(path, wait, lambda: _open_once(path, read_only, config or {}), reader=read_only)


def attach(con: duckdb.DuckDBPyConnection, path: Path, alias: str, wait: float | None = None) -> None:
    """ATTACH `path` read-write to `con` as `alias`, retrying like `connect` (a writer, under its turnstile).

    Attaching to a long-lived in-memory DuckDB costs a few milliseconds where
    a new connection costs tens (DuckDB's start-up, its function catalog);
    DETACH releases the file and checkpoints what was written.
    """
    _retrying(path, WRITE_WAIT_S if wait is None else wait, lambda: _attach_once(con, path, alias), reader=False)


def check_writable(path: Path, wait: float | None = None, *, con: duckdb.DuckDBPyConnection | None = None) -> None:
    """Read-only, before any write: StoreError unless `path` is a labtui store this code can write.

    The file is attached read-only to `con` (an in-memory DuckDB; a new one
    when None), as a reader, and detached again: a writer that goes on with
    the same DuckDB pays for its start-up once.
    """
    check_file(path)
    checker = memory_connection() if con is None else con
    try:
        _retrying(path, READ_WAIT_S if wait is None else wait,
                  lambda: _attach_once(checker, path, "checked", read_only=True), reader=True)
        try:
            checker.execute("USE checked")
            check_store(checker, path, allow_empty=True)
        except duckdb.Error as exc:
            raise damaged(path, exc) or StoreError(f"cannot read store {path}: {first_line(str(exc))}") from exc
        finally:
            checker.execute("USE memory")
            checker.execute("DETACH checked")
    finally:
        if con is None:
            checker.close()
