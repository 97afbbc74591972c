"""Trends across background counts: the Zones study's trendlines (its Δ% and d%), a figure's trend fit with its
interval (the verdict's), and the robust slowdown of a level from medians with a bootstrap interval."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from labtui.core.stats.describe import coefficient_of_variation, slowdown_pct, t_quantile
from labtui.core.stats.intervals import Interval


@dataclass(frozen=True, slots=True)
class Trendline:
    """The least-squares line y = slope * x + intercept of a metric against the background count x."""

    slope: float
    intercept: float
    slope_stderr: float
    r2: float
    n: int  # points fitted
    xs: tuple[float, ...]  # the distinct background counts measured, ascending

    def at(self, x: float) -> float:
        """The line's value at background count x."""
        return self.slope * x + self.intercept


def trendline(xs: Sequence[float], ys: Sequence[float]) -> Trendline:
    """The linear regression of ys on xs (scipy.stats.linregress); ValueError with fewer than two distinct xs."""
    from scipy import stats

    distinct = tuple(sorted(set(xs)))
    if len(distinct) < 2:
        raise ValueError(f"a trendline needs at least two background counts, got {len(distinct)}")
    fit = stats.linregress(xs, ys)
    return Trendline(float(fit.slope), float(fit.intercept), float(fit.stderr), float(fit.rvalue) ** 2, len(xs),
                     distinct)


def trend_delta_pct(line: Trendline) -> float:
    """Δ% of the Zones study (section 5.1.2, Table 5-2): the trendline's change from no background to the
    most measured, over its intercept b: slope * x_max / b * 100 (nan when b is 0).  Table 5-3's global-zone Int Additions,
    y = -755.25x + 4299360 over 109 zones, gives -1.91%."""
    return line.slope * line.xs[-1] / line.intercept * 100.0 if line.intercept else float("nan")


def trend_delta_ci_pct(line: Trendline, level: float = 0.95) -> float:
    """Half-width of Δ%'s confidence interval from the slope's standard error (Student's t, n - 2 df);
    nan with two points."""
    if line.n <= 2 or not line.intercept:
        return float("nan")
    return t_quantile(0.5 + level / 2, line.n - 2) * line.slope_stderr * line.xs[-1] / abs(line.intercept) * 100.0


def trend_distance_pct(line: Trendline, baseline: Trendline) -> float:
    """d% of the Zones study: the average distance of this trendline from the baseline's (the global zone
    in the baseline scenario), over the baseline's intercept b0, averaged over this line's measured
    background counts.  Positive: better than the baseline for a higher-is-better metric."""
    distance = statistics.fmean(line.at(x) - baseline.at(x) for x in line.xs)
    return distance / baseline.intercept * 100.0 if baseline.intercept else float("nan")

# --- trend and robust slowdown ------------------------------------------------------
#
# What a session's table says in one line (labtui.figures.verdict): does a figure move with the
# background at all (the least-squares slope of its repetitions' values, with the slope's 95% t
# interval), and how much slower is each level than the baseline, from medians, which one slow
# repetition cannot drag, with a percentile bootstrap interval of that ratio.

#: Resamples of the median-slowdown bootstrap: medians of a few values take few distinct values, so
#: more resamples hardly move the percentiles (5 values a side: the same interval from 999 to 9999).
MEDIAN_BOOTSTRAP_RESAMPLES = 1999


@dataclass(frozen=True, slots=True)
class TrendFit:
    """A trendline (labtui.core.stats.trend.trendline) with the `level` confidence interval of its slope."""

    line: Trendline
    low: float  # the slope's interval: slope -+ t(level, n - 2) * stderr
    high: float
    level: float = 0.95

    @property
    def distinguishable(self) -> bool:
        """Whether the slope's interval leaves 0 out: the figure moves with the background beyond its noise."""
        return self.low > 0 or self.high < 0

    def change_pct(self) -> tuple[float, float, float]:
        """The line's change from the first count measured to the last, in % of its value at the first, with
        the ends of its interval from the slope's (that value held fixed, as trend_delta_ci_pct does); nans
        when the line is 0 or below at the first count."""
        first, last = self.line.xs[0], self.line.xs[-1]
        at_first = self.line.at(first)
        if not at_first > 0:
            nan = float("nan")
            return nan, nan, nan
        span = (last - first) / at_first * 100.0
        return self.line.slope * span, self.low * span, self.high * span


