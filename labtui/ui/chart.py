"""A text chart of one metric normalized to the first step against background instances.

One row per background level: a bar to the mean, a band of one std either side,
the value, then CPU/RAM/swap availability at that level.  Rows are thinned
evenly to fit, so the chart costs the same at 10 or 1000 levels.
"""

from __future__ import annotations

import math

import polars as pl
from rich.text import Text

from labtui.ui.format import pct

_LEVEL = "▁▂▃▄▅▆▇█"


def thin(levels: list[int], rows: int) -> list[int]:
    """At most `rows` levels, evenly spread, first and last kept."""
    if len(levels) <= rows:
        return levels
    if rows <= 1:
        return levels[-1:]
    picks = {round(i * (len(levels) - 1) / (rows - 1)) for i in range(rows)}
    return [levels[i] for i in sorted(picks)]


def bar(mean: float, std: float, scale: float, width: int) -> Text:
    """█ up to mean-std, ▓ from there to the mean, ░ up to mean+std, on `width` cells."""
    def cells(x: float) -> int:
        return max(0, min(width, round(x / scale * width))) if scale > 0 else 0

    std = 0.0 if math.isnan(std) else std
    lo, mid, hi = cells(mean - std), cells(mean), cells(mean + std)
    text = Text()
    text.append("█" * lo, "green")
    text.append("▓" * (mid - lo), "green")
    text.append("░" * (hi - mid), "green")
    text.append(" " * (width - hi))
    return text


def _avail_cell(share: float | None) -> Text:
    if share is None or math.isnan(share):
        return Text("  -  ", "dim")
    block = _LEVEL[min(len(_LEVEL) - 1, int(max(0.0, share) * len(_LEVEL)))]
    style = "red" if share < 0.1 else "yellow" if share < 0.3 else "cyan"
    return Text(f"{block}{pct(share):>4}", style)


def render_chart(slow: pl.DataFrame, avail: pl.DataFrame, metric: str, *, width: int = 60, rows: int = 12) -> Text:
    """The chart of `metric` from a slowdown frame and an availability frame."""
    out = Text()
    one = slow if slow.is_empty() else slow.filter(pl.col("metric") == metric).sort("background")
    if one.is_empty():
        out.append(f"{metric or 'no metric'}: no results yet", "dim")
        return out
    if "placement" in one.columns and any(one["placement"].fill_null("")):
        return _placement_chart(one, metric, width)
    by_level = {r["background"]: r for r in one.iter_rows(named=True)}
    resources = {r["background"]: r for r in avail.iter_rows(named=True)} if not avail.is_empty() else {}
    scale = max((r["normalized"] or 0) + _relative_std(r) for r in by_level.values())
    scale = max(scale, 1.0) * 1.05
    bar_width = max(10, width - 40)
    out.append(f"{metric} normalized to first step (mean, ±1 std band) · scale 0–{scale:.2f}\n", "bold")
    out.append(f"{'bg':>6} {'':{bar_width}} {'norm':>6} {'±std':>6}  cpu   ram   swap\n", "dim")
    for level in thin(sorted(by_level), rows):
        r = by_level[level]
        norm = r["normalized"] if r["normalized"] is not None else float("nan")
        rel_std = _relative_std(r)
        out.append(f"{level:>6} ")
        out.append_text(bar(norm, rel_std, scale, bar_width))
        out.append(f" {norm:>6.3f} {rel_std:>6.3f} ")
        res = resources.get(level, {})
        for key in ("cpu", "mem", "swap"):
            out.append(" ")
            out.append_text(_avail_cell(res.get(key)))
        out.append("\n")
    return out


def _relative_std(row: dict) -> float:
    """std / mean of a slowdown row; 0 where there is no spread to show (one repetition: std is null)."""
    return row["std"] / row["mean"] if row["mean"] and row["std"] is not None else 0.0


def _placement_chart(one: pl.DataFrame, metric: str, width: int) -> Text:
    """An isolation run's chart: one bar per placement, in the order the run measured them."""
    out = Text()
    rows = list(one.sort("step").iter_rows(named=True))
    scale = max(max((r["normalized"] or 0) + _relative_std(r) for r in rows), 1.0) * 1.05
    bar_width = max(10, width - 34)
    out.append(f"{metric} normalized to the worker alone (mean, ±1 std band) · scale 0–{scale:.2f}\n", "bold")
    out.append(f"{'placement':<16} {'':{bar_width}} {'norm':>6} {'±std':>6}\n", "dim")
    for r in rows:
        norm = r["normalized"] if r["normalized"] is not None else float("nan")
        rel_std = _relative_std(r)
        out.append(f"{(r['placement'] or 'alone')[:16]:<16} ")
        out.append_text(bar(norm, rel_std, scale, bar_width))
        out.append(f" {norm:>6.3f} {rel_std:>6.3f}\n")
    return out
