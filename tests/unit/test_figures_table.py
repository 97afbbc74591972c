"""labtui.figures' table in process: which repetitions each slowdown row's trust comes from, the interval's
method column, and the one bootstrap policy's limit (the faces only draw these columns)."""

from __future__ import annotations

import polars as pl

from labtui.core.stats.intervals import MAX_BOOTSTRAP_ROWS
from labtui.core.stats.trust import trust
from labtui.figures.table import bootstrap_allowed, with_trust

KEY = {"benchmark": "bench", "metric": "boot", "unit": "s", "better": "lower"}


def _slow(*rows: tuple[str | None, int, float]) -> pl.DataFrame:
    """Slowdown rows (placement, background, mean) of one metric."""
    return pl.DataFrame([{**KEY, "placement": placement, "background": background, "mean": mean}
                         for placement, background, mean in rows])


def _samples(*rows: tuple[str, int, list[float]]) -> pl.DataFrame:
    return pl.DataFrame([{**KEY, "placement": placement, "background": background, "samples": samples}
                         for placement, background, samples in rows])


def test_each_row_takes_the_repetitions_of_its_own_figure() -> None:
    """Matched on the whole key, background 0 and a placement included; a NULL placement (older stores) is ""."""
    slow = _slow(("alone", 0, 9.0), (None, 0, 9.0), ("", 4, 9.0))
    samples = _samples(("alone", 0, [1.0, 2.0, 6.0]), ("", 0, [3.0, 4.0, 8.0]), ("", 4, [5.0, 7.0, 7.0]))
    assert with_trust(slow, samples)["median"].to_list() == [2.0, 4.0, 7.0]


def test_a_row_without_repetitions_is_trusted_as_its_mean_alone() -> None:
    figures = with_trust(_slow(("", 0, 9.0)), _samples(("", 4, [5.0, 7.0, 7.0])))
    assert figures.select("median", "ci_low", "ci_high", "ci_method").rows() == [(9.0, None, None, None)]


def test_the_interval_method_is_named_beside_its_ends() -> None:
    figures = with_trust(_slow(("", 0, 2.0), ("", 4, 9.0)), _samples(("", 0, [1.0, 2.0, 3.0])))
    interval = trust((1.0, 2.0, 3.0)).ci
    assert interval is not None
    assert figures.select("ci_low", "ci_high", "ci_method").rows() == [
        (interval.low, interval.high, interval.method), (None, None, None)]


def test_a_table_of_at_most_max_bootstrap_rows_may_bootstrap() -> None:
    assert bootstrap_allowed(MAX_BOOTSTRAP_ROWS) and bootstrap_allowed(1)
    assert not bootstrap_allowed(MAX_BOOTSTRAP_ROWS + 1)
