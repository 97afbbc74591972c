"""`labtui sessions`, `labtui sql` and `labtui info`: reading the store."""

from __future__ import annotations

import csv
import datetime as dt
import json
import sys

from rich.console import Console
from rich.table import Table

from labtui import __version__
from labtui.commands.common import UsageError, db_path
from labtui.paths import bundled_dir
from labtui.store import StoreError, list_sessions, run_sql


def cmd_sessions(args) -> int:
    path = db_path(args)
    try:
        frame = list_sessions(path)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    table = Table(*frame.columns, title=f"sessions in {path}", title_justify="left")
    for row in frame.iter_rows():
        table.add_row(*(_cell(v) for v in row))
    Console().print(table)
    return 0


def cmd_sql(args) -> int:
    if args.limit < 1:
        raise UsageError(f"--limit must be at least 1, got {args.limit}")
    try:
        result = run_sql(db_path(args), args.query, limit=args.limit)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "csv":
        out = csv.writer(sys.stdout)
        out.writerow(result.columns)
        out.writerows(result.rows)
    elif args.format == "json":
        json.dump([dict(zip(result.columns, row)) for row in result.rows], sys.stdout, default=_json_default, indent=1)
        sys.stdout.write("\n")
    else:
        table = Table(*result.columns)
        for row in result.rows:
            table.add_row(*(_cell(v) for v in row))
        Console().print(table)
    if result.truncated:
        print(f"{len(result.rows)} of more than {len(result.rows)} rows (raise --limit to see more)", file=sys.stderr)
    return 0


def cmd_info(args) -> int:
    import duckdb
    import polars

    path = db_path(args)
    console = Console()
    console.print(f"labtui {__version__}  duckdb {duckdb.__version__}  polars {polars.__version__}")
    console.print(f"store: {path}{'' if path.exists() else ' (not created yet)'}")
    console.print(f"built-in suites: {bundled_dir('suites')}")
    console.print(f"built-in plugins: {bundled_dir('plugins')}")
    if path.exists():
        try:
            counts = run_sql(
                path,
                "select (select count(*) from sessions) sessions, (select count(*) from results) results, "
                "(select count(*) from resources) resources, (select count(*) from instances) instances",
            )
        except StoreError as exc:
            console.print(f"[yellow]{exc}[/]")
        else:
            console.print(", ".join(f"{c}: {v}" for c, v in zip(counts.columns, counts.rows[0])))
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
