"""Shaping results with polars: slowdown per metric and availability per background."""

from __future__ import annotations

import polars as pl

SLOWDOWN_COLUMNS = [
    "session_id", "benchmark", "metric", "unit", "better", "background", "mean", "std", "n", "normalized", "slowdown_pct",
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
}


def slowdown(results: pl.DataFrame) -> pl.DataFrame:
    """Mean, std and n across repetitions per metric and background, normalized to the first step.

    Each repetition's values at a step are averaged first, so n counts
    repetitions; slowdown follows labtui.stats (positive means worse).
    """
    if results.is_empty():
        return pl.DataFrame(schema={c: _SCHEMA[c] for c in SLOWDOWN_COLUMNS})
    keys = ["session_id", "benchmark", "metric", "unit", "better"]
    per_rep = results.group_by([*keys, "background", "repetition"]).agg(pl.col("value").mean())
    stats = (
        per_rep.group_by([*keys, "background"])
        .agg(
            mean=pl.col("value").mean(),
            std=pl.col("value").std().fill_null(0.0),
            n=pl.col("value").count().cast(pl.Int64),
        )
        .sort([*keys, "background"])
    )
    base = pl.col("mean").first().over(keys)
    ratio = pl.when(base != 0).then(pl.col("mean") / base).otherwise(None)
    return stats.with_columns(normalized=ratio).with_columns(
        slowdown_pct=pl.when(pl.col("better") == "higher")
        .then((1 - pl.col("normalized")) * 100)
        .otherwise((pl.col("normalized") - 1) * 100)
    ).select(SLOWDOWN_COLUMNS)


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
    """Slowdown rows keyed by benchmark/metric@background, for a keyed table diff."""
    rows: dict[str, tuple] = {}
    for r in frame.iter_rows(named=True):
        key = f"{r['benchmark']}/{r['metric']}@{r['background']}"
        rows[key] = (r["metric"], r["background"], r["unit"], r["mean"], r["std"], r["n"], r["normalized"], r["slowdown_pct"])
    return rows
