"""A verdict for every table and figure (issue 41, item 1): whether a metric moves with the background at all, in one
line, and a slowdown from medians that one slow repetition cannot drag, with its own interval; none from n=1."""

from __future__ import annotations

import io
import re
import statistics
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from labtui.commands.printing import SLOWDOWN, render_summary
from labtui.core.stats.describe import slowdown_pct
from labtui.core.stats.trend import median_cov, median_slowdown, trend_fit
from labtui.core.stats.trust import SPREAD_LIMIT
from labtui.core.units import MISSING
from labtui.figures.table import session_figures, with_trust
from labtui.figures.verdict import slowdown_text, verdict
from labtui.report.data import load_session
from labtui.report.tables import slowdown_tables
from labtui.ui.model.pane_text import slowdown_cells, slowdown_headers
from labtui.ui.model.series import slowdown_rows, verdict_of

LEVELS = range(0, 1001, 10)  # the README run's 101 background counts


def growing(seed: int = 1) -> dict[int, list[float]]:
    """boot_time (s) of 1 ms plus 0.4 ms per 100 background instances, 5 repetitions a level, 2% noise."""
    rng = np.random.default_rng(seed)
    return {x: list(1e-3 + 4e-6 * x + rng.normal(0, 2e-5, 5)) for x in LEVELS}


def flat(seed: int = 2, noise: float = 5e-5) -> dict[int, list[float]]:
    """boot_time (s) of 1 ms at every level, 5 repetitions a level, `noise` std."""
    rng = np.random.default_rng(seed)
    return {x: list(1e-3 + rng.normal(0, noise, 5)) for x in LEVELS}


def test_a_growing_series_has_a_positive_slope_whose_interval_leaves_0_out() -> None:
    levels = growing()
    xs = [x for x, values in levels.items() for _ in values]
    fit = trend_fit(xs, [v for values in levels.values() for v in values])
    assert fit is not None and 0 < fit.low < fit.line.slope < fit.high and fit.distinguishable
    assert fit.low < 4e-6 < fit.high  # the slope drawn from is inside its interval
    pct, low, high = fit.change_pct()
    assert low < pct < high and pct == pytest.approx(400.0, rel=0.05)  # 1 ms at 0, 5 ms at 1000
    found = verdict("boot_time", "s", levels)
    # as many digits as tell the slope from its interval's ends
    assert found.trend and re.fullmatch(r"boot_time grows 0\.40\d* ms per 100 background instances "
                                        r"\(95% CI 0\.\d+ to 0\.\d+\), \+4\d\d\.\d% from 0 to 1000 "
                                        r"\(95% CI \+\d+\.\d to \+\d+\.\d%\)", found.line), found.line
    assert "median CoV" not in found.line  # 2% noise: within the spread limit


def test_a_shrinking_series_says_so_with_a_negative_change() -> None:
    rng = np.random.default_rng(4)
    found = verdict("ops", "1/s", {x: list(100.0 - 0.02 * x + rng.normal(0, 0.5, 3)) for x in LEVELS})
    assert re.fullmatch(r"ops shrinks 1\.98 1/s per 100 background instances \(95% CI 1\.96 to 2\.00\), "
                        r"-19\.8% from 0 to 1000 \(95% CI -20\.0 to -19\.7%\)", found.line), found.line


def test_a_flat_noisy_series_says_no_trend() -> None:
    found = verdict("boot_time", "s", flat())
    assert found.fit is not None and found.fit.low < 0 < found.fit.high and not found.trend
    assert found.line.startswith("boot_time: no trend distinguishable from noise (slope 95% CI -")
    assert found.line.endswith(" ms per 100 background instances)")


def test_a_wide_spread_is_named_with_the_trust_limit_and_what_to_do() -> None:
    found = verdict("boot_time", "s", flat(noise=3e-4))  # a CoV of about 30% at each level
    assert found.spread is not None and found.spread > SPREAD_LIMIT
    assert found.spread == pytest.approx(median_cov(flat(noise=3e-4).values()))
    assert found.line.endswith(f"(median CoV {found.spread:.1%} above the 10% limit: rerun on an idle host, "
                               "or raise worker.runs)")


def test_one_repetition_a_level_still_has_a_trend_but_says_n_1() -> None:
    found = verdict("boot_time", "s", {0: [4.9e-3], 5: [7.6e-3], 10: [7.8e-3], 15: [7.8e-3]})
    assert found.repetitions == 1 and found.spread is None and found.fit is not None
    assert "per background instance" in found.line  # below 100 instances: per instance
    assert found.line.endswith("(n=1 at each level: no spread to judge; raise suite.repetitions)")
    too_few = verdict("boot_time", "s", {0: [1e-3], 10: [2e-3]})
    assert too_few.fit is None and too_few.line.startswith("boot_time: too few values for a trend (2 at 2 background")


