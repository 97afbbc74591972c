"""Statistics computed from raw samples; nothing is stored only as an aggregate.

Slowdown follows formula 5.1 of the Docker/Unikraft study in both directions:
for a metric where higher is better, slowdown = (1 - x / x0) * 100; where lower
is better, slowdown = (x / x0 - 1) * 100, x0 being the baseline (first step or
the worker alone).

Two sessions are compared with Welch's t-test (unequal variances, the
Welch-Satterthwaite degrees of freedom).  Student's t distribution, for that
test and for every summary's 95% confidence interval, is computed here, without
scipy, from the regularized incomplete beta function (a continued fraction
evaluated with the modified Lentz method).
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


def summarize(values: Sequence[float]) -> Summary:
    """Mean, std, median, 95% CI half-width and CV of raw values.

    The CI half-width is t * std / sqrt(n), t being Student's 0.975 quantile with n - 1
    degrees of freedom (the two-sided 95% point), exact for every n.
    """
    if not values:
        raise ValueError("cannot summarize no values")
    n = len(values)
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if n > 1 else 0.0
    ci95 = _t975(n - 1) * std / math.sqrt(n) if n > 1 else float("nan")
    cv = std / mean if mean else float("nan")
    return Summary(n, mean, std, statistics.median(values), ci95, cv)


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


_TINY = 1e-300
_EPS = 1e-15
_MAX_TERMS = 100_000


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if not (a > 0 and b > 0):
        raise ValueError(f"betainc needs a > 0 and b > 0, got a={a!r}, b={b!r}")
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"betainc needs 0 <= x <= 1, got x={x!r}")
    return _betainc(a, b, x, 1.0 - x)


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) with y = 1 - x given separately, so that x near 1 keeps its precision."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, y) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (Numerical Recipes betacf), by the modified Lentz method."""
    c = 1.0
    d = 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS + 1):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a - 1.0 + m2) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            return h
    raise ArithmeticError(f"incomplete beta fraction did not converge for a={a}, b={b}, x={x}")


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df > 0 degrees of freedom (df may be fractional or inf)."""
    if not df > 0:
        raise ValueError(f"degrees of freedom must be positive, got {df!r}")
    if math.isnan(t):
        return float("nan")
    if math.isinf(df):
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t), t * t / (df + t * t)) if math.isfinite(t) else 0.0
    return tail if t >= 0 else 1.0 - tail


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    return 1.0 - t_sf(t, df) if t >= 0 else t_sf(-t, df)


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|): the two-sided p-value of a t statistic."""
    return min(1.0, 2.0 * t_sf(abs(t), df))


def t_pdf(t: float, df: float) -> float:
    """The density of Student's t with df degrees of freedom."""
    if math.isinf(df):
        return math.exp(-0.5 * t * t) / math.sqrt(2.0 * math.pi)
    log_norm = math.lgamma((df + 1.0) / 2.0) - math.lgamma(df / 2.0) - 0.5 * math.log(df * math.pi)
    return math.exp(log_norm - (df + 1.0) / 2.0 * math.log1p(t * t / df))


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, for 0 < p < 1: Newton steps on the upper tail, kept inside a bisection bracket."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t_quantile needs 0 < p < 1, got {p!r}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    q = 1.0 - p
    if q == 0.5:
        return 0.0
    lo, hi, t = 0.0, math.inf, 1.0
    for _ in range(200):
        excess = t_sf(t, df) - q  # the tail falls as t grows
        if excess == 0:
            return t
        if excess > 0:
            lo = t
        else:
            hi = t
        density = t_pdf(t, df)
        step = excess / density if density > 0 else math.inf
        nxt = t + step
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi) if math.isfinite(hi) else 2.0 * max(t, lo)
        if abs(nxt - t) <= 4 * _EPS * nxt:
            return nxt
        t = nxt
    raise ArithmeticError(f"t_quantile did not converge for p={p}, df={df}")


@dataclass(frozen=True, slots=True)
class Welch:
    """Welch's two-sample t-test of mean(b) - mean(a) (unequal variances)."""

    diff: float  # mean(b) - mean(a)
    se: float  # standard error of diff
    t: float
    df: float  # Welch-Satterthwaite degrees of freedom
    p: float  # two-sided
    ci_low: float  # confidence interval of diff
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
    return _welch(summarize(a), summarize(b), level)


def _welch(sa: Summary, sb: Summary, level: float) -> Welch:
    var_a, var_b = sa.std**2, sb.std**2
    diff = sb.mean - sa.mean
    se = math.sqrt(var_a / sa.n + var_b / sb.n)
    df = welch_df(var_a, sa.n, var_b, sb.n)
    if se == 0:
        t = 0.0 if diff == 0 else math.copysign(math.inf, diff)
        return Welch(diff, 0.0, t, df, 1.0 if diff == 0 else 0.0, diff, diff)
    t = diff / se
    half = t_quantile(0.5 + level / 2.0, df) * se
    return Welch(diff, se, t, df, t_two_sided_p(t, df), diff - half, diff + half)


@dataclass(frozen=True, slots=True)
class Comparison:
    """Session B's raw values of one metric against session A's."""

    a: Summary
    b: Summary
    ratio: float  # mean B / mean A (nan when mean A is 0)
    change_pct: float  # (ratio - 1) * 100
    slowdown_pct: float  # slowdown_pct(mean B, mean A, better): positive means B is worse
    diff: float  # mean B - mean A
    welch: Welch | None  # None unless both sides have at least 2 values
    significant: bool | None  # p < alpha; None without a test


def compare_samples(a: Sequence[float], b: Sequence[float], better: str, alpha: float = 0.05) -> Comparison:
    """Ratio, change, slowdown and (with >= 2 values each) Welch's test of B against A."""
    sa, sb = summarize(a), summarize(b)
    ratio = sb.mean / sa.mean if sa.mean else float("nan")
    test = _welch(sa, sb, 1.0 - alpha) if sa.n >= 2 and sb.n >= 2 else None
    return Comparison(
        a=sa,
        b=sb,
        ratio=ratio,
        change_pct=(ratio - 1.0) * 100.0,
        slowdown_pct=slowdown_pct(sb.mean, sa.mean, better),
        diff=sb.mean - sa.mean,
        welch=test,
        significant=None if test is None else test.p < alpha,
    )


def normalized(values: Sequence[float]) -> list[float]:
    """Values divided by the first one (the studies' 'normalized to first run')."""
    if not values or values[0] == 0:
        raise ValueError("normalization needs a non-zero first value")
    return [v / values[0] for v in values]


def aggregate(values: Sequence[float]) -> float:
    """The aggregate S_n = sum of R_i over concurrently measured instances."""
    return float(sum(values))
