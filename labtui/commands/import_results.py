"""`labtui import`: results measured elsewhere into a new session of the store.

A CSV (columns benchmark, metric, value, unit, better and optionally step,
background, repetition, host; other columns are ignored, so a `labtui export`
reads back) or the output of a real tool read by `labtui.parsers`, one file
per repetition.  The session is recorded with kind 'import'.
"""

from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Callable
from pathlib import Path

from labtui.commands.common import UsageError, db_path
from labtui.parsers import ParseError, Reading

_REQUIRED = ("benchmark", "metric", "value", "unit", "better")
_SESSION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: A Result's fields after the session id: repetition, step, background, host,
#: instance id (none for imports), benchmark, metric, value, unit, better.
Row = tuple[int, int, int, str, str, str, str, float, str, str]


def _tool_parsers() -> dict[str, Callable[[str], list[Reading]]]:
    from labtui.parsers import (
        aim9,
        lmbench,
        redis_benchmark,
        stream,
        stress_ng,
        sysbench,
        unixbench,
        wrk,
    )

    return {
        "unixbench": unixbench.parse_unixbench,
        "aim9": aim9.parse_aim9_console,
        "aim9-ss": aim9.parse_aim9_ss,
        "lmbench": lmbench.parse_lmbench,
        "sysbench": sysbench.parse_sysbench,
        "stress-ng": stress_ng.parse_stress_ng,
        "wrk": wrk.parse_wrk,
        "redis-benchmark": redis_benchmark.parse_redis_benchmark_csv,
        "stream": stream.parse_stream,
    }


FORMATS = ("csv", "unixbench", "aim9", "aim9-ss", "lmbench", "sysbench", "stress-ng", "wrk", "redis-benchmark", "stream")


def cmd_import(args) -> int:
    from labtui.events import Event, Result, SessionEnded, SessionStarted
    from labtui.store import StoreError, StoreWriter, session_ids

    if not _SESSION_NAME.fullmatch(args.session):
        raise UsageError(f"--session {args.session!r}: use letters, digits, '.', '_' and '-' (starting with a letter or digit)")
    files = [Path(f) for f in args.files]
    fmt = args.format or _format_from_name(files)
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    path = db_path(args)
    try:
        if path.exists() and args.session in session_ids(path):
            raise UsageError(f"session {args.session!r} already exists in {path}; choose another --session name")
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    rows = [row for number, file in enumerate(files) for row in _rows(file, fmt, number, args)]
    events: list[Event] = [
        SessionStarted(args.session, "import", "import", "", args.host,
                       {"format": fmt, "files": [str(f) for f in files]}, os.getpid())
    ]
    events += [Result(args.session, *row) for row in rows]
    events.append(SessionEnded(args.session, "completed", f"imported {len(rows)} results from {len(files)} file(s)"))
    try:
        with StoreWriter.open(path) as writer:
            for event in events:
                writer.add(event)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    print(f"session {args.session}: {len(rows)} results from {len(files)} file(s) ({fmt}) in {path}")
    return 0


def _format_from_name(files: list[Path]) -> str:
    if all(f.suffix.lower() == ".csv" for f in files):
        return "csv"
    if all(f.name.endswith(".ss") for f in files):
        return "aim9-ss"
    raise UsageError(f"cannot tell the format of {', '.join(map(str, files))}; give --format ({', '.join(FORMATS)})")


def _rows(file: Path, fmt: str, number: int, args) -> list[Row]:
    try:
        text = file.read_text()
    except OSError as exc:
        raise UsageError(f"cannot read {file}: {exc.strerror or exc}") from None
    if fmt == "csv":
        return _csv_rows(file, text, args)
    try:
        readings = _tool_parsers()[fmt](text)
    except ParseError as exc:
        raise UsageError(f"{file}: not {fmt} output: {exc}") from None
    return [(args.repetition + number, args.step, args.background, args.host, "",
             r.benchmark, r.metric, r.value, r.unit, r.better) for r in readings]


def _csv_rows(file: Path, text: str, args) -> list[Row]:
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        raise UsageError(f"{file}: line 1: missing column(s) {', '.join(missing)} (have: {', '.join(reader.fieldnames or [])})")
    rows: list[Row] = []
    for record in reader:
        where = f"{file}: line {reader.line_num}"
        value = _float(record["value"], f"{where}: value")
        better = record["better"]
        if better not in ("higher", "lower"):
            raise UsageError(f"{where}: better must be 'higher' or 'lower', got {better!r}")
        for column in ("benchmark", "metric"):
            if not record[column]:
                raise UsageError(f"{where}: {column} is empty")
        rep, step, background = (_int(record.get(c), getattr(args, c), f"{where}: {c}") for c in ("repetition", "step", "background"))
        host = record.get("host") or args.host
        rows.append((rep, step, background, host, "", record["benchmark"], record["metric"], value, record["unit"] or "", better))
    if not rows:
        raise UsageError(f"{file}: no result lines after the header")
    return rows


def _float(text: str | None, what: str) -> float:
    try:
        value = float(text or "")
    except ValueError:
        raise UsageError(f"{what}: expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise UsageError(f"{what}: expected a finite number, got {text!r}")
    return value


def _int(text: str | None, default: int, what: str) -> int:
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"{what}: expected a whole number, got {text!r}") from None

