"""`labtui import`: results measured elsewhere into a new session of the store.

A CSV (columns benchmark, metric, value, unit, better and optionally step,
background, repetition, host; other columns are ignored, so a `labtui export`
reads back) or the output of a real tool read by `labtui.parsers`, one file
per repetition.  The session is recorded with kind 'import', with its results,
in one transaction (labtui.store.bulk): a failed import records nothing.

A CSV goes through DuckDB's own reader (`read_csv` with the dialect and the
types given, no sniffing) straight into the store's results table, with every
check in SQL; a bad row fails the INSERT, which is rolled back, and the file
is then read once more in an in-memory DuckDB to name the line and the column.
A file bound for a new store is checked that way before the store is made.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import duckdb

from labtui.commands.common import db_path
from labtui.core.errors import UsageError
from labtui.core.events import SessionStarted
from labtui.parsers import ParseError
from labtui.parsers.common import Better
from labtui.parsers.registry import IMPORT_FORMATS, PARSERS

_REQUIRED = ("benchmark", "metric", "value", "unit", "better")
_OPTIONAL_INTS = ("repetition", "step", "background")
_SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: A Result's fields after the session id: repetition, step, background, host,
#: instance id (none for imports), benchmark, metric, value, unit, better.
Row = tuple[int, int, int, str, str, str, str, float, str, Better]
#: The results columns an import fills (ts is the import's time; placement stays NULL).
_RESULT_COLUMNS = ("session_id", "repetition", "step", "background", "host", "instance_id",
                   "benchmark", "metric", "value", "unit", "better", "ts")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1  # results.step and friends are INTEGER


def cmd_import(args) -> int:
    from labtui.store import SessionExists, record_session

    if not _SESSION_NAME.fullmatch(args.session):
        raise UsageError(f"--session {args.session!r}: use letters, digits, '.', '_' and '-' (starting with a letter or digit)")
    files = [Path(f) for f in args.files]
    fmt = args.format or _format_from_name(files)
    if fmt not in IMPORT_FORMATS:
        raise UsageError(f"--format {fmt!r}: choose one of {', '.join(IMPORT_FORMATS)}")
    path = db_path(args)
    load: CsvLoad | ToolLoad
    if fmt == "csv":
        load = CsvLoad(args, files)  # every header is read here: a missing column is refused before the store is opened
        if not path.exists():
            load.check()  # a new store is made only for files that load
    else:
        load = ToolLoad(args, fmt, files)
    if not path.exists():
        _create_store(path)
    started = SessionStarted(args.session, "import", "import", "", args.host,
                             {"format": fmt, "files": [str(f) for f in files]}, os.getpid())
    try:
        record_session(path, started, load.insert)
    except SessionExists as exc:
        raise UsageError(str(exc)) from None
    print(f"session {args.session}: {load.count} results from {len(files)} file(s) ({fmt}) in {path}")
    return 0


def _format_from_name(files: list[Path]) -> str:
    if all(f.suffix.lower() == ".csv" for f in files):
        return "csv"
    if all(f.name.endswith(".ss") for f in files):
        return "aim9-ss"
    raise UsageError(f"cannot tell the format of {', '.join(map(str, files))}; give --format ({', '.join(IMPORT_FORMATS)})")


def _create_store(path: Path) -> None:
    """A new, empty store at `path`, made by the store's writer (the one place that creates stores)."""
    from labtui.store import StoreWriter

    StoreWriter.open(path).close()


def _done(count: int, files: list[Path]) -> str:
    return f"imported {count} results from {len(files)} file(s)"


# --- a real tool's output -----------------------------------------------------------------------


