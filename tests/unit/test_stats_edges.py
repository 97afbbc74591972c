"""Tests of labtui.core.stats that close the escapes of its mutation run (tests/mutation, target
stats-core; docs/testing.md).  Each pins one promise of a function the tables, panes, reports and
`labtui compare` read: the branch for an edge value, or the exact figure of a formula."""

from __future__ import annotations

import math
import statistics
from typing import NamedTuple

import pytest

from labtui.core.stats.aggregate import aggregate_metric, aggregate_readings, is_work_time, rate_sum
from labtui.core.stats.describe import normalized, slowdown_pct, summarize, t_cdf, t_pdf, t_quantile, t_sf, t_two_sided_p
from labtui.core.stats.intervals import (
    BOOTSTRAP_MIN,
    Interval,
    bootstrap_diff_ci,
    bootstrap_fits,
    bootstrap_mean_ci,
    compare_samples,
    mean_ci,
    skewness,
    welch,
    welch_df,
)
from labtui.core.stats.trust import SINGLE, modes, modified_z_scores, outliers, trust
from labtui.store.frames import slowdown_table

#: Symmetric around 10, no skew: a t interval, however many values.
SYMMETRIC = [10.0 + d for d in (-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0)] * 3  # 21 values
#: One far value among equal ones: skewed (G1 well above 1), and BOOTSTRAP_MIN values.
SKEWED = [1.0] * 12 + [1.1] * 7 + [9.0]


# --- summarize, slowdown_pct, normalized ----------------------------------------------------


def test_a_zero_mean_has_no_coefficient_of_variation():
    s = summarize([-1.0, 1.0])
    assert s.mean == 0.0 and s.std == pytest.approx(math.sqrt(2.0)) and math.isnan(s.cv)
    assert summarize([1.0, 3.0]).cv == pytest.approx(math.sqrt(2.0) / 2.0)


def test_two_values_have_a_spread_and_an_interval():
    s = summarize([1.0, 3.0])
    assert (s.n, s.mean, s.median) == (2, 2.0, 2.0)
    assert s.std == pytest.approx(math.sqrt(2.0))
    assert s.ci95 == pytest.approx(12.706204736 * math.sqrt(2.0) / math.sqrt(2.0), rel=1e-9)  # t_0.975(1)


def test_a_zero_baseline_has_no_slowdown():
    assert math.isnan(slowdown_pct(1.0, 0.0, "lower")) and math.isnan(slowdown_pct(1.0, 0.0, "higher"))
    assert slowdown_pct(2.0, 2.0, "lower") == 0.0 and slowdown_pct(3.0, 2.0, "higher") == pytest.approx(-50.0)


def test_normalized_divides_by_a_first_value_of_one_and_refuses_nothing():
    assert normalized([1.0, 2.0, 0.5]) == [1.0, 2.0, 0.5]
    assert normalized([-2.0, 1.0]) == [1.0, -0.5]
    with pytest.raises(ValueError, match="non-zero first value"):
        normalized([])
    with pytest.raises(ValueError, match="non-zero first value"):
        normalized([0.0])


# --- Welch ------------------------------------------------------------------------------------


def test_welch_df_without_any_spread_is_the_pooled_df():
    assert welch_df(0.0, 3, 0.0, 4) == 5.0
    assert welch_df(0.0, 2, 0.0, 2) == 2.0


def test_welch_without_spread_keeps_the_sign_and_the_pooled_df():
    down = welch([4.0, 4.0, 4.0], [3.0, 3.0])
    assert (down.t, down.p, down.diff, down.se, down.df) == (-math.inf, 0.0, -1.0, 0.0, 3.0)
    assert (down.ci_low, down.ci_high) == (-1.0, -1.0)
    same = welch([3.0, 3.0], [3.0, 3.0, 3.0])
    assert (same.diff, same.se, same.df) == (0.0, 0.0, 3.0)


@pytest.mark.parametrize(("a", "b"), [([1.0], [1.0, 2.0]), ([1.0, 2.0], [1.0]), ([], [1.0, 2.0])])
def test_welch_needs_two_values_on_each_side(a, b):
    with pytest.raises(ValueError, match="at least 2 values on each side"):
        welch(a, b)


