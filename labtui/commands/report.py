"""`labtui report` (figures and an HTML page of sessions) and `labtui export` (table files)."""

from __future__ import annotations

import sys
from pathlib import Path

from labtui.commands.common import db_path
from labtui.core.errors import UsageError


def cmd_report(args) -> int:
    from labtui.report import resolve, write_report

    path = db_path(args)
    ids = [resolve(path, s) for s in (args.session, args.session_b) if s]
    if len(ids) == 2 and ids[0] == ids[1]:
        raise UsageError(f"both sessions are {ids[0]}; give two different sessions to compare")
    out = _out_dir(args, Path("reports") / "-vs-".join(ids))
    written = write_report(path, ids, out, args.format)
    if not written:
        print(f"session {' and '.join(ids)} recorded nothing to draw; no files written", file=sys.stderr)
        return 1
    for file in written:
        print(file)
    return 0


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