class ToolLoad:
    """A real tool's outputs, one repetition per file, parsed in Python (a few rows) and inserted as values."""

    def __init__(self, args, fmt: str, files: list[Path]) -> None:
        self.args, self.files = args, files
        self.rows = [row for number, file in enumerate(files) for row in _tool_rows(file, fmt, number, args)]
        self.count = len(self.rows)

    def insert(self, con: duckdb.DuckDBPyConnection) -> str:
        """The rows into the store's results (run 0, as the writer records a Result); the session's end message."""
        if self.rows:
            marks = ", ".join("?" * (len(_RESULT_COLUMNS) - 1))
            con.executemany(f"INSERT INTO results ({', '.join(_RESULT_COLUMNS)}, run) VALUES ({marks}, now(), 0)",
                            [(self.args.session, *row) for row in self.rows])
        return _done(self.count, self.files)


def _tool_rows(file: Path, fmt: str, number: int, args) -> list[Row]:
    try:
        text = file.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{file}: not {fmt} output: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        readings = PARSERS[fmt].parse(text)
    except ParseError as exc:
        raise UsageError(f"{file}: not {fmt} output: {exc}") from None
    return [(args.repetition + number, args.step, args.background, args.host, "",
             r.benchmark, r.metric, r.value, r.unit, r.better) for r in readings]


# --- a CSV, through DuckDB ----------------------------------------------------------------------


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _checks(col: dict[str, str]) -> list[tuple[str, str]]:
    """(SQL condition of a bad row, problem) in the order the messages are given for one row."""
    value, better = col["value"], col["better"]
    checks = [
        (f"{value} IS NULL", "value"),
        (f"NOT isfinite({value})", "finite"),
        (f"{better} IS NULL OR {better} NOT IN ('higher', 'lower')", "better"),
        (f"coalesce({col['benchmark']}, '') = ''", "benchmark"),
        (f"coalesce({col['metric']}, '') = ''", "metric"),
    ]
    for name in _OPTIONAL_INTS:
        if name in col:
            checks.append((f"NOT {_whole(col[name])}", name))
    return checks


def _whole(c: str) -> str:
    """SQL: the DOUBLE `c` is a whole number in INTEGER range (a NULL stays NULL)."""
    return f"({c} = trunc({c}) AND {c} BETWEEN {_INT_MIN} AND {_INT_MAX})"


class _CsvFile:
    """One CSV file as DuckDB reads it: positional columns c0, c1, ... with explicit types."""

    def __init__(self, file: Path, header: list[str]) -> None:
        self.file, self.header = file, header
        self.index: dict[str, int] = {}
        for i, name in enumerate(header):
            self.index.setdefault(name, i)  # a repeated column name: the first one counts
        types = {name: "VARCHAR" for name in ("benchmark", "metric", "unit", "better", "host")}
        types.update({name: "DOUBLE" for name in ("value", *_OPTIONAL_INTS)})
        self.col = {name: f"c{i}" for name, i in self.index.items()}
        self.columns = {f"c{i}": types.get(name, "VARCHAR") if self.index[name] == i else "VARCHAR"
                        for i, name in enumerate(header)}

    def reader(self, *, rejects: bool) -> str:
        """read_csv with the dialect and the types fixed (no sniffing): RFC 4180, a header line, UTF-8."""
        columns = "{" + ", ".join(f"{_sql_text(k)}: {_sql_text(v)}" for k, v in self.columns.items()) + "}"
        keep = ", store_rejects = true, rejects_scan = '_rejects_scan', rejects_table = '_rejects'" if rejects else ""
        return (f"read_csv({_sql_text(str(self.file))}, header = true, auto_detect = false, delim = ',', "
                f"quote = '\"', escape = '\"', columns = {columns}{keep})")