def test_welch_has_the_standard_error_and_the_level_asked_for():
    a, b = [1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0]
    w95, w80 = welch(a, b), welch(a, b, 0.80)
    se = math.sqrt(summarize(a).std ** 2 / 4 + summarize(b).std ** 2 / 5)
    assert w95.se == pytest.approx(se) and w95.t == pytest.approx(w95.diff / se)
    half95 = t_quantile(0.975, w95.df) * se
    half80 = t_quantile(0.90, w95.df) * se
    assert (w95.ci_low, w95.ci_high) == (pytest.approx(w95.diff - half95), pytest.approx(w95.diff + half95))
    assert (w80.ci_low, w80.ci_high) == (pytest.approx(w95.diff - half80), pytest.approx(w95.diff + half80))


# --- few or skewed, and the interval of a mean ---------------------------------------------------


def test_bootstrap_fits_only_skewed_samples_of_at_least_bootstrap_min_values():
    assert len(SKEWED) == BOOTSTRAP_MIN
    assert bootstrap_fits(SKEWED) is True
    assert bootstrap_fits([-v for v in SKEWED]) is True  # skewed the other way
    assert bootstrap_fits(SKEWED[1:]) is False  # as skewed, one value short
    assert bootstrap_fits(SYMMETRIC) is False  # many, symmetric
    assert bootstrap_fits([1.0, 1.0, 1.0, 9.0, 1.0]) is False  # few: Student's t however skewed
    assert bootstrap_fits([5.0] * 30) is False  # no spread: no skew to judge


def test_mean_ci_is_students_t_for_many_symmetric_values():
    ci = mean_ci(SYMMETRIC)
    s = summarize(SYMMETRIC)
    half = t_quantile(0.975, s.n - 1) * s.std / math.sqrt(s.n)
    assert ci is not None and ci.method == "t" and ci.level == 0.95
    assert (ci.low, ci.high) == (pytest.approx(s.mean - half), pytest.approx(s.mean + half))
    ci90 = mean_ci(SYMMETRIC, 0.90)
    half90 = t_quantile(0.95, s.n - 1) * s.std / math.sqrt(s.n)
    assert ci90 is not None and (ci90.low, ci90.high) == (pytest.approx(s.mean - half90), pytest.approx(s.mean + half90))


def test_mean_ci_of_two_values_is_students_t_and_of_one_is_none():
    assert mean_ci([1.0]) is None and mean_ci([]) is None
    ci = mean_ci([-1.0, 5.0])  # few: never a bootstrap (values that may be negative: the whole t interval)
    assert ci is not None and ci.method == "t"
    assert (ci.low, ci.high) == (pytest.approx(2.0 - 3 * 12.706204736), pytest.approx(2.0 + 3 * 12.706204736))
    positive = mean_ci([1.0, 3.0])  # none negative: the interval starts at 0, not at 2 - 12.7
    assert positive is not None and (positive.low, positive.high) == (0.0, pytest.approx(2.0 + 12.706204736))


def test_mean_ci_of_skewed_values_is_a_bootstrap():
    ci = mean_ci(SKEWED)
    assert ci is not None and ci.method == "bootstrap" and ci.low < summarize(SKEWED).mean < ci.high


# --- compare_samples ----------------------------------------------------------------------------


def test_compare_prints_welchs_interval_for_many_symmetric_values():
    b = [v * 1.5 for v in SYMMETRIC]
    c = compare_samples(SYMMETRIC, b, "lower")
    assert c.welch is not None and c.bootstrap is None
    assert c.ci is not None and (c.ci.low, c.ci.high, c.ci.method, c.ci.level) == (
        c.welch.ci_low, c.welch.ci_high, "t", 0.95)
    c90 = compare_samples(SYMMETRIC, b, "lower", alpha=0.10)
    assert c90.ci is not None and c90.ci.level == pytest.approx(0.90) and c90.ci.high < c.ci.high
    assert c90.welch is not None and (c90.welch.ci_low, c90.welch.ci_high) == (c90.ci.low, c90.ci.high)