def test_the_median_slowdown_ignores_one_huge_outlier_where_the_mean_based_does_not() -> None:
    baseline = [10.0, 10.1, 9.9, 10.0, 10.2, 10.0, 9.9, 10.1, 10.0, 10.1]
    level = [10.0, 10.1, 9.9, 10.1, 10.0, 10.2, 9.9, 10.0, 10.1, 1000.0]  # one boot waited for a CPU a daemon held
    mean_based = slowdown_pct(statistics.fmean(level), statistics.fmean(baseline), "lower")
    robust = median_slowdown(baseline, level, "lower")
    assert mean_based > 900
    assert robust is not None and robust.pct == pytest.approx((statistics.median(level) / 10.0 - 1) * 100)
    assert robust.pct < 1 and robust.ci is not None and -3 < robust.ci.low <= 0 <= robust.ci.high < 3  # nor an end
    assert robust == median_slowdown(baseline, level, "lower")  # seeded: the same interval every time
    # of 5 repetitions, the point still ignores it; the interval is honest that 3 of 5 resampled can be the outlier
    five = median_slowdown(baseline[:5], [*level[:4], 1000.0], "lower")  # medians 10.0 and 10.1
    assert five is not None and five.pct == pytest.approx(1.0)
    assert five.ci is not None and five.ci.low < 0


def test_the_median_slowdown_of_a_slower_level_has_an_interval_around_it_in_either_direction() -> None:
    baseline, level = [10.0, 10.2, 9.8, 10.1, 9.9], [13.0, 12.8, 13.1, 12.9, 13.2]
    slower = median_slowdown(baseline, level, "lower")
    assert slower is not None and slower.ci is not None and 0 < slower.ci.low <= slower.pct <= slower.ci.high
    assert slower.pct == pytest.approx(30.0)
    rate = median_slowdown(level, baseline, "higher")  # a rate that fell from 13 to 10: worse, positive
    assert rate is not None and rate.ci is not None and 0 < rate.ci.low <= rate.pct <= rate.ci.high
    assert median_slowdown(baseline, level, "lower", interval=False).ci is None


def test_one_repetition_gives_no_slowdown() -> None:
    assert median_slowdown([10.0], [12.0], "lower") is None
    assert median_slowdown([10.0, 10.1], [12.0], "lower") is None
    assert median_slowdown([10.0, 10.1], [12.0, float("nan")], "lower") is None
    assert median_slowdown([0.0, 0.0], [1.0, 2.0], "lower") is None  # no ratio to a baseline of 0
    assert slowdown_text(None, None, None) == MISSING
    assert slowdown_text(0.0, None, None) == "+0.0 (baseline)"
    assert slowdown_text(38.14, 20.2, 55.3, "%") == "+38.1% (+20 to +55)"


def _store(path: Path, samples: dict[int, list[float]]) -> Path:
    from test_trust import _store as store

    return store(path, samples)


def test_the_figures_table_carries_the_median_slowdown_and_the_verdict(tmp_path: Path) -> None:
    samples = {0: [0.010, 0.0101, 0.0099], 10: [0.011, 0.0111, 0.5], 20: [0.012, 0.0121, 0.0119]}
    db = _store(tmp_path / "lab.duckdb", samples)
    figures = {r["background"]: r for r in session_figures(db, "s1").iter_rows(named=True)}
    assert (figures[0]["median_slowdown_pct"], figures[0]["median_slowdown_low"]) == (0.0, None)  # the baseline
    assert figures[10]["median_slowdown_pct"] == pytest.approx((0.0111 / 0.0100 - 1) * 100)
    assert figures[10]["slowdown_pct"] > 1000  # the store's view keeps its mean-based one
    expected = verdict("boot_time", "s", samples).line
    assert {r["verdict"] for r in figures.values()} == {expected}


def test_the_verdict_is_of_every_level_even_those_a_table_leaves_out(tmp_path: Path) -> None:
    """The run table shows 21 of 101 levels; its verdict is still fitted to all of them."""
    levels = {x: values for x, values in growing().items() if x <= 100}
    db = _store(tmp_path / "lab.duckdb", levels)
    figures = session_figures(db, "s1")
    from labtui.figures.table import repetition_samples

    some = with_trust(figures.select(*figures.columns[:13]).filter(figures["background"].is_in([0, 100])),
                      repetition_samples(db, "s1"))
    assert set(some["verdict"]) == {verdict("boot_time", "s", levels).line}


def test_the_verdict_is_above_the_run_table_the_reports_table_and_in_the_console_pane(tmp_path: Path) -> None:
    samples = {x: values for x, values in growing().items() if x <= 200}
    db = _store(tmp_path / "lab.duckdb", samples)
    line = verdict("boot_time", "s", samples).line
    assert line.startswith("boot_time grows ")
    out = io.StringIO()
    render_summary(Console(file=out, width=400), db, "s1")
    lines = out.getvalue().splitlines()
    at = lines.index(line)
    assert lines[at + 1].startswith("boot: boot_time (ms, lower is better)") and lines[at + 3].startswith("┃ background")
    header = [c.strip() for c in lines[at + 3].split("┃")[1:-1]]
    assert header[-2:] == [SLOWDOWN, "trust"] and "slowdown %" not in header
    (table,) = slowdown_tables(load_session(db, "s1"))
    assert table.verdict == line and "median slowdown % (95% CI)" in table.headers and "slowdown %" not in table.headers
    figures = session_figures(db, "s1")
    assert verdict_of(figures, "boot_time") == line
    cells = [dict(zip(slowdown_headers(), (c.plain for c in slowdown_cells(row))))
             for row in slowdown_rows(figures).values()]
    assert cells[0]["median slowdown"] == "+0.0% (baseline)"
    assert all(c["median slowdown"].endswith(")") for c in cells)
