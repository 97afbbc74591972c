"""A session's own journal: every event it records, appended to a SQLite file beside the store.

The DuckDB store is a lab's history, shared with notebooks, the DuckDB CLI and
Harlequin; DuckDB lets one process write a file or many read it, never both.  So
a run never writes the store while it works.  It appends each event to its
journal (``lab.duckdb.journals/<session>.sqlite``: SQLite in WAL mode, one
writer and any number of readers at once), and a feeder moves the journal into
the store when the store is free (labtui.store.feed).

An append is one SQLite transaction (about 20 us): a ``kill -9`` right after it
loses nothing.  ``synchronous=NORMAL`` does not fsync each commit, so a power
cut may lose the last ones; the store itself never promised more.

The process that writes a journal holds an exclusive flock on
``<session>.lock`` beside it for the journal's whole life, so another process
can tell a live journal from one whose writer finished or died (and may adopt
it: `owner_gone`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

from labtui.core.events import (
    Event,
    InstanceCreating,
    InstanceDestroyed,
    InstanceDestroying,
    InstanceReady,
    SessionEnded,
    SessionStarted,
)
from labtui.core.paths import make_private_dirs
from labtui.store.errors import StoreError

#: Every kind of event a journal holds, by class name.
EVENT_TYPES: dict[str, type] = {cls.__name__: cls for cls in get_args(Event)}
_SUFFIX = ".sqlite"
_DDL = "CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL)"


def journal_dir(store: Path) -> Path:
    """Where a store's journals live: ``<store>.journals`` beside it."""
    return store.with_name(store.name + ".journals")


def journal_paths(store: Path) -> list[Path]:
    """Every journal of `store`, oldest session first (session ids sort by time)."""
    directory = journal_dir(store)
    if not directory.is_dir():
        return []
    return sorted(directory.glob(f"*{_SUFFIX}"))


#: A journal's watermark (its last sequence number in the store) is the store's ``meta`` row
#: ``journal:<session id>``, advanced in the same transaction as the rows (labtui.store.feed).
WATERMARK_PREFIX = "journal:"


def watermark_key(journal: Path) -> str:
    """The ``meta`` key of a journal's watermark."""
    return WATERMARK_PREFIX + journal.stem


def lock_path(journal: Path) -> Path:
    """The owner's lock file of a journal (``<session>.lock``)."""
    return journal.with_suffix(".lock")


def encode(event: Event) -> tuple[str, str]:
    """An event as (kind, JSON body) for one journal row."""
    fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    return type(event).__name__, json.dumps(fields, default=str)


def decode(kind: str, body: str) -> Event:
    """The event of one journal row; StoreError for a kind this labtui does not know or a body it cannot read."""
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        raise StoreError(f"journal row of unknown kind {kind!r}")
    known = {f.name for f in dataclasses.fields(cls)}  # a field a newer labtui added is left out, not fatal
    try:
        fields = json.loads(body)
        if kind == "Log" and "kind" in fields:  # a journal written before Log.kind became Log.category
            fields.setdefault("category", fields.pop("kind"))
        event: Event = cls(**{name: value for name, value in fields.items() if name in known})
    except (ValueError, TypeError, AttributeError) as exc:  # not JSON, not an object, a field missing
        raise StoreError(f"journal row of kind {kind} unreadable: {exc}") from None
    return event


def _connect(path: Path, *, create: bool) -> sqlite3.Connection:
    mode = "rwc" if create else "rw"
    con = sqlite3.connect(f"file:{path}?mode={mode}", uri=True, isolation_level=None, check_same_thread=False)
    con.execute("PRAGMA busy_timeout = 5000")
    return con


