"""One display unit per figure, everywhere (issue 32, items 5 and 6).

Two real `labtui run boot-scaling` sessions on the process backend (A of one repetition, B of
two) in a real DuckDB file; then the same figure, session A's boot time at background 0, is read
from the run table, `labtui compare A B`, `labtui report A` and the console's replayed slowdown
table and chart title: the same unit (ms) and the same digits in all four.  A figure of one
repetition is flagged "n=1: no spread" in the run table, the console and the report's warnings,
and a missing value (its 95% interval, a SQL NULL) reads the same in the CLI and the console.
"""

from __future__ import annotations

import io
import json
import os
import re
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import duckdb
import polars as pl
import pytest
from cli_run import labtui as run_labtui
from pilot_wait import wait_for

from labtui.core.stats.trust import SINGLE
from labtui.core.units import MISSING

#: A tiny scaling run that does not wait for a quiet host (the test machine is shared).
TINY = ["--set", "scale.steps=1", "--set", "scale.per_step=2", "--set", "sampling.quiet_timeout_s=0"]


labtui = partial(run_labtui, check=True)


@dataclass(frozen=True)
class Recorded:
    db: Path
    env: dict[str, str]
    a: str  # one repetition
    b: str  # two repetitions
    run_a: str  # `labtui run`'s output for A
    run_b: str


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    tmp = tmp_path_factory.mktemp("units")
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp / "runtime"), "LABTUI_STATE_DIR": str(tmp / "state"),
           "COLUMNS": "200"}
    db = tmp / "lab.duckdb"
    outs, ids = [], []
    for reps in (1, 2):
        proc = labtui("run", "boot-scaling", *TINY, "--set", f"suite.repetitions={reps}", "--db", str(db), env=env)
        outs.append(proc.stdout)
        ids.append(re.search(r"session (\S+) completed", proc.stderr).group(1))  # type: ignore[union-attr]
    return Recorded(db, env, ids[0], ids[1], outs[0], outs[1])


def boot_mean(db: Path, session: str, background: int = 0) -> float:
    """The stored (SI) mean of the session's boot time at a background count."""
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("SELECT mean, unit FROM slowdown WHERE session_id = ? AND metric = 'boot_time' "
                          "AND background = ?", [session, background]).fetchone()
    assert row is not None and row[1] == "s"  # the store keeps seconds; the views show ms
    return row[0]


def in_ms(seconds: float) -> str:
    """The documented display of a time: milliseconds, 4 significant digits with trailing zeros
    (docs/reports.md, "Units")."""
    value = seconds * 1000
    return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:#.4g}".rstrip(".")


def table_row(text: str, first: str) -> list[str]:
    """The cells of a rich box table's row whose first cell is `first`."""
    line = next(x for x in text.splitlines() if x.startswith("│") and x.split("│")[1].strip() == first)
    return [c.strip() for c in line.split("│")[1:-1]]


async def console_replay(db: Path, session: str) -> tuple[dict[str, str], str]:
    """The console's replayed slowdown row of boot_time at background 0 (header -> cell) and its chart title."""
    from rich.console import Console
    from textual.widgets import DataTable

    from labtui.ui.app import LabApp
    from labtui.ui.model.pane_text import slowdown_headers
    from labtui.ui.panes import SlowdownPanel
    from labtui.ui.sessions_view import SessionsView

    app = LabApp(db)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("3")
        await wait_for(pilot, lambda: bool(app.query(SessionsView)) and app.query_one("#sessions", DataTable).row_count == 2,
                       30, "the sessions list")
        app.query_one(SessionsView).open_session(session)
        replay = app.query_one("#replay", SlowdownPanel)
        await wait_for(pilot, lambda: replay.table.row_count > 0 and "boot/boot_time@0" in replay.table.rows, 30,
                       "the replayed slowdown table")
        cells = dict(zip(slowdown_headers(), (str(c) for c in replay.table.get_row("boot/boot_time@0"))))
        console = Console(width=300, file=io.StringIO(), record=True)
        console.print(app.query_one("#replay .chart-title").content)
        return cells, console.export_text()


async def test_one_boot_time_reads_the_same_in_run_table_compare_report_and_console(recorded: Recorded,
                                                                                      tmp_path: Path) -> None:
    shown = in_ms(boot_mean(recorded.db, recorded.a))

    # 1. the run table (`labtui run`'s closing table)
    assert "boot: boot_time (ms, lower is better)" in recorded.run_a
    run_row = table_row(recorded.run_a, "0")
    assert run_row[1] == shown, run_row  # mean

    # 2. labtui compare A B
    compared = labtui("compare", recorded.a, recorded.b, "--db", str(recorded.db), env=recorded.env).stdout
    line = next(x for x in compared.splitlines() if x.strip().startswith("boot_time (") and re.search(r"\s0\s", x))
    cells = re.split(r"\s{2,}", line.strip())
    assert cells[0] == "boot_time (ms, ↓)" and cells[2] == f"{shown} (1)", cells

    # 3. labtui report A: the HTML page's boot_time table
    out = tmp_path / "report"
    labtui("report", recorded.a, "--out", str(out), "--db", str(recorded.db), env=recorded.env)
    html = (out / "report.html").read_text()
    table = html[html.index("boot: boot_time"):]
    table = table[:table.index("</table>")]
    assert "<th>mean (ms)</th>" in table and f"<tr><td>0</td><td>{shown}</td>" in table

    # 4. the console: the replayed slowdown table and the chart's title
    console_cells, title = await console_replay(recorded.db, recorded.a)
    assert console_cells["mean"] == f"{shown} ms"
    assert title.startswith("boot_time (ms) ") and f"baseline {shown} ms" in title
    assert "(s)" not in title


