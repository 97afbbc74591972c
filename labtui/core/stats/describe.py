"""A sample's summary (mean, std, n, CoV), slowdown by formula 5.1 of the Docker/Unikraft study, and Student's t
distribution (scipy.stats.t, imported on first use).

Slowdown in both directions: where higher is better, slowdown = (1 - x / x0) * 100; where lower is better,
slowdown = (x / x0 - 1) * 100, x0 being the baseline (first step or the worker alone).
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    mean: float
    std: float  # sample standard deviation (n - 1); 0 for one value
    median: float
    ci95: float  # half-width of the 95% confidence interval of the mean (Student's t, n - 1 df); nan for one value
    cv: float  # coefficient of variation, std / mean (nan when mean is 0)

    @property
    def sample_std(self) -> float | None:
        """The sample standard deviation as a reported figure: None for one value, which has no spread."""
        return self.std if self.n > 1 else None


def summarize(values: Sequence[float]) -> Summary:
    """Mean, std, median, 95% CI half-width and CV of raw values.

    The CI half-width is t * std / sqrt(n), t being Student's 0.975 quantile with n - 1
    degrees of freedom (scipy.stats.t), exact for every n. A nan or infinite value makes every
    figure but n and the mean nan.
    """
    if not values:
        raise ValueError("cannot summarize no values")
    n = len(values)
    mean = statistics.fmean(values)
    if not all(math.isfinite(v) for v in values):  # a value that is no number (a rate of a 0 time): no spread
        nan = float("nan")
        return Summary(n, mean, nan, nan, nan, nan)
    std = statistics.stdev(values) if n > 1 else 0.0
    ci95 = _t975(n - 1) * std / math.sqrt(n) if n > 1 else float("nan")
    return Summary(n, mean, std, statistics.median(values), ci95, coefficient_of_variation(values))


def coefficient_of_variation(values: Sequence[float]) -> float:
    """The sample standard deviation over the mean (0 for one value, nan for a zero mean); stdlib only, so the
    engine can judge a step's spread without loading scipy while it measures."""
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return std / mean if mean else float("nan")


@functools.lru_cache(maxsize=1024)
def _t975(df: int) -> float:
    """Student's 0.975 quantile for df degrees of freedom, computed once per df (summaries are many)."""
    return t_quantile(0.975, df)


def slowdown_pct(value: float, baseline: float, better: str) -> float:
    """Slowdown of value against baseline in percent; positive means worse."""
    if baseline == 0:
        return float("nan")
    if better == "higher":
        return (1.0 - value / baseline) * 100.0
    if better == "lower":
        return (value / baseline - 1.0) * 100.0
    raise ValueError(f"better must be 'higher' or 'lower', got {better!r}")


def normalized(values: Sequence[float]) -> list[float]:
    """Values divided by the first one (the studies' 'normalized to first run')."""
    if not values or values[0] == 0:
        raise ValueError("normalization needs a non-zero first value")
    return [v / values[0] for v in values]


# --- Student's t (scipy.stats.t) ----------------------------------------------


def _t():
    from scipy import stats  # imported on first use: `labtui --help` need not load scipy

    return stats.t


def _check_df(df: float) -> None:
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df!r}")


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df > 0 degrees of freedom (df may be fractional or inf)."""
    _check_df(df)
    if math.isnan(t):
        return float("nan")
    if math.isinf(df):
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    return float(_t().sf(t, df))


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    _check_df(df)
    if math.isinf(df):
        return 0.5 * math.erfc(-t / math.sqrt(2.0))
    return float(_t().cdf(t, df))


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|): the two-sided p-value of a t statistic."""
    return min(1.0, 2.0 * t_sf(abs(t), df))


def t_pdf(t: float, df: float) -> float:
    """The density of Student's t with df degrees of freedom."""
    _check_df(df)
    if math.isinf(df):
        return math.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi)
    return float(_t().pdf(t, df))


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, for 0 < p < 1."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile needs 0 < p < 1, got {p!r}")
    _check_df(df)
    if math.isinf(df):
        from scipy.stats import norm

        return float(norm.ppf(p))
    return float(_t().ppf(p, df))
