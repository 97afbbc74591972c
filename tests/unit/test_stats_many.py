"""Comparisons that survive many levels (issue 41): the Benjamini-Hochberg correction of
labtui.core.stats ("many comparisons") and what `labtui compare` makes of it, its verdicts and its
summary line, on samples given directly (no store)."""

from __future__ import annotations

import math

import pytest

from labtui.commands.compare import NO_DIFFERENCE, compare_sessions, summary
from labtui.commands.compare_samples import REPETITIONS, Samples
from labtui.core.stats.multiple import EQUIVALENCE_PCT, FDR, adjust_p_values, no_difference, reach_pct

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


# --- compare: 31 levels of two runs of one command ------------------------------------------------

STEADY = [10.0, 10.2, 9.8, 10.1, 9.9]  # mean 10, std 0.158: B − A's 95% CI is ±0.23 (2.3% of A's mean)
NOISY = [5.0, 15.0, 10.0, 8.0, 12.0]  # mean 10, std 3.81: ±5.55 (55.5%)


def _key(background: int) -> tuple[str, str, str, int, str, str]:
    return ("boot", "boot_time", "", background, "s", "lower")


def _sessions(levels: dict[int, tuple[list[float], list[float]]]):
    a = {_key(bg): Samples(va, REPETITIONS, len(va)) for bg, (va, _) in levels.items()}
    b = {_key(bg): Samples(vb, REPETITIONS, len(vb)) for bg, (_, vb) in levels.items()}
    return compare_sessions(a, b)


def _null_levels() -> dict[int, tuple[list[float], list[float]]]:
    """31 levels where nothing changed: at 0 a chance shift of 3% (p 0.017 alone), 20 steady levels the same
    in both, 10 noisy ones the same in both."""
    levels = {0: (STEADY, [v + 0.3 for v in STEADY])}
    levels |= {10 * i: (STEADY, list(STEADY)) for i in range(1, 21)}
    levels |= {10 * i: (NOISY, list(NOISY)) for i in range(21, 31)}
    return levels


def test_a_chance_difference_among_31_levels_is_not_significant_after_correction() -> None:
    rows = _sessions(_null_levels())
    chance = rows[0]
    assert chance.comparison is not None and chance.comparison.welch is not None
    assert chance.comparison.welch.p == pytest.approx(0.0171, abs=1e-4)
    assert chance.comparison.significant is True  # what compare said before the correction
    # the smallest of 31 p-values, the others 1: adjusted, p * 31 / 1
    assert chance.p_adjusted == pytest.approx(chance.comparison.welch.p * 31) and chance.significant is False
    assert chance.record()["p_value"] == chance.comparison.welch.p and chance.record()["p_adjusted"] == chance.p_adjusted
    assert not any(r.significant for r in rows)
    assert summary(rows) == ("no condition differs after correction (Benjamini-Hochberg, FDR 5%, over 31 conditions "
                             "tested); of them: 20 no difference (within ±5%), 11 too few samples to tell")


def test_the_two_verdicts_of_a_condition_not_found_different() -> None:
    rows = {r.key[3]: r for r in _sessions(_null_levels())}
    assert rows[10].verdict == NO_DIFFERENCE == "no difference (within ±5%)"  # CI ±2.3% of A's mean
    assert rows[250].verdict == "too few samples to tell (CI ±55.5%)"
    # the chance shift: significant alone, its CI 0.07 … 0.53 s reaches 5.3% of A's mean, beyond ±5%
    assert rows[0].verdict == "too few samples to tell (CI ±5.3%)"


def test_a_real_difference_is_found_among_them_and_leads_the_summary() -> None:
    levels = _null_levels() | {310: (STEADY, [v * 1.5 for v in STEADY])}
    rows = _sessions(levels)
    real = rows[-1]
    assert real.significant is True and real.p_adjusted is not None and real.p_adjusted < 1e-5
    assert real.verdict == "B worse, significant" and real.record()["significant"] is True
    assert summary(rows) == (
        "1 of 32 conditions tested differ after correction (Benjamini-Hochberg, FDR 5%); the largest: "
        "boot/boot_time at background 310, +50.0% (B worse; 95% CI +47.0% … +53.0% of A's mean); "
        "of the other 31: 20 no difference (within ±5%), 11 too few samples to tell")


def test_the_summary_counts_conditions_without_a_test() -> None:
    a = {_key(0): Samples([1.0], REPETITIONS, 1), _key(10): Samples(STEADY, REPETITIONS, 5)}
    b = {_key(0): Samples([1.1], REPETITIONS, 1), _key(20): Samples(STEADY, REPETITIONS, 5)}
    assert summary(compare_sessions(a, b)) == (
        "no condition could be tested (a test needs two samples a side); 1 not tested (one sample on a side); "
        "2 in one session only")


def test_side_by_side_stars_only_what_survives_the_correction() -> None:
    """`compare A B C`: the same correction over every test of the table (here 2 columns x 31 levels)."""
    from labtui.commands.compare_side import row_cells, side_by_side

    levels = _null_levels()
    a = {_key(bg): Samples(va, REPETITIONS, len(va)) for bg, (va, _) in levels.items()}
    b = {_key(bg): Samples(vb, REPETITIONS, len(vb)) for bg, (_, vb) in levels.items()}
    rows = side_by_side([a, b, dict(b)])
    key, cells = rows[0]
    assert key[3] == 0 and cells[1].against_first is not None and cells[1].against_first.significant is True
    assert cells[1].p_adjusted == pytest.approx(cells[1].against_first.welch.p * 62 / 2)  # type: ignore[union-attr]
    assert cells[1].significant is False and cells[1].record()["significant"] is False
    assert not any("*" in text for text in row_cells(key, cells, False, True))
    assert cells[0].p_adjusted is None and cells[0].significant is None
