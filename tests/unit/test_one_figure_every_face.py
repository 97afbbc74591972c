"""One figure read through every face: the CLI's run table, the report's table and the console's slowdown pane
write its mean, 95% interval, CoV, n and median slowdown alike, in the same display unit, and a missing figure
as the same "-" (labtui.core.units is the one formatter)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from labtui.commands.printing import render_figures
from labtui.core.events import Result, SessionEnded, SessionStarted
from labtui.core.units import MISSING
from labtui.report.data import load_session
from labtui.report.tables import slowdown_tables
from labtui.store import record_events
from labtui.ui.model.live import RunModel
from labtui.ui.model.pane_text import slowdown_cells, slowdown_headers
from labtui.ui.model.series import slowdown_rows, trusted_slowdown

T0 = 1_790_000_000.0
#: Boot times (s) by repetition and background: at 10, spread enough for a CoV of several percent.
VALUES = {(1, 0): 0.00100, (2, 0): 0.00102, (3, 0): 0.00098,
          (1, 10): 0.00150, (2, 10): 0.00171, (3, 10): 0.00139,
          (1, 20): 0.00200}  # one repetition only: n=1, no interval, no CoV, no slowdown


def _events() -> list:
    return [SessionStarted("s1", "boot-scaling", "scaling", "process", "local", {}, 1, ts=T0),
            *(Result("s1", rep, bg // 10, bg, "local", f"w{rep}{bg}", "boot", "boot_time", value, "s", "lower",
                     ts=T0 + rep + bg) for (rep, bg), value in VALUES.items()),
            SessionEnded("s1", "completed", ts=T0 + 100)]


def _cli_cells(db: Path) -> dict[int, str]:
    """The CLI run table's line of each background count."""
    out = io.StringIO()
    render_figures(Console(file=out, width=250, color_system=None), db, "s1")
    lines = {}
    for line in out.getvalue().splitlines():
        if match := re.match(r"[│┃|]\s*(\d+)\s*[│┃|]", line):
            lines[int(match[1])] = line
    return lines


def _report_rows(db: Path) -> dict[int, dict[str, str]]:
    (table,) = slowdown_tables(load_session(db, "s1"))
    return {int(row[0]): dict(zip(table.headers, row, strict=True)) for row in table.rows}


def _pane_rows() -> dict[int, dict[str, str]]:
    model = RunModel()
    for event in _events():
        model.apply(event)
    rows = slowdown_rows(trusted_slowdown(model.results_frame()))
    return {row[1]: dict(zip(slowdown_headers(), (c.plain for c in slowdown_cells(row)), strict=True))
            for row in rows.values()}


def test_mean_interval_cov_n_and_slowdown_read_the_same_in_the_cli_the_report_and_the_console(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, _events())
    cli, report, pane = _cli_cells(db), _report_rows(db), _pane_rows()
    assert set(cli) == set(report) == set(pane) == {0, 10, 20}
    for background in (0, 10, 20):
        shown = report[background]
        figures = {
            "mean": shown["mean (ms)"],
            "95% CI": shown["95% CI (ms)"],
            "CoV": shown["CoV"],
            "n": shown["n"],
            "median slowdown": shown["median slowdown % (95% CI)"],
        }
        cells = pane[background]
        assert cells["mean"] == f"{figures['mean']} ms", (background, cells, figures)
        assert cells["95% CI"] in (f"{figures['95% CI']} ms", MISSING)
        assert cells["95% CI"].removesuffix(" ms") == figures["95% CI"]
        assert cells["CoV"] == figures["CoV"] and cells["n"] == figures["n"]
        # the pane names its unit in each cell ("+12.0%"), the report in its header ("median slowdown %")
        assert cells["median slowdown"].replace("%", "") == figures["median slowdown"], (cells, figures)
        for text in figures.values():
            assert text in cli[background], (background, text, cli[background])
    assert report[20]["CoV"] == report[20]["95% CI (ms)"] == MISSING  # one repetition: nothing to spread
    assert re.fullmatch(r"\d+\.\d%", report[10]["CoV"]), report[10]["CoV"]  # a CoV: a percentage, one decimal