class CsvLoad:
    """CSV files loaded by DuckDB's read_csv with explicit types straight into the store; validated in SQL.

    Every check is a guard in the INSERT (value a finite number, better
    'higher' or 'lower', benchmark and metric not empty, step, background and
    repetition whole numbers in INTEGER range): a bad row, or a line DuckDB
    cannot parse or cast, fails it.  `check_file` then finds the file's first
    problem: it reads the file in an in-memory DuckDB (nothing is stored),
    where such lines land in DuckDB's reject table with their line and column
    and the checks are counted in SQL, and raises a UsageError naming the
    file, the line and the column.
    """

    def __init__(self, args, files: list[Path]) -> None:
        self.args = args
        self.count = 0
        self.files = [_csv_file(file) for file in files]

    def check(self) -> None:
        """Read and validate every file without the store; UsageError naming the first bad line."""
        for csv_file in self.files:
            self.check_file(csv_file)

    def insert(self, con: duckdb.DuckDBPyConnection) -> str:
        """Every file into the store's results (inside the session's transaction); the session's end message."""
        self.count = 0
        for csv_file in self.files:
            try:
                rows = con.execute(self._insert_sql(csv_file)).fetchall()[0][0]
            except duckdb.Error:
                self.check_file(csv_file)  # the file's first problem, as a UsageError
                raise  # the file is fine: the store failed
            if not rows:
                raise UsageError(f"{csv_file.file}: no result lines after the header")
            self.count += rows
        return _done(self.count, [f.file for f in self.files])

    def check_file(self, csv_file: _CsvFile) -> None:
        """Read and validate one file in an in-memory DuckDB; UsageError naming its first bad line."""
        file = csv_file.file
        checks = _checks(csv_file.col)
        bad = " OR ".join(f"({cond})" for cond, _ in checks)
        con = duckdb.connect(":memory:")
        try:
            rows, invalid = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE {bad}) FROM {csv_file.reader(rejects=True)}"
            ).fetchall()[0]
            rejected = con.execute(
                "SELECT line, column_idx, error_type, csv_line, error_message FROM _rejects ORDER BY line LIMIT 1"
            ).fetchall()
            first_invalid = []
            if invalid:  # which row: only now pay for row numbers
                case = " ".join(f"WHEN {cond} THEN '{name}'" for cond, name in checks)
                first_invalid = con.execute(
                    f"SELECT ordinality - 1, CASE {case} END FROM {csv_file.reader(rejects=False)} WITH ORDINALITY "
                    f"WHERE {bad} ORDER BY ordinality LIMIT 1"
                ).fetchall()
        except duckdb.IOException as exc:
            raise UsageError(f"cannot read {file}: {_first_line(exc)}") from None
        except duckdb.Error as exc:
            raise UsageError(f"{file}: {_first_line(exc)}") from None
        finally:
            con.close()
        problems = []
        if rejected:
            problems.append(_rejected(csv_file, *rejected[0]))
        if first_invalid:
            problems.append(_invalid(csv_file, *first_invalid[0]))
        if problems:
            raise UsageError(min(problems)[1])
        if not rows:
            raise UsageError(f"{file}: no result lines after the header")

    def _insert_sql(self, csv_file: _CsvFile) -> str:
        col, a = csv_file.col, self.args
        refused = _sql_text(f"{csv_file.file}: a row fails labtui import's checks")

        def guarded(expression: str, condition: str) -> str:
            return f"CASE WHEN {condition} THEN {expression} ELSE error({refused}) END"

        ints = {}
        for name in _OPTIONAL_INTS:
            default = int(getattr(a, name))
            if name in col:
                c = f"coalesce({col[name]}, {default})"
                ints[name] = guarded(f"CAST({c} AS INTEGER)", _whole(c))
            else:
                ints[name] = str(default)
        host = f"coalesce(nullif({col['host']}, ''), {_sql_text(a.host)})" if "host" in col else _sql_text(a.host)
        bench, metric, value, better = col["benchmark"], col["metric"], col["value"], col["better"]
        return (
            f"INSERT INTO results ({', '.join(_RESULT_COLUMNS)}) SELECT {_sql_text(a.session)}, "
            f"{ints['repetition']}, {ints['step']}, {ints['background']}, {host}, '', "
            + guarded(bench, f"coalesce({bench}, '') <> ''") + ", "
            + guarded(metric, f"coalesce({metric}, '') <> ''") + ", "
            + guarded(value, f"isfinite({value})") + ", "
            + f"coalesce({col['unit']}, ''), "
            + guarded(better, f"{better} IN ('higher', 'lower')") + f", now() FROM {csv_file.reader(rejects=False)}"
        )