class Journal:
    """The append side of one session's journal; owned (flock) by this process until `close`."""

    def __init__(self, path: Path, con: sqlite3.Connection, lock_fd: int) -> None:
        self.path = path
        self._con = con
        self._lock_fd = lock_fd
        #: Rows appended by this process (for benchmarks and notices).
        self.appended = 0

    @classmethod
    def create(cls, store: Path, session_id: str) -> Journal:
        """A new journal for `session_id` beside `store` (directory 0700, files 0600)."""
        directory = journal_dir(store)
        path = directory / f"{session_id}{_SUFFIX}"
        try:
            make_private_dirs(directory)
            lock_fd = os.open(lock_path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot create the journal {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # before the journal exists: never adopted early
            old_umask = os.umask(0o077)
            try:
                con = _connect(path, create=True)
                con.execute("PRAGMA journal_mode = WAL")
                con.execute("PRAGMA synchronous = NORMAL")
                con.execute(_DDL)
            finally:
                os.umask(old_umask)
        except (OSError, sqlite3.Error) as exc:
            os.close(lock_fd)
            raise StoreError(f"cannot create the journal {path}: {exc}") from None
        return cls(path, con, lock_fd)

    def append(self, event: Event) -> None:
        """Append one event; committed (safe from a crash of this process) when this returns.

        StoreError when the journal cannot take it (a full disk).
        """
        with self._failing():
            self._con.execute("INSERT INTO events (kind, body) VALUES (?, ?)", encode(event))
        self.appended += 1

    def append_all(self, events: Sequence[Event]) -> None:
        """Append several events in one transaction (a batch's intents), committed when this returns."""
        with self._failing():
            self._con.execute("BEGIN")
            try:
                self._con.executemany("INSERT INTO events (kind, body) VALUES (?, ?)", map(encode, events))
                self._con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._con.execute("ROLLBACK")
                raise
        self.appended += len(events)

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        """SQLite's errors as a StoreError that names the journal."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"cannot append to the journal {self.path}: {exc}") from exc

    def close(self, *, delete: bool = False) -> None:
        """Stop appending and let go of the owner's lock: the journal can now be adopted.

        delete: the store holds everything it had (a feed drained it): remove its files first.
        """
        with contextlib.suppress(sqlite3.Error):
            self._con.close()
        if delete and self._lock_fd >= 0:
            remove(self.path)
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1


def read_events(path: Path, after: int, limit: int) -> list[tuple[int, Event]]:
    """Up to `limit` events of the journal at `path` after sequence number `after`, in order."""
    con = _connect(path, create=False)
    try:
        if not _has_events_table(con):  # a journal its writer is creating this moment
            return []
        rows = con.execute(
            "SELECT seq, kind, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
        ).fetchall()
    finally:
        con.close()
    return [(seq, decode(kind, body)) for seq, kind, body in rows]


def _has_events_table(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'events'").fetchone()[0] > 0


@contextlib.contextmanager
def adopted(path: Path) -> Iterator[bool]:
    """Hold a journal's owner lock if its writer has finished or died: True when held (adopt it)."""
    try:
        fd = os.open(lock_path(path), os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:  # removed by whoever fed it last
        yield False
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def remove(path: Path) -> None:
    """Delete a fed journal: its SQLite files, then its lock file (the caller holds the lock)."""
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm"), lock_path(path)):
        with contextlib.suppress(FileNotFoundError):
            file.unlink()


_LIFECYCLE = ("SessionStarted", "SessionEnded", "InstanceCreating", "InstanceReady", "InstanceDestroying",
              "InstanceDestroyed")


@dataclass
class Pending:
    """Sessions and instance rows as the journals of `store` tell them, whether or not the store has them yet."""

    #: status by session id ('running' until its end is journalled)
    statuses: dict[str, str] = field(default_factory=dict)
    #: open instance rows by (session, instance): (host, backend, state)
    open_rows: dict[tuple[str, str], tuple[str, str, str]] = field(default_factory=dict)
    #: every (session, instance) pair journalled
    recorded: set[tuple[str, str]] = field(default_factory=set)
    #: pairs whose instance a journal recorded as gone (destroyed, or closed by a reconcile)
    closed: set[tuple[str, str]] = field(default_factory=set)
    #: sessions whose journal's writer is gone while they were still running
    crashed: set[str] = field(default_factory=set)

    @property
    def hosts(self) -> set[str]:
        """Hosts with open instance rows or running sessions' instances."""
        return {host for host, _, _ in self.open_rows.values() if host}


def pending(store: Path) -> Pending:
    """What the journals of `store` say of sessions and instances: for reconcile and cleanup when the store
    itself is held or a crashed session's rows never reached it.  Journals that cannot be read are skipped."""
    found = Pending()
    for path in journal_paths(store):
        try:
            rows = _lifecycle_events(path)
        except (sqlite3.Error, StoreError, OSError):
            continue
        started: set[str] = set()
        for event in rows:
            _apply(found, event, started)
        with adopted(path) as gone:
            if gone:
                found.crashed |= {sid for sid in started if found.statuses.get(sid) == "running"}
    return found


def _lifecycle_events(path: Path) -> list[Event]:
    con = _connect(path, create=False)
    try:
        if not _has_events_table(con):
            return []
        marks = ", ".join("?" * len(_LIFECYCLE))
        rows = con.execute(f"SELECT kind, body FROM events WHERE kind IN ({marks}) ORDER BY seq", _LIFECYCLE).fetchall()
    finally:
        con.close()
    return [decode(kind, body) for kind, body in rows]


def _apply(found: Pending, event: Event, started: set[str]) -> None:
    if isinstance(event, SessionStarted):
        found.statuses[event.session_id] = "running"
        started.add(event.session_id)
    elif isinstance(event, SessionEnded):
        found.statuses[event.session_id] = event.status
    elif isinstance(event, InstanceCreating):
        key = (event.session_id, event.instance_id)
        found.recorded.add(key)
        found.open_rows[key] = (event.host, event.backend, "creating")
    elif isinstance(event, (InstanceReady, InstanceDestroying)):
        key = (event.session_id, event.instance_id)
        if key in found.open_rows:
            host, backend, _ = found.open_rows[key]
            state = event.state if isinstance(event, InstanceReady) else "destroying"
            if state == "exited":
                del found.open_rows[key]
            else:
                found.open_rows[key] = (host, backend, state)
    elif isinstance(event, InstanceDestroyed):
        found.open_rows.pop((event.session_id, event.instance_id), None)
        found.closed.add((event.session_id, event.instance_id))
