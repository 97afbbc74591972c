"""Statistics computed from raw samples; nothing is stored only as an aggregate.

Slowdown follows formula 5.1 of the Docker/Unikraft study in both directions:
for a metric where higher is better, slowdown = (1 - x / x0) * 100; where lower
is better, slowdown = (x / x0 - 1) * 100, x0 being the baseline (first step or
the worker alone).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 97.5% quantiles of Student's t for small samples (df 1..30).
_T975 = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
]


@dataclass(frozen=True, slots=True)
class Summary:
    n: int
    mean: float
    std: float  # sample standard deviation (n - 1); 0 for one value
    median: float
    ci95: float  # half-width of the 95% confidence interval of the mean
    cv: float  # coefficient of variation, std / mean (nan when mean is 0)


def summarize(values: Sequence[float]) -> Summary:
    """Mean, std, median, 95% CI half-width and CV of raw values."""
    if not values:
        raise ValueError("cannot summarize no values")
    n = len(values)
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if n > 1 else 0.0
    t = _T975[n - 2] if 2 <= n <= 31 else 1.96
    ci95 = t * std / math.sqrt(n) if n > 1 else float("nan")
    cv = std / mean if mean else float("nan")
    return Summary(n, mean, std, statistics.median(values), ci95, cv)


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


def aggregate(values: Sequence[float]) -> float:
    """The aggregate S_n = sum of R_i over concurrently measured instances."""
    return float(sum(values))
