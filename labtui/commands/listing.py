"""Rows as a table, JSON or CSV: the one writer of every listing command (sessions, sql, instances, ...).

JSON is a list of objects, one per row, keyed by column name (non-finite numbers are null, times ISO 8601);
CSV is a header row and one line per row (null is an empty cell).  A table never cuts a key column (a
session id, an instance or suite name): key columns never wrap and are as wide as their longest value; the
other columns wrap, and when even that does not fit the width they are dropped from the right, with a
one-line note on stderr naming them.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any, Literal, cast

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

from labtui.core.units import MISSING

#: The narrowest a wrapping column is squeezed to; narrower than that it is dropped instead.
MIN_WRAP_WIDTH = 8
#: Cells a table spends on each column besides its text (padding either side and a border), and once.
_PER_COLUMN, _PER_TABLE = 3, 1


class PipeConsole(Console):
    """A rich Console for stdout whose closed pipe raises BrokenPipeError, so that labtui.cli.main ends the
    command with its closed-pipe status (rich's own handler exits 1)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(file=cast(IO[str], _PiecewiseStdout()), **options)

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


#: Characters of a table written to stdout at a time (see _PiecewiseStdout).
_PIECE = 1 << 16


class _PiecewiseStdout(io.TextIOBase):
    """sys.stdout, written a piece at a time.  One large write into a pipe whose reader has gone (a 200,000-row
    table into `head -1`) ends short without an error: the kernel returns the part written and Python takes it
    for the whole.  The next piece's write raises BrokenPipeError, as a closed pipe should."""

    def write(self, text: str) -> int:
        for start in range(0, len(text), _PIECE):
            sys.stdout.write(text[start:start + _PIECE])
        return len(text)

    def flush(self) -> None:
        sys.stdout.flush()

    def isatty(self) -> bool:
        return sys.stdout.isatty()

    def fileno(self) -> int:
        return sys.stdout.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]  # TextIOBase's is an attribute; stdout's is the one
        return sys.stdout.encoding


@dataclass(frozen=True, slots=True)
class Column:
    """A column of a listing: its name (the JSON key and CSV header) and how a table shows it."""

    name: str
    key: bool = False  # an identifier: never wrapped, cut or dropped in a table
    justify: Literal["left", "right"] = "left"
    style: Callable[[Any], str] | None = None  # a table cell's style from its value


def write_rows(fmt: str, columns: Sequence[Column | str], rows: Iterable[Sequence[Any]], *,
               title: str | None = None) -> None:
    """Print rows on stdout as `fmt` ("table", "json" or "csv"); a plain string column is a non-key one."""
    cols = _columns(columns)
    names = [c.name for c in cols]
    if fmt == "json":
        json.dump([{n: _json_value(v) for n, v in zip(names, row)} for row in rows], sys.stdout,
                  default=_json_default, indent=1)
        sys.stdout.write("\n")
    elif fmt == "csv":
        out = csv.writer(sys.stdout)
        out.writerow(names)
        out.writerows([_csv_value(v) for v in row] for row in rows)
    elif fmt == "table":
        print_table(PipeConsole(), cols, [tuple(row) for row in rows], title=title)
    else:
        raise ValueError(f"unknown format {fmt!r}")


def write_record(fmt: str, record: dict[str, Any], *, title: str | None = None) -> None:
    """Print one object: as a JSON object, or as key/value rows (a CSV with the header key,value, or a table)."""
    if fmt == "json":
        json.dump({k: _json_value(v) for k, v in record.items()}, sys.stdout, default=_json_default, indent=1)
        sys.stdout.write("\n")
    else:
        write_rows(fmt, [Column("key", key=True), "value"], record.items(), title=title)


def print_table(console: Console, columns: Sequence[Column | str], rows: Sequence[Sequence[Any]], *,
                title: str | None = None) -> None:
    """A rich table that fits the console's width without cutting a key column (see the module's docstring)."""
    cols = _columns(columns)
    texts = [[cell_text(v) for v in row] for row in rows]
    natural = [max([cell_len(c.name), *(_longest_line(r[i]) for r in texts)]) for i, c in enumerate(cols)]
    need = [w if c.key else min(w, MIN_WRAP_WIDTH) for c, w in zip(cols, natural)]
    shown = list(range(len(cols)))
    while _width(need, shown) > console.width and any(not cols[i].key for i in shown):
        shown.remove(next(i for i in reversed(shown) if not cols[i].key))
    table = Table(title=Text(title) if title else None, title_justify="left")
    for i in shown:
        c = cols[i]
        if c.key:
            table.add_column(Text(c.name), justify=c.justify, no_wrap=True, min_width=natural[i])
        else:
            table.add_column(Text(c.name), justify=c.justify, overflow="fold")
    for row, cells in zip(rows, texts):
        table.add_row(*(Text(cells[i], style=_style(cols[i], row[i])) for i in shown))
    width = console.width
    console.width = max(width, _width(need, shown))  # key columns alone wider than the console: print them whole
    try:
        console.print(table)
    finally:
        console.width = width
    dropped = [cols[i].name for i in range(len(cols)) if i not in shown]
    if dropped:
        print(f"not shown in {width} columns: {', '.join(dropped)} (a wider terminal, COLUMNS=N or "
              "--format json shows every column)", file=sys.stderr)


def print_uncut(console: Console, table: Table) -> None:
    """Print a table none of whose cells may be cut or folded (a metric's name, a number): at the console's
    width when it fits, else as wide as its cells need (a terminal wraps the long lines; a pipe keeps them
    whole, for grep and cut)."""
    from rich.measure import Measurement

    need = Measurement.get(console, console.options.update(width=1 << 14), table).maximum
    if need > console.width:
        console = PipeConsole(width=need)
    console.print(table)


def cell_text(value: Any) -> str:
    """A value as a table shows it: MISSING for none, six significant digits, times to the second, yes/no."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _columns(columns: Sequence[Column | str]) -> list[Column]:
    return [c if isinstance(c, Column) else Column(c) for c in columns]


def _style(column: Column, value: Any) -> str:
    return column.style(value) if column.style is not None else ""


def _width(need: list[int], shown: list[int]) -> int:
    return sum(need[i] + _PER_COLUMN for i in shown) + _PER_TABLE


def _longest_line(text: str) -> int:
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _json_value(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _json_default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    return str(value)


def _csv_value(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return value