async def test_one_repetition_is_flagged_in_run_table_console_and_report(recorded: Recorded) -> None:
    from labtui.report.alerts import session_warnings
    from labtui.report.data import load_session

    assert SINGLE == "n=1: no spread"
    for background in ("0", "2"):
        assert table_row(recorded.run_a, background)[-1] == SINGLE
        assert SINGLE not in table_row(recorded.run_b, background)[-1]  # two repetitions have a spread

    cells, _ = await console_replay(recorded.db, recorded.a)
    assert cells["trust"] == SINGLE

    warnings = session_warnings(load_session(recorded.db, recorded.a))
    single = [w for w in warnings if w.startswith(SINGLE)]
    assert len(single) == 1 and "2 of 2 figure(s)" in single[0] and "boot/boot_time at background 0" in single[0]
    assert not any(w.startswith(SINGLE) for w in session_warnings(load_session(recorded.db, recorded.b)))


async def test_a_missing_value_reads_the_same_in_the_cli_and_the_console(recorded: Recorded) -> None:
    # a figure of one repetition has no 95% interval: the run table and the console show it alike
    assert table_row(recorded.run_a, "0")[3] == MISSING
    cells, _ = await console_replay(recorded.db, recorded.a)
    assert cells["95% CI"] == MISSING and cells["CoV"] == MISSING

    # a SQL NULL: `labtui sql` and the console's SQL grid
    cli = labtui("sql", "SELECT NULL AS nothing, 7 AS seven", "--db", str(recorded.db), env=recorded.env).stdout
    assert table_row(cli, MISSING) == [MISSING, "7"]
    assert await console_sql_cells(recorded.db, "SELECT NULL AS nothing, 7 AS seven") == [MISSING, "7"]


async def console_sql_cells(db: Path, sql: str) -> list[str]:
    """The first row of the console's SQL result grid, as drawn."""
    from textual.widgets import DataTable, TextArea

    from labtui.ui.app import LabApp
    from labtui.ui.sessions_view import SessionsView

    app = LabApp(db)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("3")
        await wait_for(pilot, lambda: bool(app.query(SessionsView)) and app.query_one("#sessions", DataTable).row_count == 2,
                       30, "the sessions list")
        app.query_one("#sql", TextArea).text = sql
        status = app.query_one("#sql-status")
        app.query_one("#sql", TextArea).focus()
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "1 row" in str(status.content), 30, "the query")
        grid = app.query_one("#result")
        await pilot.pause(0.2)
        drawn = grid.render_line(1).text  # the header is line 0
        return drawn.split()


async def test_a_figure_registered_in_labtui_figures_shows_in_every_face(
        recorded: Recorded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 35: a new figure (a 95th percentile) is one entry in labtui.figures.columns, and the run table,
    `compare`, `report` and the console's slowdown table show it, in the figure's display unit, with nothing
    changed in the faces."""
    import numpy as np
    from rich.console import Console

    from labtui.cli import main
    from labtui.commands.printing import render_summary
    from labtui.figures import columns
    from labtui.figures.table import repetition_samples

    p95 = columns.SampleFigure("p95", lambda values: float(np.percentile(values, 95)))
    monkeypatch.setattr(columns, "SAMPLE_FIGURES", (*columns.SAMPLE_FIGURES, p95))
    samples = repetition_samples(recorded.db, recorded.b).filter(
        (pl.col("metric") == "boot_time") & (pl.col("background") == 0))["samples"][0].to_list()
    assert len(samples) == 2 and samples[0] != samples[1]  # two repetitions: the p95 is neither one nor the median
    expected = in_ms(float(np.percentile(samples, 95)))
    assert expected != in_ms(float(np.median(samples)))

    # 1. the run table
    out = io.StringIO()
    render_summary(Console(file=out, width=250), recorded.db, recorded.b)
    header = next(x for x in out.getvalue().splitlines() if x.startswith("┃"))
    assert [c.strip() for c in header.split("┃")[1:5]] == ["background", "mean", "median", "p95"], header
    assert table_row(out.getvalue(), "0")[3] == expected

    # 2. compare A B, as JSON and CSV
    assert main(["--db", str(recorded.db), "compare", recorded.a, recorded.b, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    (row,) = [r for r in rows if r["metric"] == "boot_time" and r["background"] == 0]
    assert in_ms(row["p95_b"]) == expected and row["p95_a"] == pytest.approx(boot_mean(recorded.db, recorded.a))
    assert main(["--db", str(recorded.db), "compare", recorded.a, recorded.b, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(",median_a,median_b,p95_a,p95_b")

    # 3. the report's table
    out_dir = tmp_path / "report"
    assert main(["--db", str(recorded.db), "report", recorded.b, "--out", str(out_dir)]) == 0
    html = (out_dir / "report.html").read_text()
    table = html[html.index("boot: boot_time"):]
    table = table[:table.index("</table>")]
    assert "<th>p95 (ms)</th>" in table
    cells = re.findall(r"<td>(.*?)</td>", table[table.index("<tr><td>0</td>"):])
    assert cells[3] == expected, cells

    # 4. the console's replayed slowdown table
    console_cells, _ = await console_replay(recorded.db, recorded.b)
    assert console_cells["p95"] == f"{expected} ms"
