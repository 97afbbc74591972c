"""The figures table: slowdown rows with their trust columns, for a stored session or live results."""

from __future__ import annotations

import functools
import os

import polars as pl

from labtui.core.stats import MAX_BOOTSTRAP_ROWS, Trust, trust
from labtui.figures.columns import sample_figures, sample_values
from labtui.figures.keys import FIGURE_KEY
from labtui.store import REPETITION_VALUES, fetch_frame, slowdown_frame
from labtui.store.frames import repetition_table

#: What `with_trust` adds to a slowdown frame besides the sample figures (labtui.figures.columns):
#: labtui.core.stats.trust of each figure's repetitions.
TRUST_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "ci_method": pl.String,
    "cv": pl.Float64,
    "flags": pl.String,
    "outliers": pl.List(pl.Float64),
    "modes": pl.List(pl.Float64),
}

_SAMPLES = f"""
SELECT benchmark, metric, unit, better, placement, background, list(value ORDER BY repetition) AS samples
FROM ({REPETITION_VALUES}) WHERE session_id = ?
GROUP BY benchmark, metric, unit, better, placement, background
"""


def bootstrap_allowed(rows: int) -> bool:
    """The one interval policy: a table of at most MAX_BOOTSTRAP_ROWS figures may bootstrap a skewed figure's
    interval (labtui.core.stats.trust decides which); a larger one uses Student's t throughout, so it stays fast."""
    return rows <= MAX_BOOTSTRAP_ROWS


def repetition_samples(db: str | os.PathLike[str], session_id: str) -> pl.DataFrame:
    """Per figure (FIGURE_KEY) the list of its repetitions' values: the independent samples the slowdown
    view's mean, std and n are of."""
    return fetch_frame(db, _SAMPLES, [session_id])


def with_trust(slow: pl.DataFrame, samples: pl.DataFrame) -> pl.DataFrame:
    """The slowdown frame with each figure's sample figures (the median, and whatever labtui.figures.columns
    registers), 95% interval (and its method), CoV, trust flags, outliers and modes: labtui.core.stats.trust of
    the figure's repetitions' values (`samples`: the columns of FIGURE_KEY and a list column `samples`, as
    repetition_samples gives)."""
    by_figure = {_key(r): r["samples"] for r in samples.iter_rows(named=True)}
    bootstrap = bootstrap_allowed(slow.height)
    schema = {**{f.name: pl.Float64 for f in sample_figures()}, **TRUST_SCHEMA}
    columns: dict[str, list] = {name: [] for name in schema}
    for r in slow.iter_rows(named=True):
        values = tuple(by_figure.get(_key(r)) or [r["mean"]])
        t = _trust(values, bootstrap)
        found = {**sample_values(values), "ci_low": t.ci.low if t.ci else None, "ci_high": t.ci.high if t.ci else None,
                 "ci_method": t.ci.method if t.ci else None, "cv": t.cov, "flags": ", ".join(t.flags()),
                 "outliers": list(t.outliers), "modes": list(t.modes or ())}
        for name in schema:
            columns[name].append(found[name])
    return slow.with_columns(pl.Series(name, values, dtype=schema[name]) for name, values in columns.items())


def _key(row: dict) -> tuple:
    """A row's FIGURE_KEY, a missing placement ("" or NULL, as older stores have it) as ""."""
    return tuple((row[c] or "") if c == "placement" else row[c] for c in FIGURE_KEY)


@functools.lru_cache(maxsize=4096)
def _trust(values: tuple[float, ...], bootstrap: bool) -> Trust:
    """trust of one figure's values, remembered: while a run goes on, the live table is recomputed every few
    seconds and only the current level's values changed (about 1.5 ms a figure, most of it in scipy's MAD)."""
    return trust(values, bootstrap=bootstrap)


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

