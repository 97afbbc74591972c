"""Shaping results with polars: slowdown per metric and availability per background."""

from __future__ import annotations

import polars as pl

from labtui.figures import sample_figures
from labtui.figures.table import live_figures
from labtui.store.frames import slowdown_table

SLOWDOWN_COLUMNS = [
    "session_id", "benchmark", "metric", "unit", "better", "background", "mean", "std", "n", "normalized", "slowdown_pct",
    "placement", "step",
]
_SCHEMA = {
    "session_id": pl.String,
    "benchmark": pl.String,
    "metric": pl.String,
    "unit": pl.String,
    "better": pl.String,
    "background": pl.Int64,
    "mean": pl.Float64,
    "std": pl.Float64,
    "n": pl.Int64,
    "normalized": pl.Float64,
    "slowdown_pct": pl.Float64,
    "placement": pl.String,
    "step": pl.Int64,
}


def slowdown(results: pl.DataFrame) -> pl.DataFrame:
    """The slowdown table of live results: the store's own definition (labtui.store.frames.slowdown_table)."""
    if results.is_empty():
        return pl.DataFrame(schema={c: _SCHEMA[c] for c in SLOWDOWN_COLUMNS})
    return slowdown_table(results).select(SLOWDOWN_COLUMNS)


def trusted_slowdown(results: pl.DataFrame) -> pl.DataFrame:
    """The slowdown table of live results with each figure's trust (labtui.figures.table.live_figures)."""
    return live_figures(slowdown(results), results)


def verdict_of(frame: pl.DataFrame, metric: str) -> str | None:
    """The verdict line (labtui.figures.verdict) of `metric` in a with_trust frame; None without one."""
    if frame.is_empty() or "verdict" not in frame.columns:
        return None
    found = frame.filter((pl.col("metric") == metric) & pl.col("verdict").is_not_null())["verdict"]
    return str(found[0]) if len(found) else None


def availability(samples: pl.DataFrame) -> pl.DataFrame:
    """Mean CPU/RAM/swap availability per background count (all hosts together)."""
    if samples.is_empty():
        return pl.DataFrame(schema={"background": pl.Int64, "cpu": pl.Float64, "mem": pl.Float64, "swap": pl.Float64})
    return (
        samples.group_by("background")
        .agg(cpu=pl.col("cpu_avail").mean(), mem=pl.col("mem_avail").mean(), swap=pl.col("swap_avail").mean())
        .sort("background")
    )


def slowdown_rows(frame: pl.DataFrame) -> dict[str, tuple]:
    """Slowdown rows (of a with_trust frame) keyed by benchmark/metric@background, for a keyed table diff: metric,
    background, unit, mean, 95% interval, CoV, n, the median slowdown and its interval (not the slowdown view's
    mean-based one), flags, then the sample figures (labtui.figures.columns)."""
    extra = [f.name for f in sample_figures()]
    rows: dict[str, tuple] = {}
    for r in frame.iter_rows(named=True):
        where = f"{r['placement']}/{r['background']}" if r["placement"] else str(r["background"])
        key = f"{r['benchmark']}/{r['metric']}@{where}"
        rows[key] = (r["metric"], r["background"], r["unit"], r["mean"], r["ci_low"], r["ci_high"], r["cv"], r["n"],
                     r["median_slowdown_pct"], r["median_slowdown_low"], r["median_slowdown_high"], r["flags"],
                     *(r[name] for name in extra))
    return rows
