"""A verdict for every table and figure: one line, in words and numbers, of whether a metric moves with the
background at all.

The trend is the least-squares slope of the metric's per-repetition values (the store's REPETITION_VALUES:
each repetition's median over its worker's runs) against the background count, with the slope's 95% interval
(labtui.core.stats.trend.trend_fit: scipy.stats.linregress's standard error and Student's t with n - 2 df).  A slope
whose interval leaves 0 out is a trend, given per a round number of background instances and as the line's
change over the counts measured; otherwise the line says no trend is distinguishable from noise.  Where the
levels' median coefficient of variation is above the trust limit (labtui.core.stats.trust.SPREAD_LIMIT, the one
that flags a figure "spread") the line says so and what to do.  The run table, the console's slowdown pane,
``labtui report`` and ``labtui trend`` all print this line; none words a trend itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from labtui.core.stats.trend import TrendFit, median_cov, trend_fit
from labtui.core.stats.trust import SPREAD_LIMIT
from labtui.core.units import MISSING, display_unit, share_pct, signed_pct

#: What the x axis counts, as the run table's ``background`` column does.
BACKGROUND = "background instances"


@dataclass(frozen=True, slots=True)
class Verdict:
    """A metric's trend against the background, its levels' spread, and the line that says both."""

    metric: str
    fit: TrendFit | None  # None with too few values for an interval
    spread: float | None  # the levels' median CoV (labtui.core.stats.trend.median_cov); None with one value a level
    repetitions: int  # the most values one level has
    line: str

    @property
    def trend(self) -> bool:
        """Whether the metric moves with the background beyond its noise."""
        return self.fit is not None and self.fit.distinguishable


def verdict(metric: str, unit: str, levels: Mapping[float, Sequence[float]], along: str = BACKGROUND) -> Verdict:
    """The verdict of one metric from its values at each background count (one value per repetition).

    Values that are not finite are left out (a rate of a time clamped to 0), as ``labtui trend`` leaves them."""
    finite = {x: [v for v in values if math.isfinite(v)] for x, values in levels.items()}
    finite = {x: values for x, values in sorted(finite.items()) if values}
    xs = [x for x, values in finite.items() for _ in values]
    ys = [v for values in finite.values() for v in values]
    fit = trend_fit(xs, ys)
    spread = median_cov(finite.values())
    repetitions = max((len(values) for values in finite.values()), default=0)
    line = _trend_words(metric, unit, fit, len(ys), len(finite), along)
    if spread is not None and spread > SPREAD_LIMIT:
        # one decimal, as the tables show a CoV: 10.1% is above the 10% limit where "10%" would not read so
        line += (f" (median CoV {share_pct(spread)} above the {SPREAD_LIMIT:.0%} limit: rerun on an idle host, "
                 "or raise worker.runs)")
    elif repetitions == 1:
        line += " (n=1 at each level: no spread to judge; raise suite.repetitions)"
    return Verdict(metric, fit, spread, repetitions, line)


def _trend_words(metric: str, unit: str, fit: TrendFit | None, values: int, counts: int, along: str) -> str:
    if fit is None:
        counted = f"{along.split()[0]} count" + ("" if counts == 1 else "s")  # "background counts"
        return f"{metric}: too few values for a trend ({values} at {counts} {counted})"
    shown, factor = display_unit(unit)
    per = _per(fit.line.xs[-1])
    per_text = f"per {along.removesuffix('s')}" if per == 1 else f"per {per:g} {along}"

    # as many digits as tell the slope and its interval's ends apart (a tight interval of a steep trend), up to 4
    digits = next((d for d in (2, 3) if len({_sig(v * per / factor, d) for v in (fit.low, fit.line.slope, fit.high)})
                   == 3), 4)

    def slope(value: float) -> str:
        return _sig(value * per / factor, digits)

    if not fit.distinguishable:
        return (f"{metric}: no trend distinguishable from noise (slope 95% CI {slope(fit.low)} to {slope(fit.high)}"
                f"{_unit(shown)} {per_text})")
    grows = fit.line.slope > 0
    low, high = (fit.low, fit.high) if grows else (-fit.high, -fit.low)
    words = (f"{metric} {'grows' if grows else 'shrinks'} {slope(abs(fit.line.slope))}{_unit(shown)} {per_text} "
             f"(95% CI {slope(low)} to {slope(high)})")
    pct, pct_low, pct_high = fit.change_pct()
    if math.isfinite(pct):
        first, last = fit.line.xs[0], fit.line.xs[-1]
        words += (f", {signed_pct(pct, '%')} from {first:g} to {last:g} "
                  f"(95% CI {signed_pct(pct_low)} to {signed_pct(pct_high, '%')})")
    return words


def _unit(shown: str) -> str:
    return f" {shown}" if shown else ""


def _per(last: float) -> float:
    """A round number of instances to give a slope per: a tenth of the last count's power of ten (per 100 up to
    1000, per 10 up to 100), per instance below 100."""
    if last < 100:
        return 1
    return 10.0 ** (math.floor(math.log10(last)) - 1)


def _sig(value: float, digits: int = 2) -> str:
    """A number to `digits` significant digits, never in exponent form: 0.40, 12, 1,200, -0.0031."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    rounded = float(f"{value:.{digits}g}")
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(rounded))))
    return f"{rounded:,.{decimals}f}"


def slowdown_text(pct: float | None, low: float | None, high: float | None, suffix: str = "") -> str:
    """A figure's median slowdown (labtui.figures.table's median_slowdown_* columns) as every face shows it: with
    its interval in whole percent, "+38.1 (+20 to +55)"; "+0.0 (baseline)" for the baseline itself; alone without
    an interval (more than MAX_BOOTSTRAP_ROWS figures); MISSING without a slowdown (n=1).  `suffix` follows the
    slowdown ("%" where the header does not say it)."""
    if pct is None or math.isnan(pct):
        return MISSING
    if low is None or high is None:
        return f"{signed_pct(pct, suffix)} (baseline)" if pct == 0 else signed_pct(pct, suffix)
    return f"{signed_pct(pct, suffix)} ({low:+.0f} to {high:+.0f})"
