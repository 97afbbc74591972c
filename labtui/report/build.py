"""Build a report: pick the figures the sessions' data supports and write them out."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import BinaryIO

from labtui.core.outputs import PrivateOutput
from labtui.report.data import SessionData, distinct_labels, load_session
from labtui.report.page import render_page
from labtui.report.plotting import PLAIN_TEXT, Chart
from labtui.report.scaling import metric_charts
from labtui.report.tables import Table
from labtui.suites.kinds import all_kinds, resolve

FORMATS = ("html", "png", "svg")


def charts_for(sessions: list[SessionData]) -> list[Chart]:
    """Every figure the sessions' data supports: the metric figures every kind has, then each kind's own
    (``Kind.charts``; each draws from the sessions of its kind and returns none without them).

    Every text is plain (no mathtext): names and values come from the store.
    """
    from matplotlib import rc_context

    sessions = distinct_labels(sessions)
    with rc_context(PLAIN_TEXT):
        own = [resolve(kind.charts) for kind in all_kinds().values() if kind.charts]
        return [*metric_charts(sessions), *(chart for charts in own for chart in charts(sessions))]


def write_report(
    db: str | os.PathLike[str], session_ids: list[str], out: Path, fmt: str = "html",
    side_by_side: Table | None = None,
) -> list[Path]:
    """Write the report of one session (or several overlaid) into `out`; return the files written.

    ``side_by_side`` is the sessions' side-by-side table (``labtui compare``'s, one column per session), which
    the HTML page shows before the figures.  Files are 0600 and directories created for them 0700; a write
    that fails (a full disk) raises ExportError and leaves nothing of this report behind.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    sessions = distinct_labels([load_session(db, sid) for sid in session_ids])
    charts = charts_for(sessions)
    if fmt == "html":
        page = render_page(sessions, charts, side_by_side).encode("utf-8")
        with PrivateOutput(out) as output:
            return [output.write("report.html", lambda file: file.write(page))]
    if not charts:
        return []
    with PrivateOutput(out) as output:
        return [output.write(f"{chart.slug}.{fmt}", partial(_write_chart, chart, fmt)) for chart in charts]


def _write_chart(chart: Chart, fmt: str, file: BinaryIO) -> None:
    file.write(chart.render(fmt))