@pytest.mark.parametrize("skewed_side", ["a", "b"])
def test_compare_bootstraps_when_either_side_is_skewed_and_both_are_many(skewed_side):
    a, b = (SKEWED, [v * 2.0 for v in SYMMETRIC]) if skewed_side == "a" else (SYMMETRIC, [v * 2.0 for v in SKEWED])
    c = compare_samples(a, b, "lower")
    assert c.bootstrap is not None and c.ci is c.bootstrap and c.ci.method == "bootstrap"
    assert c.ci.level == pytest.approx(0.95) and c.ci.low < c.diff < c.ci.high
    c90 = compare_samples(a, b, "lower", alpha=0.10)
    assert c90.ci is not None and c90.ci.level == pytest.approx(0.90) and c.ci.low < c90.ci.low < c90.ci.high < c.ci.high


@pytest.mark.parametrize(("a", "b"), [
    ([10.0, 11.0, 9.5, 12.0, 10.5], SYMMETRIC),  # few against many
    ([1.0, 1.0, 1.0, 1.0, 9.0], [2.0, 2.1, 2.0, 2.2, 2.0]),  # few and skewed
    (SKEWED, [2.0, 2.1, 2.0, 2.2, 2.0]),  # skewed, but one side few
])
def test_compare_keeps_welchs_interval_unless_both_sides_are_many(a, b):
    c = compare_samples(a, b, "lower")
    assert c.welch is not None and c.bootstrap is None
    assert c.ci is not None and c.ci.method == "t" and (c.ci.low, c.ci.high) == (c.welch.ci_low, c.welch.ci_high)


def test_compare_is_significant_only_below_alpha():
    c = compare_samples([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0], "lower")
    assert c.welch is not None and 0.01 < c.welch.p < 0.1
    assert c.significant is (c.welch.p < 0.05)
    assert compare_samples([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0], "lower",
                           alpha=c.welch.p * 1.01).significant is True
    assert compare_samples([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0], "lower",
                           alpha=c.welch.p * 0.99).significant is False
    # a p-value equal to alpha is not below it
    assert compare_samples([1.0, 2.0, 3.0, 4.0], [2.0, 4.0, 6.0, 8.0, 10.0], "lower",
                           alpha=c.welch.p).significant is False


# --- aggregates ---------------------------------------------------------------------------------


def test_rate_sum_is_the_sum_of_inverse_times_in_seconds():
    assert rate_sum([2.0, 4.0], "ms") == pytest.approx(750.0)  # 500/s + 250/s
    assert rate_sum([0.5], "s") == pytest.approx(2.0)
    assert rate_sum([2.0, 3.0], "min") == pytest.approx(1 / 120 + 1 / 180)
    assert math.isnan(rate_sum([1.0, 0.0], "s")) and math.isnan(rate_sum([-1.0, 2.0], "us"))
    assert math.isnan(rate_sum([1.0, float("nan")], "s"))


@pytest.mark.parametrize(("metric", "unit", "better", "expected"), [
    ("fork_us", "us", "lower", True),
    ("inserts_5000_s", "s", "lower", True),
    ("boot-time", "ms", "lower", True),
    ("fork_us", "us", "higher", False),  # a time unit, but higher is better: not a time of work
    ("fork_us", "bytes", "lower", False),  # not a time unit
    ("read_latency_us", "us", "lower", False),  # 'latency' inside a word
    ("maxgap_us", "us", "lower", False),  # 'gap' inside a word
    ("boot-lag", "ms", "lower", False),  # 'lag' as a whole word, after '-'
    ("p99_ms", "ms", "lower", False),
    ("Max_s", "s", "lower", False),  # case does not matter
    ("flag_s", "s", "lower", True),  # 'lag' inside a word is no lag
])
def test_is_work_time(metric, unit, better, expected):
    assert is_work_time(metric, unit, better) is expected


