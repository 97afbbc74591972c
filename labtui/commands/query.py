"""`labtui sessions`, `labtui sql` and `labtui info`: reading the store."""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import sys
import threading
from datetime import timedelta
from typing import Any

import duckdb
import pyarrow as pa
from rich.console import Console
from rich.table import Table
from rich.text import Text

from labtui import __version__
from labtui.commands.common import db_path
from labtui.core.errors import UsageError
from labtui.core.paths import bundled_dir
from labtui.store import QueryResult, StoreError, connect_readonly, list_sessions, run_sql
from labtui.store.reader import read_statement

#: `labtui sql --timeout` when none is given, in seconds.
DEFAULT_TIMEOUT_S = 60.0
EXIT_INTERRUPTED = 130
EXIT_TIMEOUT = 1


def cmd_sessions(args) -> int:
    path = db_path(args)
    frame = list_sessions(path)
    table = _plain_table(frame.columns, title=Text(f"sessions in {path}"))
    for row in frame.iter_rows():
        table.add_row(*(Text(_cell(v)) for v in row))
    Console().print(table)
    return 0


def cmd_sql(args) -> int:
    if args.limit < 1:
        raise UsageError(f"--limit must be at least 1, got {args.limit}")
    timeout = getattr(args, "timeout", None)
    timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
    if not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
        raise UsageError(f"--timeout must be a positive number of seconds, got {timeout!r}")
    query = _SqlQuery(db_path(args), args.query, args.limit)
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
    if args.format == "csv":
        out = csv.writer(sys.stdout)
        out.writerow(result.columns)
        out.writerows(result.rows)
    elif args.format == "json":
        json.dump([dict(zip(result.columns, row)) for row in result.rows], sys.stdout, default=_json_default, indent=1)
        sys.stdout.write("\n")
    else:
        table = _plain_table(result.columns)
        for row in result.rows:
            table.add_row(*(Text(_cell(v)) for v in row))
        Console().print(table)
    if result.truncated:
        print(f"{len(result.rows)} of more than {len(result.rows)} rows (raise --limit to see more)", file=sys.stderr)
    return 0


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
            raise UsageError(str(self._error)) from None
        return "done"

    def _stop(self, worker: threading.Thread) -> None:
        self._con.interrupt()
        try:
            worker.join(5.0)
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting, the worker is a daemon
            pass

    def _work(self) -> None:
        try:
            query = read_statement(self._con, self.sql)
            reader = self._con.sql(query).to_arrow_reader(self.limit + 1)
            try:
                columns = list(reader.schema.names)
                rows = _first_rows(reader, self.limit + 1)
            finally:
                reader.close()
            self.result = QueryResult(columns, rows[: self.limit], len(rows) > self.limit, len(rows))
        except BaseException as exc:  # noqa: BLE001 - StoreError, duckdb.Error, ...: reported by the main thread
            self._error = exc
        finally:
            self._done.set()


def _first_rows(reader: Any, count: int) -> list[tuple[Any, ...]]:
    """Up to `count` rows from an Arrow record batch reader, as Python tuples."""
    rows: list[tuple[Any, ...]] = []
    for batch in reader:
        batch = batch.slice(0, count - len(rows))
        columns = []
        for column in batch.columns:
            if pa.types.is_interval(column.type):  # a month is 30 days, as labtui.store does
                columns.append([
                    None if v is None
                    else timedelta(days=v.months * 30 + v.days, microseconds=v.nanoseconds // 1000)
                    for v in column.to_pylist()
                ])
            else:
                columns.append(column.to_pylist())
        rows.extend(zip(*columns))
        if len(rows) >= count:
            break
    return rows


def _plain_table(columns, title: Text | None = None) -> Table:
    """A table whose headers are plain text (column names are data, never markup)."""
    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(Text(str(name)))
    return table


def cmd_info(args) -> int:
    import polars

    path = db_path(args)
    console = Console()
    console.print(f"labtui {__version__}  duckdb {duckdb.__version__}  polars {polars.__version__}", markup=False)
    console.print(f"store: {path}{'' if path.exists() else ' (not created yet)'}", markup=False)
    console.print(f"built-in suites: {bundled_dir('suites')}", markup=False)
    console.print(f"built-in plugins: {bundled_dir('plugins')}", markup=False)
    if path.exists():
        try:
            counts = run_sql(
                path,
                "select (select count(*) from sessions) sessions, (select count(*) from results) results, "
                "(select count(*) from resources) resources, (select count(*) from instances) instances",
            )
        except StoreError as exc:
            console.print(Text(str(exc), style="yellow"))
        else:
            console.print(", ".join(f"{c}: {v}" for c, v in zip(counts.columns, counts.rows[0])), markup=False)
    return 0


def _cell(value) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def _json_default(value):
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat()
    return str(value)
