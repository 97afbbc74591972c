"""Shaping results with polars: slowdown per metric and availability per background."""

from __future__ import annotations

import functools

import polars as pl

from labtui.core.stats import MAX_BOOTSTRAP_ROWS, Trust, trust
from labtui.store.frames import repetition_table, slowdown_table
from labtui.report.data import FIGURE_KEY

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


#: What `with_trust` adds to a slowdown frame: labtui.core.stats.trust of each figure's repetitions.
TRUST_SCHEMA = {"median": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "cv": pl.Float64,
                "flags": pl.String}


def trusted_slowdown(results: pl.DataFrame) -> pl.DataFrame:
    """The slowdown table of live results with each figure's trust (see with_trust)."""
    if results.is_empty():
        return with_trust(slowdown(results), pl.DataFrame())
    samples = repetition_table(results).group_by(FIGURE_KEY).agg(pl.col("value").sort_by("repetition").alias("samples"))
    return with_trust(slowdown(results), samples)


def with_trust(slow: pl.DataFrame, samples: pl.DataFrame) -> pl.DataFrame:
    """The slowdown frame with each figure's median, 95% interval, CoV and trust flags, as the CLI's run
    table shows them: labtui.core.stats.trust of the figure's repetitions' values (`samples`: the
    columns of FIGURE_KEY and a list column `samples`, as labtui.report.data.repetition_samples gives)."""
    by_figure = {tuple(r[c] for c in FIGURE_KEY): r["samples"] for r in samples.iter_rows(named=True)}
    bootstrap = slow.height <= MAX_BOOTSTRAP_ROWS
    columns: dict[str, list] = {name: [] for name in TRUST_SCHEMA}
    for r in slow.iter_rows(named=True):
        t = _trust(tuple(by_figure.get(tuple(r[c] for c in FIGURE_KEY)) or [r["mean"]]), bootstrap)
        for name, value in zip(TRUST_SCHEMA, (t.summary.median, t.ci.low if t.ci else None,
                                               t.ci.high if t.ci else None, t.cov, ", ".join(t.flags()))):
            columns[name].append(value)
    return slow.with_columns(pl.Series(name, values, dtype=TRUST_SCHEMA[name]) for name, values in columns.items())


@functools.lru_cache(maxsize=4096)
def _trust(values: tuple[float, ...], bootstrap: bool) -> Trust:
    """trust of one figure's values, remembered: while a run goes on, the live table is recomputed every few
    seconds and only the current level's values changed (about 1.5 ms a figure, most of it in scipy's MAD)."""
    return trust(values, bootstrap=bootstrap)


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
    """Slowdown rows (of a with_trust frame) keyed by benchmark/metric@background, for a keyed table diff."""
    rows: dict[str, tuple] = {}
    for r in frame.iter_rows(named=True):
        where = f"{r['placement']}/{r['background']}" if r["placement"] else str(r["background"])
        key = f"{r['benchmark']}/{r['metric']}@{where}"
        rows[key] = (r["metric"], r["background"], r["unit"], r["mean"], r["median"], r["ci_low"], r["ci_high"], r["cv"],
                     r["n"], r["slowdown_pct"], r["flags"])
    return rows
