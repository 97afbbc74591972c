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
    out = Path(args.out) if args.out else Path("reports") / "-vs-".join(ids)
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
    written = export_session(path, sid, Path(args.out) if args.out else Path("exports") / sid, args.format)
    for file in written.values():
        print(file)
    return 0
