"""How far to trust a figure: its interval, its spread against SPREAD_LIMIT, its outliers and its two modes."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from labtui.core.stats.describe import Summary, summarize
from labtui.core.stats.intervals import Interval, mean_ci

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
