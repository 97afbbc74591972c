"""Many comparisons at once: p-values adjusted together (Benjamini-Hochberg), and "no difference" told apart from
"too few samples to see one"."""

from __future__ import annotations

import math
from collections.abc import Sequence

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
