"""Statistics computed from raw samples; nothing is stored only as an aggregate.

Each figure is defined once, here; the live panes, the CLI tables, reports and
`labtui compare` call these definitions.

Slowdown follows formula 5.1 of the Docker/Unikraft study in both directions:
for a metric where higher is better, slowdown = (1 - x / x0) * 100; where lower
is better, slowdown = (x / x0 - 1) * 100, x0 being the baseline (first step or
the worker alone).

Aggregates across instances that ran at once (`aggregate_readings`): a rate
(higher is better: ops/s, MB/s, a CPU share) sums, S_n = sum of R_i, as the
Zones study and UnixBench's multi-copy score add theirs.  A time (lower is
better, in s, ms, us or ns) is never summed: n instances that each take t_i to
do one unit of work complete sum(1 / t_i) units per second together, the
aggregate throughput of the VServer/Xen paper's Figure 7.  Anything else
(bytes, latency percentiles, gaps) is kept per instance only.

Student's t distribution, Welch's test and the intervals come from
scipy.stats.  An interval is Student's (or Welch's) t, except for a skewed
sample of at least BOOTSTRAP_MIN values, which is bootstrapped
(scipy.stats.bootstrap, BCa).  Few values are never bootstrapped: with 5 of
them a BCa interval of the mean covered it in 85% of draws from a normal
population and 81% from a lognormal one, where Student's t covered it in 95%
and 90% (docs/suites.md, "How far to trust a figure").
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

# --- summaries ---------------------------------------------------------------


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


# --- Welch's test, and intervals of a difference --------------------------------


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


# --- how far to trust a figure ---------------------------------------------------

#: Coefficient of variation above which a figure's spread is flagged.
SPREAD_LIMIT = 0.10
#: |modified Z-score| above which a value is an outlier: hyperfine's threshold, 1.4826 * 10 times the
#: raw MAD, which is 10 on the Iglewicz-Hoaglin scale used here (their own 3.5 flags a quarter of
#: five-value samples of steady boots: a deviation of 20% scores above it when the MAD is small).
OUTLIER_Z = 10.0
#: Fewest values a bimodality verdict is given for: with fewer, chance gaps look like two modes.
BIMODAL_MIN = 10
#: Two groups are two modes when the gap between them is wider than this many times either group's range.
BIMODAL_GAP = 1.5


def modified_z_scores(values: Sequence[float]) -> list[float]:
    """0.6745 (x - median) / MAD of each value (MAD from scipy.stats.median_abs_deviation).

    Where more than half the values are equal (MAD 0) the mean absolute deviation stands in,
    (x - median) / (1.253314 * MeanAD); all zeros when every value is the same.
    """
    from scipy import stats

    median = statistics.median(values)
    mad = float(stats.median_abs_deviation(values))
    if mad > 0:
        return [0.6745 * (v - median) / mad for v in values]
    mean_ad = statistics.fmean(abs(v - median) for v in values)
    return [(v - median) / (1.253314 * mean_ad) if mean_ad else 0.0 for v in values]


def outliers(values: Sequence[float]) -> list[float]:
    """The values whose |modified Z-score| is above OUTLIER_Z (none below 3 values)."""
    if len(values) < 3:
        return []
    return [v for v, z in zip(values, modified_z_scores(values)) if abs(z) > OUTLIER_Z]


def modes(values: Sequence[float]) -> tuple[float, float] | None:
    """The medians of two groups the values fall into, or None when they look unimodal.

    Two groups: split at a gap between sorted values, each side holding at least 2 values and a
    fifth of them, the gap wider than BIMODAL_GAP times the range of either side.  Positive values
    are compared on a log scale (timings vary by ratios: 1 ms against 8 to 25 ms is two modes).
    No verdict (None) below BIMODAL_MIN values.
    """
    ordered = sorted(values)
    n = len(ordered)
    if n < BIMODAL_MIN:
        return None
    scale = [math.log(v) for v in ordered] if ordered[0] > 0 else ordered
    least = max(2, math.ceil(n / 5))
    for i in range(least, n - least + 1):
        gap = scale[i] - scale[i - 1]
        if gap > 0 and gap > BIMODAL_GAP * max(scale[i - 1] - scale[0], scale[-1] - scale[i]):
            return statistics.median(ordered[:i]), statistics.median(ordered[i:])
    return None


#: The trust flag of a figure from one sample (one repetition): nothing shows how far it would move.
SINGLE = "n=1: no spread"


@dataclass(frozen=True, slots=True)
class Trust:
    """How far to trust the mean of some samples: their summary, interval and what is wrong with them."""

    summary: Summary
    ci: Interval | None  # mean_ci: None below 2 values
    outliers: tuple[float, ...]  # by modified Z-score
    modes: tuple[float, float] | None  # two groups' medians when bimodal
    spread_limit: float

    @property
    def cov(self) -> float | None:
        """The coefficient of variation as a table shows it: its size, None below 2 values or for a zero mean."""
        cv = self.summary.cv
        return abs(cv) if self.summary.n > 1 and cv == cv else None

    @property
    def wide(self) -> bool:
        """The coefficient of variation is above the limit."""
        return abs(self.summary.cv) > self.spread_limit  # nan (a zero mean) compares False

    def flags(self) -> list[str]:
        """Short words for a table cell: SINGLE (one value, so no spread, interval or outlier to judge),
        "spread" (CoV above the limit), "2 outliers", "bimodal"; empty when nothing is wrong."""
        if self.summary.n == 1:
            return [SINGLE]
        found = ["spread"] if self.wide else []
        if self.outliers:
            found.append(f"{len(self.outliers)} outlier" + ("s" if len(self.outliers) > 1 else ""))
        if self.modes:
            found.append("bimodal")
        return found


def trust(values: Sequence[float], spread_limit: float = SPREAD_LIMIT, bootstrap: bool = True) -> Trust:
    """Summary, 95% interval of the mean (mean_ci; Student's t alone without bootstrap, which costs
    about 10 ms a figure), outliers and modes of the samples of one figure."""
    return Trust(summarize(values), mean_ci(values, bootstrap=bootstrap), tuple(outliers(values)), modes(values),
                 spread_limit)


# --- aggregates across instances that ran at once --------------------------------

#: Seconds per unit of the time units readings use.
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}
#: Parts of a metric's name that make a time a statistic of waiting (a latency, a gap, a lag),
#: not the time one unit of work takes: 1 / t of it is no throughput.
_NOT_WORK = ("latency", "gap", "jitter", "spread", "stdev")  # anywhere in a word of the name
_NOT_WORK_WORDS = ("lag", "std", "max", "min", "p50", "p90", "p95", "p99", "p999")  # whole words


@dataclass(frozen=True, slots=True)
class Aggregate:
    """What n instances did together, for one metric they each reported."""

    metric: str  # the aggregate's metric name
    value: float
    unit: str
    better: str
    how: str  # "sum" (a rate, summed) or "rate_sum" (a time, as the throughput sum(1/t) it implies)


def aggregate(values: Sequence[float]) -> float:
    """The aggregate S_n = sum of R_i of a rate over concurrently measured instances.

    Only for rates (higher is better); a time is aggregated by `rate_sum`, see `aggregate_metric`.
    """
    return float(sum(values))


def rate_sum(times: Sequence[float], unit: str) -> float:
    """The throughput, per second, of instances that each took times[i] (in unit) per unit of work: sum(1 / t)."""
    scale = TIME_UNITS[unit]
    if any(not t > 0 for t in times):
        return float("nan")
    return float(sum(1.0 / (t * scale) for t in times))


def is_work_time(metric: str, unit: str, better: str) -> bool:
    """A lower-is-better time of one unit of work (fork_us, inserts_5000_s, boot_time), whose inverse is a rate."""
    if better != "lower" or unit not in TIME_UNITS:
        return False
    words = metric.lower().replace("-", "_").split("_")
    return not any(w in _NOT_WORK_WORDS or any(part in w for part in _NOT_WORK) for w in words)


def aggregate_metric(metric: str, unit: str, better: str, values: Sequence[float]) -> Aggregate | None:
    """The one aggregate of a metric over instances that ran at once, or None when it has none.

    - higher is better (a rate or a share): ``<metric>_sum`` = sum of R_i, same unit;
    - a time of one unit of work (lower is better, a time unit): ``<metric>_rate_sum`` =
      sum of 1/t_i per second (unit ``1/s``, higher is better): units of work done per
      second by all instances together, never the sum of the times;
    - anything else lower-is-better (bytes, latencies, gaps): None, the values stay per instance.
    """
    if not values:
        return None
    if better == "higher":
        return Aggregate(f"{metric}_sum", aggregate(values), unit, "higher", "sum")
    if is_work_time(metric, unit, better):
        return Aggregate(f"{metric}_rate_sum", rate_sum(values, unit), "1/s", "higher", "rate_sum")
    return None


def aggregate_readings(readings: Iterable) -> list[tuple[str, Aggregate]]:
    """(benchmark, aggregate) for every metric that readings (with benchmark, metric, value, unit,
    better) of instances that ran at once report, in the order the metrics first appear."""
    values: dict[tuple[str, str, str, str], list[float]] = {}
    for r in readings:
        values.setdefault((r.benchmark, r.metric, r.unit, r.better), []).append(r.value)
    out = []
    for (benchmark, metric, unit, better), found in values.items():
        if (agg := aggregate_metric(metric, unit, better, found)) is not None:
            out.append((benchmark, agg))
    return out


# --- trendlines across background counts (the Zones study's Δ% and d%) -------------------


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


# --- many comparisons --------------------------------------------------------------
#
# `labtui compare` tests every condition two sessions share: 31 or 101 background levels of one
# metric, each with Welch's test at 5%.  Uncorrected, two runs of one command on an idle machine
# find "a difference" at some level in most pairs by chance alone.  The p-values of one comparison
# are therefore adjusted together by Benjamini and Hochberg's procedure (scipy.stats.
# false_discovery_control): among the conditions called different at FDR 5%, at most 5% are expected
# to be chance, however many are tested.  Where a condition is not found different, its interval
# says whether that is a finding (the whole interval within ±EQUIVALENCE_PCT % of A's mean: any
# difference is smaller than that) or a lack of samples (a wider interval).

#: The correction `compare` applies, as its output names it.
CORRECTION = "Benjamini-Hochberg"
#: The false discovery rate controlled over one comparison's tests.
FDR = 0.05
#: A difference whose whole 95% interval lies within ± this percentage of A's mean is "no difference".
#: A choice, not a law: a difference under 5% is well below the drift between two sessions of one
#: command on one machine (about 25% in docs/performance.md) and the spread of one boot-scaling level
#: (CoV 15-17%), so nothing smaller could be laid at the setup's door rather than the machine's state.
EQUIVALENCE_PCT = 5.0


def adjust_p_values(ps: Sequence[float | None]) -> list[float | None]:
    """Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control, method "bh"), in the order given.

    The family is every finite p-value in `ps`; a None (no test) or nan stays as it is and is not counted.
    Adjusted, p_(i) of m sorted ones becomes min over j >= i of p_(j) * m / j, capped at 1: a test is
    significant at false discovery rate q when its adjusted p is below q.  With one test nothing changes.
    """
    tested = [(i, float(p)) for i, p in enumerate(ps) if p is not None and math.isfinite(p)]
    found: list[float | None] = list(ps)
    if not tested:
        return found
    from scipy import stats

    adjusted = stats.false_discovery_control([p for _, p in tested], method="bh")
    for (i, _), p in zip(tested, adjusted):
        found[i] = float(p)
    return found


def reach_pct(low: float, high: float, reference: float) -> float:
    """How far an interval of a difference reaches from 0, in percent of reference (A's mean):
    max(|low|, |high|) / |reference| * 100; nan for a reference of 0 or anything not finite.

    The interval lies within ±X % of the reference exactly when reach_pct <= X."""
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(reference)) or reference == 0:
        return float("nan")
    return max(abs(low), abs(high)) / abs(reference) * 100.0


def no_difference(low: float, high: float, reference: float, margin_pct: float = EQUIVALENCE_PCT) -> bool:
    """Whether an interval of a difference shows there is none worth naming: it lies wholly within
    ±margin_pct % of reference (A's mean).  False for a wider interval (too few samples to tell) or
    where reach_pct is undefined."""
    reach = reach_pct(low, high, reference)
    return reach == reach and reach <= margin_pct


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
    """A trendline (labtui.core.stats.trendline) with the `level` confidence interval of its slope."""

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
