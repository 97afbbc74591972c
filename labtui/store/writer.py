"""The single writer of a labtui store: events in, batched Arrow inserts out.

`StoreWriter.add` only buffers (cheap, safe on the event loop).  `flush` writes
everything buffered in one transaction, one Arrow batch per table.  Rows that
change over time (sessions, steps, instances, hosts) are merged per primary key
in memory and upserted; a later event fills columns without erasing earlier
ones (NULL never overwrites a stored value).
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from labtui.core.events import (
    Event,
    HostFacts,
    InstanceCreating,
    InstanceDestroyed,
    InstanceDestroying,
    InstanceReady,
    SessionEnded,
    SessionStarted,
    StepEnded,
    StepStarted,
)
from labtui.core.paths import make_private_dirs, remove_dirs
from labtui.store.access import attach, check_writable, connect, memory_connection, writing_turn
from labtui.store.crashes import controller_name, mark_crashed_sessions
from labtui.store.errors import StoreError, damaged, first_line
from labtui.store.files import check_version_fast, create_store, restrict_files
from labtui.store.schema import check_store, ensure_schema
from labtui.store.shapes import APPEND_TABLES, TABLES, TableShape, table_batches


class StoreWriter:
    """Buffers events and writes them to one DuckDB store in batches.

    The writer holds the DuckDB file only while it writes: `flush` attaches
    it to the writer's in-memory DuckDB (waiting briefly while a reader or
    another writer has it), writes one transaction and detaches it again, so
    readers and other runs share the store (docs/store.md).
    """

    def __init__(self, path: Path, crashed: list[str]) -> None:
        self.path = path
        self.crashed = crashed  # sessions marked 'crashed' when the store was opened
        self._lock = threading.Lock()  # guards the buffers
        self._write_lock = threading.Lock()  # one flush at a time
        self._appends: dict[str, list[Event]] = {}  # append-only tables keep the events themselves
        self._upserts: dict[str, dict[tuple[Any, ...], dict[str, Any]]] = {}
        self._pending = 0
        self._memory: duckdb.DuckDBPyConnection | None = None  # flushes attach the store to it
        #: seconds each flush took (turnstile, attach, write, detach), newest last; for benchmarks
        self.flush_times: collections.deque[float] = collections.deque(maxlen=1000)

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, wait: float | None = None) -> StoreWriter:
        """Check (or create) the store at `path` for writing, private to this user.

        An existing file must be a labtui store of this or an older schema
        version; anything else is refused before a byte of it is written.  The
        file is not held open afterwards.  StoreBusy when another program holds
        it for `wait` seconds (WRITE_WAIT_S).
        """
        path = Path(path).expanduser()
        created: list[Path] = []
        if not path.exists() and not path.is_symlink():
            try:
                created = make_private_dirs(path.parent)
            except OSError as exc:
                raise StoreError(f"cannot create the store's directory {exc.filename}: {exc.strerror}") from None
            try:
                create_store(path)
            except BaseException:
                remove_dirs(created)
                raise
        check_writable(path, wait)
        with writing_turn(path, wait):
            con = connect(path, read_only=False, wait=wait)
            try:
                check_store(con, path, allow_empty=True)
                ensure_schema(con, path)
                crashed = mark_crashed_sessions(con)
            except duckdb.Error as exc:
                raise damaged(path, exc) or StoreError(f"cannot prepare store {path}: {first_line(str(exc))}") from exc
            finally:
                con.close()
        restrict_files(path)
        return cls(path, crashed)

    def __enter__(self) -> StoreWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pending(self) -> int:
        """Rows waiting for the next flush."""
        return self._pending

    def add(self, event: Event) -> None:
        """Buffer one event; nothing touches the database until `flush`."""
        table = APPEND_TABLES.get(type(event))
        if table is not None:  # the hot path: results, samples, log lines
            with self._lock:
                self._appends.setdefault(table, []).append(event)
                self._pending += 1
            return
        handler = _HANDLERS.get(type(event))
        if handler is None:
            raise TypeError(f"not a labtui event: {event!r}")
        with self._lock:
            handler(self, event)

    def flush(self) -> int:
        """Write every buffered row in one transaction; returns the number of rows.

        Attaches the store (waiting up to WRITE_WAIT_S while others hold it),
        writes and detaches it.  When the store stays busy, StoreBusy is
        raised and the rows stay buffered.  When the write fails, the transaction is
        rolled back, the batch is dropped (so one bad row cannot block every
        later write) and StoreError is raised.
        """
        with self._write_lock:
            if not self._pending:
                return 0
            with self.attached() as con:
                return self.write_buffered(con)

    def write_buffered(
        self, con: duckdb.DuckDBPyConnection, then: Callable[[duckdb.DuckDBPyConnection], None] | None = None
    ) -> int:
        """Write every buffered row into the attached store in one transaction; `then` runs inside it.

        The buffers are emptied first: a failed write drops them (StoreError) and commits nothing.
        """
        with self._lock:
            appends, upserts = self._appends, self._upserts
            count, self._pending = self._pending, 0
            self._appends, self._upserts = {}, {}
        try:
            check_version_fast(con, self.path)
            self._write(con, appends, upserts, then)
        except duckdb.Error as exc:
            raise StoreError(f"could not write {count} rows to {self.path}: {exc}") from exc
        return count

    def take_batches(self) -> list[tuple[TableShape, pa.Table]]:
        """Empty the buffers into one Arrow batch per table, as a flush would write them (for readers'
        views of a journal the store has not caught up with: labtui.store.overlay)."""
        with self._lock:
            appends, upserts = self._appends, self._upserts
            self._pending = 0
            self._appends, self._upserts = {}, {}
        return table_batches(appends, upserts)

    def close(self) -> None:
        """Flush what is buffered and let go of the in-memory DuckDB (the store is not held between flushes)."""
        try:
            self.flush()
        finally:
            self._release()

    def _release(self) -> None:
        """Close the in-memory DuckDB (a later flush makes a new one)."""
        with self._write_lock:
            if self._memory is not None:
                with contextlib.suppress(duckdb.Error):
                    self._memory.close()
                self._memory = None

    @contextlib.contextmanager
    def attached(self, wait: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """The store attached (read-write, as the default catalog) to the writer's in-memory DuckDB,
        under the store's writing turn; StoreBusy when it stays held for `wait` s (WRITE_WAIT_S).

        DETACH releases the file and checkpoints the write into it.  Should
        DETACH fail (a full disk), the in-memory DuckDB is closed instead, which
        releases the file too, and a new one serves the next write.
        """
        began = time.perf_counter()
        with writing_turn(self.path, wait):
            if self._memory is None:
                self._memory = memory_connection()
            con = self._memory
            attach(con, self.path, "lab", wait)
            try:
                con.execute("USE lab")
                yield con
            finally:
                try:
                    con.execute("USE memory")
                    con.execute("DETACH lab")
                except duckdb.Error:
                    self._memory = None
                    with contextlib.suppress(duckdb.Error):
                        con.close()
        self.flush_times.append(time.perf_counter() - began)
        restrict_files(self.path)

    def insert_arrow(self, table: str, batch: pa.Table) -> int:
        """Bulk load: insert an Arrow table into an append-only table in one transaction.

        `batch`'s columns are matched by name to columns of `table` (results,
        resources, observer or events); missing columns are NULL.  Buffered rows are
        flushed first, so a session row written through `add` precedes its
        results.  StoreError (nothing inserted) when the write fails.
        """
        if table not in APPEND_TABLES.values():
            raise ValueError(f"insert_arrow loads results, resources, observer or events, not {table!r}")
        self.flush()
        names = ", ".join(batch.column_names)
        view = f"_labtui_bulk_{table}"
        with self._write_lock, self.attached() as con:
            try:
                check_version_fast(con, self.path)
                con.register(view, batch)
                try:
                    con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM {view}")
                finally:
                    con.unregister(view)
            except duckdb.Error as exc:
                raise StoreError(f"could not write {batch.num_rows} rows to {self.path}: {exc}") from exc
        return batch.num_rows

    def _write(
        self,
        con: duckdb.DuckDBPyConnection,
        appends: dict[str, list[Event]],
        upserts: dict[str, dict[tuple[Any, ...], dict[str, Any]]],
        then: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    ) -> None:
        """Register one Arrow batch per table, then insert them all (and run `then`) in one transaction."""
        batches = table_batches(appends, upserts)
        for table, batch in batches:  # outside the transaction: unregistering fails once it aborts
            con.register(table.batch_view, batch)
        try:
            con.execute("BEGIN TRANSACTION")
            try:
                for table, _ in batches:
                    con.execute(table.insert_sql())
                if then is not None:
                    then(con)
                con.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(duckdb.Error):  # COMMIT itself may have ended it
                    con.execute("ROLLBACK")
                raise
        finally:
            for table, _ in batches:
                con.unregister(table.batch_view)

    def _upsert(self, table: str, **values: Any) -> None:
        key = tuple(values[k] for k in TABLES[table].key)
        rows = self._upserts.setdefault(table, {})
        if key not in rows:
            rows[key] = {}
            self._pending += 1
        rows[key].update((k, v) for k, v in values.items() if v is not None)

    def _session_started(self, e: SessionStarted) -> None:
        self._upsert(
            "sessions", session_id=e.session_id, suite=e.suite, kind=e.kind, backend=e.backend,
            host=e.host, status="running", started_at=e.ts,
            config=json.dumps(e.config, sort_keys=True, default=str), pid=e.pid,
            controller=controller_name(), tags=json.dumps(e.tags, sort_keys=True) if e.tags else None,
            note=e.note or None,
        )

    def _session_ended(self, e: SessionEnded) -> None:
        self._upsert(
            "sessions", session_id=e.session_id, status=e.status, ended_at=e.ts, message=e.message
        )

    def _host_facts(self, e: HostFacts) -> None:
        self._upsert(
            "hosts", session_id=e.session_id, host=e.host, os=e.os, kernel=e.kernel, arch=e.arch,
            cpu_model=e.cpu_model, cores=e.cores, mem_total_bytes=e.mem_total_bytes,
            backend=e.backend, backend_version=e.backend_version, isolation=e.isolation, ts=e.ts,
        )

    def _step_started(self, e: StepStarted) -> None:
        self._upsert(
            "steps", session_id=e.session_id, repetition=e.repetition, step=e.step,
            steps=e.steps, background=e.background, started_at=e.ts, held_s=e.held_s,
        )

    def _step_ended(self, e: StepEnded) -> None:
        self._upsert(
            "steps", session_id=e.session_id, repetition=e.repetition, step=e.step,
            background=e.background, ended_at=e.ts, ok=e.ok,
        )

    def _instance_creating(self, e: InstanceCreating) -> None:
        self._upsert(
            "instances", session_id=e.session_id, instance_id=e.instance_id, host=e.host,
            backend=e.backend, role=e.role, name=e.name, created_at=e.ts, state="creating",
        )

    def _instance_ready(self, e: InstanceReady) -> None:
        self._upsert(
            "instances", session_id=e.session_id, instance_id=e.instance_id,
            created_at=e.created_at, ready_at=e.ready_at, boot_s=e.boot_s, state=e.state,
        )

    def _instance_destroyed(self, e: InstanceDestroyed) -> None:
        self._upsert(
            "instances", session_id=e.session_id, instance_id=e.instance_id,
            destroyed_at=e.ts, state=e.state,
        )

    def _instance_destroying(self, e: InstanceDestroying) -> None:
        self._upsert("instances", session_id=e.session_id, instance_id=e.instance_id, state="destroying")


_HANDLERS: dict[type, Callable[[StoreWriter, Any], None]] = {
    SessionStarted: StoreWriter._session_started,
    SessionEnded: StoreWriter._session_ended,
    HostFacts: StoreWriter._host_facts,
    StepStarted: StoreWriter._step_started,
    StepEnded: StoreWriter._step_ended,
    InstanceCreating: StoreWriter._instance_creating,
    InstanceReady: StoreWriter._instance_ready,
    InstanceDestroying: StoreWriter._instance_destroying,
    InstanceDestroyed: StoreWriter._instance_destroyed,
}
def record_events(path: str | os.PathLike[str], events: Iterable[Event]) -> list[str]:
    """Write `events` to the store at `path` synchronously; returns sessions marked crashed."""
    with StoreWriter.open(path) as writer:
        for event in events:
            writer.add(event)
        return writer.crashed
