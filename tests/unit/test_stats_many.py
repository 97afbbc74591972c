"""Comparisons that survive many levels (issue 41): the Benjamini-Hochberg correction of
labtui.core.stats ("many comparisons")."""

from __future__ import annotations

import math

import pytest

from labtui.core.stats import EQUIVALENCE_PCT, FDR, adjust_p_values, no_difference, reach_pct

# --- the correction ----------------------------------------------------------------------------------


def test_adjusted_p_values_match_scipys_documented_example() -> None:
    """scipy.stats.false_discovery_control's docstring: the 15 p-values of Benjamini and Hochberg (1995)."""
    ps = [0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262, 0.5719, 0.6528,
          0.7590, 1.000]
    printed = [0.0015, 0.003, 0.0095, 0.035625, 0.0603, 0.06385714, 0.06385714, 0.0645, 0.0765, 0.486, 0.58118182,
               0.714875, 0.75323077, 0.81321429, 1.0]
    assert adjust_p_values(ps) == pytest.approx(printed, abs=1e-8)
    # nine raw p-values are below 5%; four adjusted ones are, as the paper rejects four hypotheses
    assert sum(p < FDR for p in ps) == 9 and sum(p < FDR for p in adjust_p_values(ps)) == 4  # type: ignore[operator]


def test_adjusted_p_values_by_hand_keep_the_order_given_and_step_up() -> None:
    """Five p-values, shuffled.  Sorted, p_(i) * m / i is 0.05, 0.05, 0.04167, 0.05, 0.5; each adjusted p is the
    least of these from its rank up, so the two smallest fall to the third's 0.04167 (step-up)."""
    ps = [0.04, 0.5, 0.01, 0.025, 0.02]
    assert adjust_p_values(ps) == pytest.approx([0.05, 0.5, 0.125 / 3, 0.125 / 3, 0.125 / 3])


def test_no_test_is_kept_and_not_counted() -> None:
    """None (no test) and nan stay as they are, and the family is the two real p-values: m = 2."""
    found = adjust_p_values([None, 0.04, float("nan"), 0.01])
    assert found[0] is None and math.isnan(found[2])  # type: ignore[arg-type]
    assert found[1:4:2] == pytest.approx([0.04, 0.02])
    assert adjust_p_values([0.03]) == pytest.approx([0.03])  # one test: nothing to correct
    assert adjust_p_values([]) == [] and adjust_p_values([None]) == [None]


# --- no difference, or too few samples to tell -----------------------------------------------------


def test_reach_is_the_far_end_of_the_interval_in_percent_of_the_reference() -> None:
    assert reach_pct(-0.04, 0.03, 1.0) == pytest.approx(4.0)
    assert reach_pct(0.02, 0.06, -2.0) == pytest.approx(3.0)  # |reference|
    assert math.isnan(reach_pct(-1.0, 1.0, 0.0)) and math.isnan(reach_pct(-math.inf, 1.0, 1.0))
    assert EQUIVALENCE_PCT == 5.0
    assert no_difference(-0.05, 0.04, 1.0)  # exactly 5%: within
    assert not no_difference(-0.0501, 0.01, 1.0)
    assert not no_difference(0.0, 0.0, 0.0)  # no percentage of a zero mean
    assert no_difference(-0.06, 0.06, 1.0, margin_pct=6.0)
