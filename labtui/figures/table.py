"""The figures table: slowdown rows with their trust columns, for a stored session or live results."""

from __future__ import annotations

import functools
import os

import polars as pl

from labtui.core.stats.intervals import MAX_BOOTSTRAP_ROWS
from labtui.core.stats.trend import RobustSlowdown, median_slowdown
from labtui.core.stats.trust import Trust, trust
from labtui.figures.columns import sample_figures, sample_values
from labtui.figures.keys import FIGURE_KEY, METRIC_KEY
from labtui.figures.verdict import Verdict, verdict
from labtui.store import REPETITION_VALUES, fetch_frame, slowdown_frame
from labtui.store.frames import repetition_table

#: What `with_trust` adds to a slowdown frame besides the sample figures (labtui.figures.columns):
#: labtui.core.stats.trust.trust of each figure's repetitions.
TRUST_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "ci_method": pl.String,
    "cv": pl.Float64,
    "flags": pl.String,
    "outliers": pl.List(pl.Float64),
    "modes": pl.List(pl.Float64),
    "median_slowdown_pct": pl.Float64,
    "median_slowdown_low": pl.Float64,
    "median_slowdown_high": pl.Float64,
    "verdict": pl.String,
}

_SAMPLES = f"""
SELECT benchmark, metric, unit, better, placement, background, list(value ORDER BY repetition) AS samples
FROM ({REPETITION_VALUES}) WHERE session_id = ?
GROUP BY benchmark, metric, unit, better, placement, background
"""


def bootstrap_allowed(rows: int) -> bool:
    """The one interval policy: a table of at most MAX_BOOTSTRAP_ROWS figures may bootstrap a skewed figure's
    interval (labtui.core.stats.trust.trust decides which); a larger one uses Student's t throughout, so it stays fast."""
    return rows <= MAX_BOOTSTRAP_ROWS


def repetition_samples(db: str | os.PathLike[str], session_id: str) -> pl.DataFrame:
    """Per figure (FIGURE_KEY) the list of its repetitions' values: the independent samples the slowdown
    view's mean, std and n are of."""
    return fetch_frame(db, _SAMPLES, [session_id])


def with_trust(slow: pl.DataFrame, samples: pl.DataFrame) -> pl.DataFrame:
    """The slowdown frame with each figure's sample figures (the median, and whatever labtui.figures.columns
    registers), 95% interval (and its method), CoV, trust flags, outliers and modes: labtui.core.stats.trust.trust of
    the figure's repetitions' values (`samples`: the columns of FIGURE_KEY and a list column `samples`, as
    repetition_samples gives).

    Beside them, the figure's median slowdown against its metric's baseline (the slowdown view's: the first
    condition by step and background) with its bootstrap interval (labtui.core.stats.trend.median_slowdown; none for
    one repetition on either side; the baseline's own is 0 without an interval), and the metric's verdict
    (labtui.figures.verdict, from every background count in `samples`, also those `slow` leaves out; none for an
    isolation run's placements), the same on each of the metric's rows."""
    by_figure = {_key(r): r["samples"] for r in samples.iter_rows(named=True)}
    bootstrap = bootstrap_allowed(slow.height)
    schema = {**{f.name: pl.Float64 for f in sample_figures()}, **TRUST_SCHEMA}
    columns: dict[str, list] = {name: [] for name in schema}
    baselines = _baselines(slow)
    lines = {key: v.line for key, v in verdicts(samples).items()}
    for r in slow.iter_rows(named=True):
        values = tuple(by_figure.get(_key(r)) or [r["mean"]])
        t = _trust(values, bootstrap)
        metric = tuple(r[c] for c in METRIC_KEY)
        base_key = baselines.get(metric)
        base = tuple(by_figure.get(base_key) or ()) if base_key is not None else ()
        slowed = _median_slowdown(base, values, r["better"], bootstrap)
        if slowed is not None and _key(r) == base_key:
            slowed = RobustSlowdown(0.0, 1.0, None)  # the baseline against itself
        found = {**sample_values(values), "ci_low": t.ci.low if t.ci else None, "ci_high": t.ci.high if t.ci else None,
                 "ci_method": t.ci.method if t.ci else None, "cv": t.cov, "flags": ", ".join(t.flags()),
                 "outliers": list(t.outliers), "modes": list(t.modes or ()),
                 "median_slowdown_pct": slowed.pct if slowed else None,
                 "median_slowdown_low": slowed.ci.low if slowed and slowed.ci else None,
                 "median_slowdown_high": slowed.ci.high if slowed and slowed.ci else None,
                 "verdict": lines.get(metric)}
        for name in schema:
            columns[name].append(found[name])
    return slow.with_columns(pl.Series(name, values, dtype=schema[name]) for name, values in columns.items())


