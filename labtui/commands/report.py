"""`labtui report` (figures and an HTML page of sessions) and `labtui export` (table files)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from labtui.commands.common import db_path
from labtui.core.errors import UsageError

if TYPE_CHECKING:
    from labtui.report.tables import Table


def cmd_report(args) -> int:
    """Write the report of the sessions named; with more than one, their side-by-side table and overlaid charts."""
    from labtui.report import resolve, write_report

    path = db_path(args)
    ids = [resolve(path, s) for s in args.sessions]
    named_twice = sorted({sid for sid in ids if ids.count(sid) > 1})
    if named_twice:
        raise UsageError(f"session {', '.join(named_twice)} is named twice; give each session once")
    out = _out_dir(args, Path("reports") / "-vs-".join(ids))
    written = write_report(path, ids, out, args.format, side_by_side_table(path, ids) if len(ids) > 1 else None)
    if not written:
        print(f"session {' and '.join(ids)} recorded nothing to draw; no files written", file=sys.stderr)
        return 1
    for file in written:
        print(file)
    return 0


def side_by_side_table(path: Path, session_ids: list[str]) -> Table:
    """`labtui compare A B C ...`'s table of the sessions, one column each labelled by backend and host, with the
    relative difference against the first (labtui.commands.compare_side: one definition for both)."""
    from labtui.commands.compare_side import LEGEND, headers, load_side_by_side, row_cells, shows_placement
    from labtui.report.tables import Table

    labels, rows = load_side_by_side(path, [[sid] for sid in session_ids])
    names = [f"{i}: {label}" for i, label in enumerate(labels, 1)]
    placed, scaled = shows_placement(rows)
    return Table(f"side by side, one column per session, samples are repetitions: {LEGEND}",
                 ["benchmark", *headers(names, placed, scaled)],
                 [[key[0], *row_cells(key, cells, placed, scaled)] for key, cells in rows])


def cmd_export(args) -> int:
    from labtui.report import export_session, resolve

    path = db_path(args)
    sid = resolve(path, args.session)
    written = export_session(path, sid, _out_dir(args, Path("exports") / sid), args.format)
    for file in written.values():
        print(file)
    return 0


#: File name endings an --out directory may not have: it would read as one file of that format.
FILE_SUFFIXES = (".html", ".htm", ".png", ".svg", ".pdf", ".csv", ".parquet", ".json", ".txt")


def _out_dir(args, default: Path) -> Path:
    """--out (a directory), else `default`; a name that reads as a file of some format is refused in one line."""
    if not args.out:
        return default
    out = Path(args.out)
    if out.suffix.lower() in FILE_SUFFIXES and not out.is_dir():
        raise UsageError(f"--out {args.out} reads as a {out.suffix} file, but labtui {args.command} --format "
                         f"{args.format} writes its files into a directory: give a directory name (it is created)")
    return out
