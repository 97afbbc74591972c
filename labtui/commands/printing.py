"""Rich tables for the CLI: the end-of-run summary and query results."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from labtui.core.stats.intervals import MAX_BOOTSTRAP_ROWS
from labtui.core.stats.trust import OUTLIER_Z
from labtui.core.units import display_unit, interval, number, quantity, share_pct
from labtui.figures import sample_figures
from labtui.figures.table import bootstrap_allowed, repetition_samples, with_trust
from labtui.figures.verdict import slowdown_text
from labtui.store import StoreError, fetch_frame, slowdown_frame
from labtui.suites.kinds import all_kinds, resolve

MAX_SUMMARY_ROWS = 21
#: The widest a table printed into a file or a pipe may grow.
NATURAL_WIDTH_CAP = 400


#: The warnings and errors a session logged, each once with how often, in the order they first came.
_LOGGED = """
SELECT level, category, message, count(*) AS times FROM events
WHERE session_id = ? AND level IN ('warning', 'error')
GROUP BY level, category, message ORDER BY min(ts)
"""


def render_summary(console: Console, db: Path, session_id: str) -> None:
    """Print the session's figures (render_figures), then what it logged as a warning or an error (a busy host, a
    placement skipped, a failed create): a figure is read with what happened while it was measured."""
    render_figures(console, db, session_id)
    try:
        logged = fetch_frame(db, _LOGGED, [session_id])
    except StoreError:
        return  # render_figures said why the store cannot be read
    for r in logged.iter_rows(named=True):
        times = f" ({r['times']} times)" if r["times"] > 1 else ""
        console.print(Text(f"logged {r['level']} [{r['category']}]{times}: {r['message']}",
                           "red" if r["level"] == "error" else "yellow"), highlight=False)


def render_figures(console: Console, db: Path, session_id: str) -> None:
    """Print each metric of a session by background count (and placement, for isolation runs), under its verdict
    (labtui.figures.verdict: does it move with the background at all):
    mean, the sample figures (median, ...: labtui.figures.columns), 95% interval, CoV, n, the median slowdown with
    its interval (labtui.core.stats.trend.median_slowdown; the slowdown view's mean-based one and normalized are in the
    store), and what makes a figure doubtful
    (labtui.core.stats.trust.trust: one repetition, wide spread, outliers, two modes), explained under its table;
    numbers in their display unit (labtui.core.units).  In a terminal too narrow for the table the mean and then
    the interval are left out, never the trust column."""
    try:
        if _kind_table(console, db, session_id):
            return
        frame = slowdown_frame(db, session_id)
        samples = repetition_samples(db, session_id)
    except StoreError as exc:
        console.print(Text.assemble(("cannot read results:", "red"), " ", str(exc)))
        return
    if frame.is_empty():
        console.print("no results recorded")
        return
    if _emulated(db, session_id):
        console.print(Text("measured under QEMU's TCG emulation (no KVM): every figure is slower than under "
                           "hardware virtualization", "yellow"))
    totals: dict[tuple, int] = {}
    parts = []
    for (benchmark, metric), rows in frame.group_by(["benchmark", "metric"], maintain_order=True):
        totals[(benchmark, metric)] = rows.height
        rows = rows.sort(["step", "background"])
        parts.append(rows[_evenly_spaced(rows.height, MAX_SUMMARY_ROWS)])
    figures = with_trust(pl.concat(parts), samples)
    if not bootstrap_allowed(figures.height):
        console.print(f"95% intervals are Student's t (more than {MAX_BOOTSTRAP_ROWS} rows: no bootstrap), and the "
                      "median slowdowns have none",
                      highlight=False, markup=False)
    for (benchmark, metric), rows in figures.group_by(["benchmark", "metric"], maintain_order=True):
        unit = rows["unit"][0]
        better = rows["better"][0]
        shown_unit = ", ".join(filter(None, (display_unit(unit)[0], f"{better} is better")))
        if rows["verdict"][0] is not None:  # the line that says what the table shows, above it
            # into a file or a pipe on one line, as the table keeps its width there: a log is searched by line
            console.print(Text(rows["verdict"][0], style="bold"), highlight=False, soft_wrap=not console.is_terminal)
        title = Text(f"{benchmark}: {metric} ({shown_unit})")
        columns = _fitting_columns(console, title, rows, unit)
        _print_whole(console, _figures_table(title, rows, unit, columns))
        if left_out := [c for c in _columns() if c not in columns]:
            console.print(Text(f"  left out to fit {console.width} columns: {', '.join(left_out)} (a file gets them all)",
                               style="dim"), highlight=False)
        notes: list[str] = []
        for r in rows.iter_rows(named=True):
            notes += _notes(r, r["placement"] or f"background {r['background']}", unit)
        for note in notes:
            console.print(Text("  warning: " + note, style="yellow"))
        if rows.height < totals[(benchmark, metric)]:
            console.print(
                f"showing {rows.height} of {totals[(benchmark, metric)]} background counts; all of them: "
                f"labtui sql \"select * from slowdown where session_id = '{session_id}' and metric = '{metric}'\"",
                highlight=False, markup=False,
            )
    console.print(Text(f"{SLOWDOWN}: the level's median over the baseline's (95% bootstrap interval); none for n=1",
                       style="dim"), highlight=False)


#: The run table's slowdown column: median-based (labtui.core.stats.trend.median_slowdown), with its interval.
SLOWDOWN = "median slowdown %"


def _columns() -> tuple[str, ...]:
    """The run table's columns after the background (and placement), in order (the sample figures as registered
    now: labtui.figures.columns)."""
    return ("mean", *(f.name for f in sample_figures()), "95% CI", "CoV", "n", SLOWDOWN, "trust")

#: Left out, in this order, where the table is wider than a terminal: trust stays, with the figures it qualifies.
_NARROW_DROPS = ("mean", "95% CI")


def _placed(rows: pl.DataFrame) -> bool:
    return any(rows["placement"].fill_null(""))


def _fitting_columns(console: Console, title: Text, rows: pl.DataFrame, unit: str) -> tuple[str, ...]:
    """The columns to draw: all of them, but in a terminal narrower than the table mean and then the 95% interval
    are left out (in that order) until it fits, so the trust column is never squeezed off a row."""
    columns = (("placement",) if _placed(rows) else ()) + ("background", *_columns())
    if not console.is_terminal:
        return columns  # a file or a pipe gets the table at its natural width (_print_whole)
    options = console.options.update(width=NATURAL_WIDTH_CAP)
    for drop in (None, *_NARROW_DROPS):
        if drop is not None:
            columns = tuple(c for c in columns if c != drop)
        if Measurement.get(console, options, _figures_table(title, rows, unit, columns)).maximum <= console.width:
            break
    return columns


def _figures_table(title: Text, rows: pl.DataFrame, unit: str, columns: tuple[str, ...]) -> Table:
    """One metric's rows of the figures table (with_trust) in `columns`, numbers in the unit's display unit."""
    table = Table(title=title, title_justify="left")
    for col in columns:
        worded = col in ("placement", "trust")
        # In a narrow terminal a cell wraps, or a number folds, onto a second line rather than end in "…"; the
        # trust column keeps its words on one line (the others give way first)
        trust = col == "trust"
        table.add_column(col, justify="left" if worded else "right", overflow="ellipsis" if worded else "fold",
                         no_wrap=trust, min_width=max((len(f) for f in rows["flags"]), default=0) if trust else None)
    for r in rows.iter_rows(named=True):
        cells: dict[str, str | Text] = {
            "placement": Text(r["placement"] or ""),
            "background": str(r["background"]),
            "mean": number(r["mean"], unit),
            **{f.name: number(r[f.name], unit) for f in sample_figures()},
            # narrow, it wraps at a space
            "95% CI": interval(r["ci_low"], r["ci_high"], unit),
            "CoV": share_pct(r["cv"]),
            "n": str(r["n"]),
            SLOWDOWN: slowdown_text(r["median_slowdown_pct"], r["median_slowdown_low"], r["median_slowdown_high"]),
            "trust": Text(r["flags"], style="yellow"),
        }
        table.add_row(*(cells[c] for c in columns))
    return table


def _print_whole(console: Console, table: Table) -> None:
    """Print a table; into a file or a pipe (80 columns to rich, unless COLUMNS says otherwise) at its natural
    width, so that a redirected run table loses no figure to "…"."""
    if console.is_terminal:
        console.print(table)
        return
    natural = Measurement.get(console, console.options.update(width=NATURAL_WIDTH_CAP), table).maximum
    width = console.width
    console.width = max(width, natural)
    try:
        console.print(table)
    finally:
        console.width = width


def _kind_table(console: Console, db: Path, session_id: str) -> bool:
    """Print the session kind's own end-of-run table (``Kind.summary``: fairshare's shares); False when its kind
    has none, or it recorded nothing that table shows."""
    kind = all_kinds().get(str(fetch_frame(db, "SELECT kind FROM sessions WHERE session_id = ?", [session_id])
                                .get_column("kind").first() or ""))
    return kind is not None and kind.summary is not None and bool(resolve(kind.summary)(console, db, session_id))


def _emulated(db: Path, session_id: str) -> bool:
    """Whether the session's host facts record QEMU's TCG emulation (the unikraft backend without KVM)."""
    found = fetch_frame(db, "SELECT isolation FROM hosts WHERE session_id = ?", [session_id])
    return "tcg-emulation" in found["isolation"].to_list()


def _notes(figure: dict, where: str, unit: str) -> list[str]:
    """Sentences naming a figure's outliers and modes (its CoV is in the table)."""
    found = []
    if figure["outliers"]:
        found.append(f"{where}: outlier(s) by modified Z-score > {OUTLIER_Z}: "
                     + ", ".join(quantity(v, unit) for v in figure["outliers"]))
    if modes := figure["modes"]:
        found.append(f"{where}: bimodal, two groups around {quantity(modes[0], unit)} and {quantity(modes[1], unit)}")
    return found


def _evenly_spaced(count: int, most: int) -> list[int]:
    if count <= most:
        return list(range(count))
    step = (count - 1) / (most - 1)
    return sorted({round(i * step) for i in range(most)})