def _csv_file(file: Path) -> _CsvFile:
    """A CSV file's header read and its required columns checked; UsageError naming what is missing."""
    header = _read_header(file)
    csv_file = _CsvFile(file, header)
    missing = [c for c in _REQUIRED if c not in csv_file.index]
    if missing:
        raise UsageError(f"{file}: line 1: missing column(s) {', '.join(missing)} (have: {', '.join(header)})")
    return csv_file


def _read_header(file: Path) -> list[str]:
    try:
        with file.open("rb") as f:
            first = f.readline()
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror or exc}") from None
    try:
        text = first.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{file}: line 1: not UTF-8 text ({exc.reason})") from None
    try:
        return next(csv.reader([text]), [])
    except csv.Error as exc:
        raise UsageError(f"{file}: line 1: {exc}") from None


def _rejected(csv_file: _CsvFile, line: int, column_idx: int | None, kind: str, text: str,
              message: str) -> tuple[int, str]:
    """A line DuckDB's reader refused, as (line, message)."""
    header = csv_file.header
    where = f"{csv_file.file}: line {line}"
    name = header[column_idx - 1] if column_idx and 0 < column_idx <= len(header) else ""
    if kind == "INVALID ENCODING":
        return line, f"{where}: not UTF-8 text"
    if kind == "CAST" and name:
        fields = next(csv.reader([text]), [])
        got = fields[column_idx - 1] if column_idx and column_idx <= len(fields) else ""  # name implies column_idx
        return line, f"{where}: {name}: {_expected(name)}, got {got!r}"
    if kind == "TOO MANY COLUMNS":
        return line, f"{where}: more fields than the header's {len(header)}"
    if kind == "MISSING COLUMNS":
        return line, f"{where}: fewer fields than the header's {len(header)}"
    return line, f"{where}: {_first_line(message)}"


def _invalid(csv_file: _CsvFile, row: int, problem: str) -> tuple[int, str]:
    """A row that failed a check, as (line, message) with its text as written in the file."""
    line, fields = _record_at(csv_file.file, row)
    where = f"{csv_file.file}: line {line}"

    def text(name: str) -> str:
        i = csv_file.index.get(name)
        return fields[i] if i is not None and i < len(fields) else ""

    if problem == "value":
        return line, f"{where}: value: expected a number, got {text('value')!r}"
    if problem == "finite":
        return line, f"{where}: value: expected a finite number, got {text('value')!r}"
    if problem == "better":
        return line, f"{where}: better must be 'higher' or 'lower', got {text('better')!r}"
    if problem in ("benchmark", "metric"):
        return line, f"{where}: {problem} is empty"
    return line, f"{where}: {problem}: {_expected(problem)}, got {text(problem)!r}"


def _expected(column: str) -> str:
    if column in _OPTIONAL_INTS:
        return "expected a whole number"
    if column == "value":
        return "expected a number"
    return "expected text"


def _record_at(file: Path, row: int) -> tuple[int, list[str]]:
    """The line on which data row `row` (0-based, blank lines skipped) starts, and its fields."""
    with file.open(newline="", encoding="utf-8-sig", errors="replace") as f:
        reader = csv.reader(f)
        next(reader, None)  # the header
        start = reader.line_num + 1
        for fields in reader:
            if not fields:  # a blank line: DuckDB skips it too
                start = reader.line_num + 1
                continue
            if row == 0:
                return start, fields
            row -= 1
            start = reader.line_num + 1
    return start, []


def _first_line(exc: BaseException | str) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
