"""Intervals of a mean and of a difference, and Welch's test.

An interval is Student's (or Welch's) t, except for a skewed sample of at least BOOTSTRAP_MIN values, which is
bootstrapped (scipy.stats.bootstrap, BCa).  Few values are never bootstrapped: with 5 of them a BCa interval of
the mean covered it in 85% of draws from a normal population and 81% from a lognormal one, where Student's t
covered it in 95% and 90% (docs/suites.md, "How far to trust a figure").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from labtui.core.stats.describe import Summary, slowdown_pct, summarize, t_quantile


@dataclass(frozen=True, slots=True)
class Welch:
    """Welch's two-sample t-test of mean(b) - mean(a) (unequal variances), from scipy.stats.ttest_ind."""

    diff: float  # mean(b) - mean(a)
    se: float  # standard error of diff
    t: float
    df: float  # Welch-Satterthwaite degrees of freedom
    p: float  # two-sided
    ci_low: float  # confidence interval of diff (Student's t with df)
    ci_high: float


def welch_df(var_a: float, n_a: int, var_b: float, n_b: int) -> float:
    """Welch-Satterthwaite degrees of freedom from two sample variances and sizes (n >= 2 each)."""
    ua, ub = var_a / n_a, var_b / n_b
    if ua + ub == 0:
        return float(n_a + n_b - 2)
    return (ua + ub) ** 2 / (ua * ua / (n_a - 1) + ub * ub / (n_b - 1))


