"""`labtui sessions`, `labtui sql` and `labtui info`: reading the store."""

from __future__ import annotations

import math
import re
import sys
import threading
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from labtui import __version__
from labtui.commands.common import db_path
from labtui.commands.listing import Column, write_record, write_rows
from labtui.core.errors import UsageError
from labtui.core.liveness import session_is_running
from labtui.core.paths import bundled_dir
from labtui.store import QueryResult, StoreError, connect_readonly, fetch_frame, list_sessions, resolve_session, run_sql
from labtui.store.delete import delete_sessions
from labtui.store.errors import damaged
from labtui.store.overlay import behind_note
from labtui.store.reader import marked_status, query_result

#: `labtui sql --timeout` when none is given, in seconds.
DEFAULT_TIMEOUT_S = 60.0
EXIT_INTERRUPTED = 130
EXIT_TIMEOUT = 1
#: Columns a table never cuts: what other commands ask for.
_KEY_COLUMNS = ("session_id", "suite")


def cmd_sessions(args) -> int:
    path = db_path(args)
    if getattr(args, "sessions_command", None) == "rm":
        return _remove_sessions(path, args.ids, yes=args.yes)
    frame = list_sessions(path)
    pending = frame.filter(~pl.col("in_store"))
    if args.format == "table":
        frame = marked_status(frame)
    columns = [Column(name, key=name in _KEY_COLUMNS) for name in frame.columns]
    write_rows(args.format, columns, frame.iter_rows(), title=f"sessions in {path}")
    if not pending.is_empty():
        marked = "*" if args.format == "table" else "in_store false"
        print(f"note ({marked}): {behind_note(pending['session_id'].to_list())}", file=sys.stderr)
    return 0