def test_aggregate_metric_has_one_aggregate_per_kind_of_metric():
    share = aggregate_metric("cpu_share", "ratio", "higher", [0.25, 0.5])
    assert share is not None and (share.metric, share.value, share.unit, share.better, share.how) == (
        "cpu_share_sum", 0.75, "ratio", "higher", "sum")
    fork = aggregate_metric("fork_us", "us", "lower", [100.0, 200.0])
    assert fork is not None and (fork.metric, fork.unit, fork.better, fork.how) == (
        "fork_us_rate_sum", "1/s", "higher", "rate_sum")
    assert fork.value == pytest.approx(15000.0)
    assert aggregate_metric("rss", "bytes", "lower", [1.0, 2.0]) is None
    assert aggregate_metric("maxgap_us", "us", "lower", [1.0]) is None
    assert aggregate_metric("cpu_share", "ratio", "higher", []) is None
    assert aggregate_metric("fork_us", "us", "lower", []) is None


class Reading(NamedTuple):
    benchmark: str
    metric: str
    value: float
    unit: str
    better: str


def test_aggregate_readings_groups_by_metric_in_first_seen_order():
    readings = [
        Reading("proc", "fork_us", 100.0, "us", "lower"),
        Reading("hg", "cpu_share", 0.25, "ratio", "higher"),
        Reading("proc", "fork_us", 200.0, "us", "lower"),
        Reading("hg", "maxgap_us", 5.0, "us", "lower"),
        Reading("hg", "cpu_share", 0.5, "ratio", "higher"),
        Reading("hg", "cpu_share", 1.0, "other", "higher"),  # another unit: another metric
    ]
    found = aggregate_readings(readings)
    assert [(b, a.metric, a.unit) for b, a in found] == [
        ("proc", "fork_us_rate_sum", "1/s"), ("hg", "cpu_share_sum", "ratio"), ("hg", "cpu_share_sum", "other")]
    assert [a.value for _, a in found] == [pytest.approx(15000.0), 0.75, 1.0]
    assert aggregate_readings([]) == []


# --- the rest of the file (target stats-rest): Student's t at infinite df, skewness, the bootstraps,
# --- modified Z-scores, outliers, modes and the trust flags


@pytest.mark.parametrize("t", [-2.5, -0.7, 1.5, 3.0])
def test_t_at_infinite_df_is_the_standard_normal(t):
    from scipy.stats import norm

    inf = float("inf")
    assert t_sf(t, inf) == pytest.approx(float(norm.sf(t)), rel=1e-12)
    assert t_cdf(t, inf) == pytest.approx(float(norm.cdf(t)), rel=1e-12)
    assert t_pdf(t, inf) == pytest.approx(float(norm.pdf(t)), rel=1e-12)
    assert t_two_sided_p(t, inf) == pytest.approx(2.0 * float(norm.sf(abs(t))), rel=1e-12)
    assert t_pdf(0.0, inf) == pytest.approx(1.0 / math.sqrt(2.0 * math.pi), rel=1e-12)


@pytest.mark.parametrize("df", [1.0, 3.0, 7.5])
def test_t_at_finite_df_is_scipys_t(df):
    from scipy.stats import t as student

    for t in (-2.0, 0.0, 1.0, 2.5):
        assert t_pdf(t, df) == pytest.approx(float(student.pdf(t, df)), rel=1e-12)
        assert t_sf(t, df) == pytest.approx(float(student.sf(t, df)), rel=1e-12)
        assert t_cdf(t, df) == pytest.approx(float(student.cdf(t, df)), rel=1e-12)


def test_a_p_value_is_never_above_one():
    assert t_two_sided_p(0.0, 7.0) == 1.0
    assert t_two_sided_p(float("nan"), 7.0) <= 1.0


def test_skewness_needs_three_values_with_spread():
    from scipy.stats import skew

    assert math.isnan(skewness([1.0, 2.0])) and math.isnan(skewness([5.0] * 4))
    assert skewness([1.0, 2.0, 7.0]) == pytest.approx(float(skew([1.0, 2.0, 7.0], bias=False)))


def test_an_interval_contains_its_ends():
    interval = Interval(1.0, 2.0, "t")
    assert interval.contains(1.0) and interval.contains(2.0) and interval.contains(1.5)
    assert not interval.contains(0.999) and not interval.contains(2.001)