def welch(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Welch:
    """Welch's t-test and the `level` confidence interval of mean(b) - mean(a); both need >= 2 values.

    When both samples are constant (no spread) the degrees of freedom fall back to
    n_a + n_b - 2, and a non-zero difference is certain: t = +-inf, p = 0.
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"Welch's test needs at least 2 values on each side, got {len(a)} and {len(b)}")
    sa, sb = summarize(a), summarize(b)
    diff = sb.mean - sa.mean
    se = math.sqrt(sa.std**2 / sa.n + sb.std**2 / sb.n)
    df = welch_df(sa.std**2, sa.n, sb.std**2, sb.n)
    if se == 0:
        t = 0.0 if diff == 0 else math.copysign(math.inf, diff)
        return Welch(diff, 0.0, t, df, 1.0 if diff == 0 else 0.0, diff, diff)
    from scipy import stats

    result = stats.ttest_ind(list(b), list(a), equal_var=False)
    ci = result.confidence_interval(confidence_level=level)
    return Welch(diff, se, float(result.statistic), float(result.df), float(result.pvalue), float(ci.low), float(ci.high))


#: Fewest samples on a side for a bootstrap interval.  Below it a BCa interval of the mean is too
#: narrow: from 10 values of a skewed population it covered the mean no more often than Student's t,
#: and from 5 values less often, whatever the population (docs/suites.md).
BOOTSTRAP_MIN = 20
#: Above this many figures in one table, intervals are Student's t only (a bootstrap costs ~10 ms a figure).
MAX_BOOTSTRAP_ROWS = 200
#: |adjusted Fisher-Pearson skewness| from which a sample counts as skewed.
SKEWED = 1.0
BOOTSTRAP_RESAMPLES = 9999


def skewness(values: Sequence[float]) -> float:
    """The adjusted Fisher-Pearson sample skewness G1 (nan below 3 values or without spread)."""
    if len(values) < 3 or max(values) == min(values):
        return float("nan")
    from scipy import stats

    return float(stats.skew(list(values), bias=False))


def bootstrap_fits(values: Sequence[float]) -> bool:
    """Whether a bootstrap interval is to be printed for values rather than Student's t: at least
    BOOTSTRAP_MIN of them, and skewed (|G1| >= SKEWED)."""
    if len(values) < BOOTSTRAP_MIN:
        return False
    g1 = skewness(values)
    return g1 == g1 and abs(g1) >= SKEWED


@dataclass(frozen=True, slots=True)
class Interval:
    low: float
    high: float
    method: str  # "t" (Student's / Welch's t) or "bootstrap" (BCa, scipy.stats.bootstrap)
    level: float = 0.95

    def contains(self, x: float) -> bool:
        return self.low <= x <= self.high


def bootstrap_diff_ci(a: Sequence[float], b: Sequence[float], level: float = 0.95, seed: int = 0) -> Interval | None:
    """The BCa bootstrap interval of mean(b) - mean(a) (scipy.stats.bootstrap, two independent samples).

    None when a side has fewer than BOOTSTRAP_MIN values or the bootstrap is degenerate
    (no spread anywhere).  The seed is fixed, so the same samples give the same interval.
    """
    if min(len(a), len(b)) < BOOTSTRAP_MIN or (max(a) == min(a) and max(b) == min(b)):
        return None
    import numpy as np
    from scipy import stats

    def diff(x, y, axis=-1):
        return np.mean(y, axis=axis) - np.mean(x, axis=axis)

    try:
        res = stats.bootstrap((np.asarray(a, float), np.asarray(b, float)), diff, vectorized=True,
                              confidence_level=level, n_resamples=BOOTSTRAP_RESAMPLES, method="BCa",
                              rng=np.random.default_rng(seed))
    except ValueError:
        return None
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return Interval(low, high, "bootstrap", level)


def bootstrap_mean_ci(values: Sequence[float], level: float = 0.95, seed: int = 0) -> Interval | None:
    """The BCa bootstrap interval of the mean of one sample; None as for bootstrap_diff_ci."""
    if len(values) < BOOTSTRAP_MIN or max(values) == min(values):
        return None
    import numpy as np
    from scipy import stats

    try:
        res = stats.bootstrap((np.asarray(values, float),), np.mean, vectorized=True, confidence_level=level,
                              n_resamples=BOOTSTRAP_RESAMPLES, method="BCa", rng=np.random.default_rng(seed))
    except ValueError:
        return None
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return Interval(low, high, "bootstrap", level) if math.isfinite(low) and math.isfinite(high) else None


def mean_ci(values: Sequence[float], level: float = 0.95, bootstrap: bool = True) -> Interval | None:
    """The interval of a mean to print: a bootstrap one where bootstrap_fits(values) (and bootstrap is
    true), else Student's t; None for fewer than 2 values.

    Of values that are none of them negative (a time, a rate, a size) the mean cannot be negative either, so
    a t interval that reaches below 0 (a few skewed values) starts at 0: the part cut off holds no possible
    mean, and a negative boot time is not printed."""
    if len(values) < 2:
        return None
    if bootstrap and bootstrap_fits(values) and (boot := bootstrap_mean_ci(values, level)) is not None:
        return boot
    s = summarize(values)
    half = t_quantile(0.5 + level / 2.0, s.n - 1) * s.std / math.sqrt(s.n)
    low = max(s.mean - half, 0.0) if min(values) >= 0 else s.mean - half
    return Interval(low, s.mean + half, "t", level)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Session B's samples of one metric against session A's."""

    a: Summary
    b: Summary
    ratio: float  # mean B / mean A (nan when mean A is 0)
    change_pct: float  # (ratio - 1) * 100
    slowdown_pct: float  # slowdown_pct(mean B, mean A, better): positive means B is worse
    diff: float  # mean B - mean A
    welch: Welch | None  # None unless both sides have at least 2 values
    significant: bool | None  # Welch's p < alpha; None without a test
    ci: Interval | None = None  # the interval of B - A to print (compare_samples says which)
    bootstrap: Interval | None = None  # the bootstrap interval, whenever one was computed


def compare_samples(a: Sequence[float], b: Sequence[float], better: str, alpha: float = 0.05) -> Comparison:
    """Ratio, change, slowdown and (with >= 2 values each) Welch's test of B against A.

    The samples must be independent: one value per repetition (or per session), never the
    instances of one step.  The interval of B - A is Welch's t interval, or the BCa bootstrap
    interval where either side is skewed and both have at least BOOTSTRAP_MIN values.
    """
    sa, sb = summarize(a), summarize(b)
    ratio = sb.mean / sa.mean if sa.mean else float("nan")
    test = welch(a, b, 1.0 - alpha) if sa.n >= 2 and sb.n >= 2 else None
    boot = None
    ci = None
    if test is not None:
        ci = Interval(test.ci_low, test.ci_high, "t", 1.0 - alpha)
        if min(len(a), len(b)) >= BOOTSTRAP_MIN and (bootstrap_fits(a) or bootstrap_fits(b)):
            boot = bootstrap_diff_ci(a, b, 1.0 - alpha)
            ci = boot or ci
    return Comparison(
        a=sa,
        b=sb,
        ratio=ratio,
        change_pct=(ratio - 1.0) * 100.0,
        slowdown_pct=slowdown_pct(sb.mean, sa.mean, better),
        diff=sb.mean - sa.mean,
        welch=test,
        significant=None if test is None else test.p < alpha,
        ci=ci,
        bootstrap=boot,
    )