def cmd_sql(args) -> int:
    if args.limit < 1:
        raise UsageError(f"--limit must be at least 1, got {args.limit}")
    timeout = getattr(args, "timeout", None)
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout!r}")
    query = _SqlQuery(db_path(args), _query_text(args.query), args.limit)
    outcome = query.run(timeout)
    if outcome == "interrupted":
        print("labtui sql: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    if outcome == "timeout":
        print(f"labtui sql: the query ran longer than {timeout:g} s and was stopped (raise --timeout)",
              file=sys.stderr)
        return EXIT_TIMEOUT
    result = query.result
    assert result is not None
    columns = [Column(str(name), key=name in _KEY_COLUMNS) for name in result.columns]
    write_rows(args.format, columns, result.rows)
    if result.truncated:
        print(f"{len(result.rows)} of more than {len(result.rows)} rows (raise --limit to see more)", file=sys.stderr)
    if result.from_journals:
        print(f"note: {behind_note(result.from_journals)}", file=sys.stderr)
    return 0


def _query_text(query: str) -> str:
    """The query as given, or read from standard input for "-"."""
    if query != "-":
        return query
    text = sys.stdin.read()
    if not text.strip():
        raise UsageError("no query on standard input (labtui sql - reads it from there)")
    return text


class _SqlQuery:
    """One read-only query on its own connection, in a worker thread, so it can be interrupted.

    The main thread waits for it; on Ctrl-C (KeyboardInterrupt) or when the
    timeout passes it calls DuckDB's connection.interrupt(), which stops the
    query where it is.  The connection is read-only: the store is never changed.
    """

    def __init__(self, path, sql: str, limit: int) -> None:
        self.path, self.sql, self.limit = path, sql, limit
        self.result: QueryResult | None = None
        self._error: BaseException | None = None
        self._con: Any = None
        self._done = threading.Event()

    def run(self, timeout: float) -> str:
        """'done', 'timeout' or 'interrupted'; UsageError when the query is refused or fails."""
        self._con = connect_readonly(self.path)
        worker = threading.Thread(target=self._work, name="labtui-sql", daemon=True)
        try:
            worker.start()
            try:
                finished = self._done.wait(timeout)
            except KeyboardInterrupt:
                self._stop(worker)
                return "interrupted"
            if not finished:
                self._stop(worker)
                return "timeout"
            worker.join()  # it has finished: let it leave DuckDB before the connection closes
        finally:
            if not worker.is_alive():
                self._con.close()
        if self._error is not None:
            raise damaged(self.path, self._error) or UsageError(said(self._error)) from None
        return "done"

    def _stop(self, worker: threading.Thread) -> None:
        self._con.interrupt()
        try:
            worker.join(5.0)
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, the worker is a daemon
            pass

    def _work(self) -> None:
        try:
            self.result = query_result(self._con, self.sql, self.limit)
        except BaseException as exc:  # reported below
            self._error = exc
        finally:
            self._done.set()


#: DuckDB's kinds of a mistake in the query itself, whose words say what it is ("Table with name x does not exist!").
_QUERY_MISTAKES = ("Catalog Error: ", "Binder Error: ", "Parser Error: ")
#: The query DuckDB echoes back (``LINE 1: selec 1``) and the carets under the place it means.
_ECHO = re.compile(r"LINE \d+:.*|\^+")


def said(error: BaseException) -> str:
    """What DuckDB said of a query, as one line: its hint kept ("Did you mean ..."), the query it echoes back
    with carets left out (the line cannot point), and the kind dropped from a mistake in the query."""
    lines = [line.strip() for line in str(error).splitlines()]
    text = " ".join(line for line in lines if line and not _ECHO.fullmatch(line))
    for kind in _QUERY_MISTAKES:
        if text.startswith(kind):
            text = text.removeprefix(kind)
            if text[1:2].islower():  # "Table with name", not "FROM"
                text = text[0].lower() + text[1:]
    return text


#: The tables `labtui info` counts the rows of (null when there is no store).
_COUNTED = ("sessions", "results", "resources", "instances")


def cmd_info(args) -> int:
    """Versions, paths and the store's row counts: one JSON object with the same keys always, or key/value rows."""
    import polars

    path = db_path(args)
    record: dict[str, Any] = {
        "labtui": __version__, "duckdb": duckdb.__version__, "polars": polars.__version__,
        "store": str(path), "store_exists": path.exists(),
        "suites_dir": str(bundled_dir("suites")), "plugins_dir": str(bundled_dir("plugins")),
    }
    record.update(dict.fromkeys(_COUNTED), store_error=None)
    if path.exists():
        try:
            counts = run_sql(path, "select " + ", ".join(f"(select count(*) from {t}) {t}" for t in _COUNTED))
        except StoreError as exc:
            record["store_error"] = str(exc)
        else:
            record.update(zip(counts.columns, counts.rows[0]))
    write_record(args.format, record, title="labtui info")
    return 0


def _remove_sessions(path: Path, prefixes: list[str], *, yes: bool) -> int:
    """List the sessions, ask, then delete their rows; a session still running is refused, never deleted."""
    ids = list(dict.fromkeys(resolve_session(path, prefix) for prefix in prefixes))
    rows = fetch_frame(path, "SELECT session_id, suite, status, started_at FROM sessions "
                             "WHERE list_contains(?, session_id) ORDER BY started_at", [ids]).rows()
    running = [sid for sid, _, status, _ in rows if status == "running" and session_is_running(sid)]
    if running:
        raise UsageError(f"session {', '.join(running)} is running: stop it before deleting it (nothing was deleted)")
    print(f"to delete from {path}:")
    for sid, suite, status, started in rows:
        print(f"  {sid}  {suite}  {status}  {started}")
    if not yes and not _confirmed(f"delete these {len(ids)} session(s) and all their rows? [y/N] "):
        print("nothing deleted", file=sys.stderr)
        return 1
    deleted = delete_sessions(path, ids)
    print(f"deleted {len(ids)} session(s): " + ", ".join(f"{n} {table}" for table, n in deleted.items() if n))
    return 0


def _confirmed(question: str) -> bool:
    """Ask on the terminal; no answer (end of input) is no."""
    try:
        return input(question).strip().lower() in ("y", "yes")
    except EOFError:
        print(file=sys.stderr)
        return False