def verdicts(samples: pl.DataFrame) -> dict[tuple, Verdict]:
    """The verdict (labtui.figures.verdict) of every metric (METRIC_KEY) of `samples` measured without a placement,
    from its repetitions' values at each background count."""
    if samples.is_empty():
        return {}
    levels: dict[tuple, dict[float, tuple[float, ...]]] = {}
    for r in samples.iter_rows(named=True):
        if not (r["placement"] or "") and r["background"] is not None:
            levels.setdefault(tuple(r[c] for c in METRIC_KEY), {})[r["background"]] = tuple(r["samples"])
    return {key: _verdict(key[1], key[2] or "", tuple(sorted(found.items()))) for key, found in levels.items()}


def _baselines(slow: pl.DataFrame) -> dict[tuple, tuple]:
    """Each metric's baseline figure (its FIGURE_KEY): its first condition by step, then background, as the
    slowdown view takes it (by background alone where the frame has no step)."""
    order = [c for c in ("step", "background") if c in slow.columns]
    found: dict[tuple, tuple] = {}
    for r in slow.sort(order, nulls_last=True, maintain_order=True).iter_rows(named=True) if order else ():
        found.setdefault(tuple(r[c] for c in METRIC_KEY), _key(r))
    return found


def _key(row: dict) -> tuple:
    """A row's FIGURE_KEY, a missing placement ("" or NULL, as older stores have it) as ""."""
    return tuple((row[c] or "") if c == "placement" else row[c] for c in FIGURE_KEY)


@functools.lru_cache(maxsize=4096)
def _trust(values: tuple[float, ...], bootstrap: bool) -> Trust:
    """trust of one figure's values, remembered: while a run goes on, the live table is recomputed every few
    seconds and only the current level's values changed (about 1.5 ms a figure, most of it in scipy's MAD)."""
    return trust(values, bootstrap=bootstrap)


@functools.lru_cache(maxsize=4096)
def _median_slowdown(baseline: tuple[float, ...], values: tuple[float, ...], better: str,
                     bootstrap: bool) -> RobustSlowdown | None:
    """median_slowdown of one figure, remembered as _trust is (a bootstrap costs about 10 ms a figure)."""
    return median_slowdown(baseline, values, better, interval=bootstrap)


@functools.lru_cache(maxsize=256)
def _verdict(metric: str, unit: str, levels: tuple[tuple[float, tuple[float, ...]], ...]) -> Verdict:
    return verdict(metric, unit, dict(levels))


def session_figures(db: str | os.PathLike[str], session_id: str) -> pl.DataFrame:
    """Every figure of a stored session with its trust (the store's slowdown view plus with_trust)."""
    return with_trust(slowdown_frame(db, session_id), repetition_samples(db, session_id))


def live_figures(slow: pl.DataFrame, results: pl.DataFrame) -> pl.DataFrame:
    """The figures of live results (not yet in the store): `slow` is slowdown_table(results) in the
    columns a face shows, the trust comes from the same repetition values the store would compute."""
    if results.is_empty():
        return with_trust(slow, pl.DataFrame())
    samples = repetition_table(results).group_by(FIGURE_KEY).agg(pl.col("value").sort_by("repetition").alias("samples"))
    return with_trust(slow, samples)