def test_the_bootstraps_default_to_a_95_percent_interval_and_seed_0():
    # the same samples give the interval printed before: mean_ci and compare_samples use the defaults
    a, b = [1.0, 2.0, 3.0, 4.0, 6.0] * 4, [2.0, 3.5, 4.0, 5.0, 9.0] * 4
    diff = bootstrap_diff_ci(a, b)
    assert diff is not None and diff.level == 0.95 and diff == bootstrap_diff_ci(a, b, level=0.95, seed=0)
    assert diff.low < 4.7 - 3.2 < diff.high  # mean(b) - mean(a) inside
    mean = bootstrap_mean_ci(a)
    assert mean is not None and mean.level == 0.95 and mean == bootstrap_mean_ci(a, level=0.95, seed=0)
    assert mean.low < 3.2 < mean.high and mean.method == "bootstrap"
    assert bootstrap_mean_ci(a[:-1]) is None and bootstrap_diff_ci(a, b[:-1]) is None  # too few


def test_a_difference_is_bootstrapped_when_only_one_side_has_spread():
    constant, spread = [3.0] * 24, [1.0, 2.0, 3.0, 4.0, 6.0, 9.0] * 4
    for a, b in ((constant, spread), (spread, constant)):
        found = bootstrap_diff_ci(a, b)
        assert found is not None and found.low < statistics.fmean(b) - statistics.fmean(a) < found.high
    assert bootstrap_diff_ci(constant, constant) is None


def test_modified_z_scores_by_the_mad_and_by_the_mean_deviation():
    # median 3, absolute deviations 2, 1, 0, 1, 7: MAD 1
    assert modified_z_scores([1.0, 2.0, 3.0, 4.0, 10.0]) == pytest.approx(
        [0.6745 * d for d in (-2.0, -1.0, 0.0, 1.0, 7.0)])
    # more than half equal: MAD 0, the mean absolute deviation (4 / 5) stands in
    assert modified_z_scores([1.0, 1.0, 1.0, 1.0, 5.0]) == pytest.approx(
        [0.0] * 4 + [4.0 / (1.253314 * 0.8)])
    assert modified_z_scores([-3.0, -3.0, -3.0, -3.0, 1.0]) == pytest.approx(
        [0.0] * 4 + [4.0 / (1.253314 * 0.8)])
    assert modified_z_scores([2.0, 2.0, 2.0]) == [0.0, 0.0, 0.0]


def test_three_values_can_have_an_outlier_and_two_cannot():
    assert outliers([1.0, 2.0, 100.0]) == [100.0]
    assert outliers([1.0, 100.0]) == [] and outliers([]) == []


#: Timings of two kinds: 1 ms and 8 to 25 ms are two modes on a log scale, one on a linear one.
TWO_KINDS = [1.0] * 4 + [8.0, 10.0, 12.0, 16.0, 20.0, 25.0]


@pytest.mark.parametrize("values, found", [
    (TWO_KINDS, (1.0, 14.0)),
    ([v / 2 for v in TWO_KINDS], (0.5, 7.0)),  # values below 1 are positive too
    ([1.0] * 5 + [2.0] * 5, (1.0, 2.0)),  # a gap of log 2 < 1
    ([1.0, 1.0] + [10.0] * 8, (1.0, 10.0)),  # a group of 2 of 10 values
    ([1.0] * 8 + [10.0, 10.0], (1.0, 10.0)),  # the last split point
    ([1.0, 1.0] + [10.0] * 9, None),  # 2 of 11 is less than a fifth
    ([1.0] * 9 + [100.0], None),  # one far value is an outlier, not a mode
    ([1.0, 1.0, 1.0, 1.0, 3.0, 9.0, 9.0, 9.0, 9.0, 9.0], None),  # no gap wider than 1.5 times a side's range
    ([float(v) for v in range(10, 20)], None),  # even steps
    ([float(v) for v in range(1, 11)], None),
    ([-0.5, 1.0, 1.0, 1.0, 1.0, 8.0, 9.0, 9.0, 9.0, 9.0], (1.0, 9.0)),  # not all positive: linear
    ([0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0], (0.0, 1.0)),
    ([1.0, 2.0, 2.0, 2.0, 2.0, 40.0, 40.0, 40.0, 40.0, 40.0], (2.0, 40.0)),  # a left side's range from its first value
    ([1.0] * 5 + [30.0, 30.0, 30.0, 30.0, 60.0], (1.0, 30.0)),  # a right side's range to its last value
    ([1.0] * 5 + [30.0, 30.0, 30.0, 30.0, 900.0], None),
    ([-4.0, 0.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0, 5.0, 5.0], None),  # the left side spans 4: a gap of 5 is too narrow
    ([-2.0, 0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0, 3.0, 3.0], None),  # a gap of exactly 1.5 times a side's range
    ([1.0, 10.0, 10.0, 10.0, 10.0, 40.0, 40.0, 40.0, 40.0, 40.0], None),
])
def test_modes_split_at_a_gap_wider_than_either_side(values, found):
    assert modes(values) == found
    assert modes(list(reversed(values))) == found