def trend_fit(xs: Sequence[float], ys: Sequence[float], level: float = 0.95) -> TrendFit | None:
    """The least-squares line of ys on xs (scipy.stats.linregress, through trendline) with the slope's
    interval from its standard error and Student's t with n - 2 degrees of freedom (t_quantile).

    None with fewer than two distinct xs or fewer than three points (no degrees of freedom left for the
    interval), or when a value is not finite."""
    if len(xs) < 3 or len(set(xs)) < 2 or not all(math.isfinite(y) for y in ys):
        return None
    line = trendline(xs, ys)
    half = t_quantile(0.5 + level / 2.0, line.n - 2) * line.slope_stderr
    return TrendFit(line, line.slope - half, line.slope + half, level)


def median_cov(groups: Iterable[Sequence[float]]) -> float | None:
    """The median over groups (a figure's levels) of each one's |coefficient of variation|, for groups of at
    least 2 finite values and a non-zero mean; None when no group has one.  Compared with SPREAD_LIMIT."""
    covs = [abs(coefficient_of_variation(g)) for g in groups
            if len(g) > 1 and all(math.isfinite(v) for v in g) and statistics.fmean(g)]
    return statistics.median(covs) if covs else None


@dataclass(frozen=True, slots=True)
class RobustSlowdown:
    """Slowdown of a level against the baseline from their medians, with a bootstrap interval."""

    pct: float  # slowdown_pct(median(values), median(baseline), better): positive means worse
    ratio: float  # median(values) / median(baseline)
    ci: Interval | None  # the slowdown's percentile bootstrap interval, in %; None when none could be drawn


def median_slowdown(baseline: Sequence[float], values: Sequence[float], better: str, level: float = 0.95,
                    seed: int = 0, interval: bool = True) -> RobustSlowdown | None:
    """Slowdown of values against baseline (formula 5.1, slowdown_pct) from the ratio of their medians, with the
    percentile bootstrap interval of that ratio (scipy.stats.bootstrap, each side resampled on its own, a fixed
    seed so the same samples give the same interval; none without `interval`).

    None when a side has fewer than 2 values (one value has no spread: n=1 gives no slowdown figure), a value is
    not finite, or the baseline's median is 0."""
    if min(len(baseline), len(values)) < 2 or not all(math.isfinite(v) for v in (*baseline, *values)):
        return None
    base_median = statistics.median(baseline)
    if base_median == 0:
        return None
    ratio = statistics.median(values) / base_median
    pct = slowdown_pct(ratio, 1.0, better)
    if not interval:
        return RobustSlowdown(pct, ratio, None)
    import numpy as np
    from scipy import stats

    def median_ratio(x, y, axis=-1):
        return np.median(y, axis=axis) / np.median(x, axis=axis)

    try:
        with np.errstate(divide="ignore", invalid="ignore"):  # a resample of a baseline with zeros: inf, dropped below
            res = stats.bootstrap((np.asarray(baseline, float), np.asarray(values, float)), median_ratio,
                                  vectorized=True, paired=False, confidence_level=level, method="percentile",
                                  n_resamples=MEDIAN_BOOTSTRAP_RESAMPLES, rng=np.random.default_rng(seed))
    except ValueError:
        return RobustSlowdown(pct, ratio, None)
    ends = sorted(slowdown_pct(float(r), 1.0, better)
                  for r in (res.confidence_interval.low, res.confidence_interval.high))
    if not all(math.isfinite(e) for e in ends):
        return RobustSlowdown(pct, ratio, None)
    return RobustSlowdown(pct, ratio, Interval(ends[0], ends[1], "bootstrap", level))
