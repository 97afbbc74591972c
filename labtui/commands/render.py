"""Rich tables for the CLI: the end-of-run summary and query results."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from labtui.commands.render_fairshare import render_fairshare
from labtui.store import StoreError, slowdown_frame

MAX_SUMMARY_ROWS = 21


def render_summary(console: Console, db: Path, session_id: str) -> None:
    """Print each metric of a session by background count (and placement, for isolation runs):
    mean, std, n, normalized, slowdown."""
    try:
        if render_fairshare(console, db, session_id):
            return
        frame = slowdown_frame(db, session_id)
    except StoreError as exc:
        console.print(Text.assemble(("cannot read results:", "red"), " ", str(exc)))
        return
    if frame.is_empty():
        console.print("no results recorded")
        return
    for (benchmark, metric), rows in frame.group_by(["benchmark", "metric"], maintain_order=True):
        rows = rows.sort(["step", "background"])
        placed = any(rows["placement"].fill_null(""))
        shown = _evenly_spaced(rows.height, MAX_SUMMARY_ROWS)
        unit = rows["unit"][0]
        better = rows["better"][0]
        table = Table(title=Text(f"{benchmark}: {metric} ({unit}, {better} is better)"), title_justify="left")
        for col in (("placement",) if placed else ()) + ("background", "mean", "std", "n", "normalized", "slowdown %"):
            table.add_column(col, justify="left" if col == "placement" else "right")
        for i in shown:
            r = rows.row(i, named=True)
            table.add_row(
                *((Text(r["placement"] or ""),) if placed else ()),
                str(r["background"]),
                _num(r["mean"], unit),
                _num(r["std"], unit),
                str(r["n"]),
                f"{r['normalized']:.3f}" if r["normalized"] is not None else "-",
                f"{r['slowdown_pct']:+.1f}" if r["slowdown_pct"] is not None else "-",
            )
        console.print(table)
        if len(shown) < rows.height:
            console.print(
                f"showing {len(shown)} of {rows.height} background counts; all of them: "
                f"labtui sql \"select * from slowdown where session_id = '{session_id}' and metric = '{metric}'\"",
                highlight=False, markup=False,
            )


def _evenly_spaced(count: int, most: int) -> list[int]:
    if count <= most:
        return list(range(count))
    step = (count - 1) / (most - 1)
    return sorted({round(i * step) for i in range(most)})


def _num(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "s":
        return f"{value * 1000:.3f} ms"
    if unit == "bytes":
        return f"{value / 2**20:.2f} MiB"
    return f"{value:.4g}"