def test_the_spread_flag_is_for_a_spread_above_the_limit():
    cv = summarize([1.0, 3.0]).cv
    assert not trust([1.0, 3.0], spread_limit=cv).wide
    assert trust([1.0, 3.0], spread_limit=cv * 0.999).wide
    assert trust([1.0, 3.0], spread_limit=cv * 0.999).flags() == ["spread"]


def test_the_trust_flags_count_outliers_and_name_two_modes():
    assert trust([10.0] * 12, bootstrap=False).flags() == []
    assert trust([10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 10.0, 50.0], bootstrap=False).flags() == ["spread", "1 outlier"]
    two = trust([10.0, 10.1, 9.9, 10.0, 10.2, 9.8, 10.0, 50.0, 60.0], spread_limit=10.0, bootstrap=False)
    assert two.outliers == (50.0, 60.0) and two.flags() == ["2 outliers"]
    bimodal = trust([1.0] * 5 + [2.0] * 5, spread_limit=10.0, bootstrap=False)
    assert bimodal.modes == (1.0, 2.0) and bimodal.flags() == ["bimodal"]


def test_trust_bootstraps_the_interval_of_skewed_values_unless_told_not_to():
    assert trust(SKEWED).ci.method == "bootstrap"
    assert trust(SKEWED, bootstrap=False).ci.method == "t"


def test_slowdown_table_has_the_mean_and_slowdown_of_each_step_against_the_first():
    import polars as pl

    rows = [  # two repetitions of a baseline and one step, lower is better
        ("s", rep, step, bg, "b", "t", "ms", "lower", value, None, 1)
        for rep, step, bg, value in ((1, 0, 0, 10.0), (2, 0, 0, 12.0), (1, 1, 5, 15.0), (2, 1, 5, 18.0))
    ]
    frame = pl.DataFrame(rows, orient="row", schema=["session_id", "repetition", "step", "background", "benchmark",
                                                     "metric", "unit", "better", "value", "placement", "run"])
    table = slowdown_table(frame)
    assert table["background"].to_list() == [0, 5] and table["n"].to_list() == [2, 2]
    assert table["mean"].to_list() == pytest.approx([11.0, 16.5])
    assert table["slowdown_pct"].to_list() == pytest.approx([0.0, slowdown_pct(16.5, 11.0, "lower")])
    assert table["normalized"].to_list() == pytest.approx([1.0, 1.5])


@pytest.mark.parametrize(("a", "b"), [([1.0, 2.0, 3.0], [5.0]), ([5.0], [1.0, 2.0, 3.0])])
def test_compare_with_one_value_on_a_side_gives_figures_without_a_test(a, b):
    compared = compare_samples(a, b, "lower")
    assert compared.welch is None and compared.significant is None
    assert compared.diff == pytest.approx(statistics.fmean(b) - statistics.fmean(a))


def test_one_value_is_flagged_single_and_nothing_else():
    assert trust([5.0]).flags() == [SINGLE]
    assert trust([5.0, 5.0]).flags() == []
