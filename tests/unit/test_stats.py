import math

import pytest

from labtui.core.stats.aggregate import aggregate
from labtui.core.stats.describe import normalized, slowdown_pct, summarize, t_cdf, t_quantile, t_sf, t_two_sided_p
from labtui.core.stats.intervals import compare_samples, welch, welch_df


def test_summarize_known_values():
    s = summarize([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    assert s.n == 8
    assert s.mean == 5.0
    assert s.std == pytest.approx(2.138089935, rel=1e-9)  # sample std (n - 1)
    assert s.median == 4.5
    assert s.ci95 == pytest.approx(2.3646243 * s.std / math.sqrt(8), rel=1e-7)  # R: qt(0.975, 7) = 2.3646243
    assert s.cv == pytest.approx(s.std / 5.0)


def test_summarize_single_value_has_no_spread():
    s = summarize([3.0])
    assert (s.n, s.mean, s.std) == (1, 3.0, 0.0)
    assert math.isnan(s.ci95)


def test_summarize_rejects_empty():
    with pytest.raises(ValueError):
        summarize([])


def test_slowdown_both_directions():
    # lower is better (boot time): 1.5 s against 1.0 s is 50% slower
    assert slowdown_pct(1.5, 1.0, "lower") == pytest.approx(50.0)
    # higher is better (throughput): 80 against 100 is 20% slower
    assert slowdown_pct(80.0, 100.0, "higher") == pytest.approx(20.0)
    # the UnixBench zone example of the BrandZ post: Execl 82.00 vs 204.90 lps is -60.0%
    assert -slowdown_pct(82.00, 204.90, "higher") == pytest.approx(-59.98, abs=0.01)
    with pytest.raises(ValueError):
        slowdown_pct(1.0, 1.0, "sideways")


def test_normalized_and_aggregate():
    assert normalized([2.0, 3.0, 4.0]) == [1.0, 1.5, 2.0]
    assert aggregate([1.0, 2.5, 3.5]) == 7.0
    with pytest.raises(ValueError):
        normalized([0.0, 1.0])


# --- Student's t and Welch's test (scipy.stats, checked against closed forms, tables and R) ---

# R's sleep data (t.test(extra ~ group, data = sleep)): group 1 and group 2.
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


@pytest.mark.parametrize("t", [-30.0, -2.0, -0.3, 0.0, 0.7, 1.5, 12.706, 200.0])
def test_t_cdf_closed_forms_for_one_and_two_df(t):
    # df = 1 is the Cauchy distribution; df = 2 has F(t) = 1/2 + t / (2 sqrt(2 + t^2))
    assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, rel=1e-12, abs=1e-15)
    assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2.0 * math.sqrt(2.0 + t * t)), rel=1e-12, abs=1e-15)
    assert t_cdf(t, 7.5) + t_sf(t, 7.5) == pytest.approx(1.0, abs=1e-15)


def test_t_against_printed_tables():
    # the figures the brief names: t = 2.228 with 10 df is the two-sided 5% point; t_0.975(5) = 2.5706
    assert t_two_sided_p(2.228, 10) == pytest.approx(0.05, abs=1e-4)
    assert t_two_sided_p(-2.228, 10) == pytest.approx(0.05, abs=1e-4)
    assert t_quantile(0.975, 5) == pytest.approx(2.5706, abs=5e-5)
    # other printed quantiles: t_0.995(1) = 63.657, t_0.9995(1) = 636.62, t_0.95(20) = 1.725, t_0.99(60) = 2.390
    assert t_quantile(0.995, 1) == pytest.approx(63.657, abs=5e-4)
    assert t_quantile(0.9995, 1) == pytest.approx(636.62, abs=5e-3)
    assert t_quantile(0.95, 20) == pytest.approx(1.725, abs=5e-4)
    assert t_quantile(0.99, 60) == pytest.approx(2.390, abs=5e-4)
    assert t_quantile(0.025, 5) == pytest.approx(-2.5706, abs=5e-5)
    assert t_quantile(0.5, 3) == 0.0


# Printed t_0.975 (the two-sided 95% point): NIST/SEMATECH e-Handbook 1.3.6.7.2 (df 1..100), Biometrika Tables (120).
T975_PRINTED = dict(enumerate([
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
], start=1)) | {40: 2.021, 59: 2.001, 60: 2.000, 100: 1.984, 120: 1.980}


@pytest.mark.parametrize("df", sorted(T975_PRINTED))
def test_t_quantile_matches_the_printed_table(df):
    assert t_quantile(0.975, df) == pytest.approx(T975_PRINTED[df], abs=5e-4)


@pytest.mark.parametrize("n, t", [(2, 12.706), (3, 4.303), (10, 2.262), (31, 2.042), (32, 2.040), (60, 2.001),
                                  (121, 1.980)])
def test_summarize_ci_uses_students_t_for_every_n(n, t):
    # ci95 / (std / sqrt(n)) is the t summarize used
    values = [10.0 + (1.0 if i % 2 else -1.0) for i in range(n)]
    s = summarize(values)
    assert s.ci95 / (s.std / math.sqrt(n)) == pytest.approx(t, abs=5e-4)
    assert s.ci95 > 1.96 * s.std / math.sqrt(n)  # never the normal 1.96, which is too narrow for a sample


@pytest.mark.parametrize("df", [1, 3.3, 17.776, 1000])
@pytest.mark.parametrize("p", [1e-9, 0.01, 0.3, 0.6, 0.975, 0.999999])
def test_t_quantile_inverts_the_cdf(df, p):
    t = t_quantile(p, df)
    assert t_cdf(t, df) == pytest.approx(p, rel=1e-9)


@pytest.mark.parametrize("p", [0.5000001, 0.51, 0.7, 0.9, 0.999, 1 - 1e-9])
def test_t_quantile_closed_forms(p):
    # df = 1: tan(pi (p - 1/2)) = 1 / tan(pi (1 - p)); df = 2: (2p - 1) / sqrt(2p (1 - p)); near the median too
    assert t_quantile(p, 1) == pytest.approx(1.0 / math.tan(math.pi * (1.0 - p)), rel=1e-9)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-9)
    assert t_quantile(p, math.inf) == pytest.approx(math.sqrt(2.0) * _erfinv(2 * p - 1), rel=1e-9)


def _erfinv(y: float) -> float:
    """erf^-1 by Newton steps on math.erf (for the normal quantile above)."""
    x = 0.0
    for _ in range(100):
        x -= (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def test_t_tends_to_the_normal_for_large_df():
    z975 = 1.959963984540054  # the standard normal 97.5% quantile
    assert t_quantile(0.975, 1e7) == pytest.approx(z975, abs=1e-6)
    assert t_quantile(0.975, math.inf) == pytest.approx(z975, abs=1e-12)
    normal_sf = 0.5 * math.erfc(1.96 / math.sqrt(2.0))
    assert t_sf(1.96, 1e7) == pytest.approx(normal_sf, rel=1e-5)
    assert t_sf(1.96, 1e3) > t_sf(1.96, 1e5) > normal_sf  # heavier tails for fewer df


def test_t_rejects_bad_arguments():
    with pytest.raises(ValueError):
        t_sf(1.0, 0)
    for p in (0.0, 1.0, -0.5):
        with pytest.raises(ValueError):
            t_quantile(p, 5)


def test_welch_matches_r_on_the_sleep_data():
    # R 4.x: t.test(extra ~ group, data = sleep) -> t = -1.8608, df = 17.776, p-value = 0.07939,
    # 95 percent confidence interval -3.3654832 0.2054832 (group 1 - group 2); here B - A, so signs flip.
    w = welch(SLEEP_1, SLEEP_2)
    assert w.diff == pytest.approx(1.58)
    assert w.t == pytest.approx(1.8608, abs=5e-5)
    assert w.df == pytest.approx(17.776, abs=5e-4)
    assert w.p == pytest.approx(0.07939, abs=5e-6)
    assert (w.ci_low, w.ci_high) == (pytest.approx(-0.2054832, abs=1e-7), pytest.approx(3.3654832, abs=1e-7))
    assert welch(SLEEP_2, SLEEP_1).t == pytest.approx(-w.t)


def test_welch_df_reduces_to_pooled_df_for_equal_variances_and_sizes():
    assert welch_df(4.0, 6, 4.0, 6) == pytest.approx(10.0)
    # very unequal variances: df approaches n - 1 of the noisy side
    assert welch_df(1e-9, 50, 9.0, 5) == pytest.approx(4.0, rel=1e-6)


def test_welch_without_spread_and_too_few_values():
    same = welch([3.0, 3.0], [3.0, 3.0, 3.0])
    assert (same.t, same.p, same.ci_low, same.ci_high) == (0.0, 1.0, 0.0, 0.0)
    apart = welch([3.0, 3.0], [4.0, 4.0])
    assert (apart.t, apart.p, apart.diff) == (math.inf, 0.0, 1.0)
    with pytest.raises(ValueError):
        welch([1.0], [1.0, 2.0])


def test_compare_samples_directions_and_tests():
    # higher is better: 80 against 100 is a 20% slowdown, change -20%
    c = compare_samples([99.0, 100.0, 101.0], [79.0, 80.0, 81.0], "higher")
    assert (c.ratio, c.change_pct, c.slowdown_pct, c.diff) == (
        pytest.approx(0.8), pytest.approx(-20.0), pytest.approx(20.0), pytest.approx(-20.0))
    assert c.significant is True and c.welch.p < 1e-4
    # lower is better: 1.5 s against 1.0 s is 50% slower
    c = compare_samples([1.0, 1.0], [1.5, 1.5], "lower")
    assert (c.slowdown_pct, c.significant) == (pytest.approx(50.0), True)
    # the sleep data: not significant at 5%
    assert compare_samples(SLEEP_1, SLEEP_2, "higher").significant is False
    # one value on a side: no test
    c = compare_samples([2.0], [1.0, 1.2], "lower")
    assert (c.welch, c.significant, c.a.n, c.b.n) == (None, None, 1, 2)
    assert math.isnan(compare_samples([0.0, 0.0], [1.0, 1.0], "lower").ratio)


def test_a_t_interval_of_values_none_of_them_negative_starts_at_zero():
    """Five skewed boot times once printed `-3.512 – 13.61` ms: no mean of non-negative values lies below 0."""
    from labtui.core.stats.intervals import mean_ci

    skewed = [0.4, 0.5, 0.6, 0.7, 23.0]
    ci = mean_ci(skewed, bootstrap=False)
    s = summarize(skewed)
    half = t_quantile(0.975, 4) * s.std / math.sqrt(5)
    assert s.mean - half < 0  # the plain t interval would reach below 0
    assert ci is not None and ci.low == 0.0 and ci.high == pytest.approx(s.mean + half) and ci.method == "t"
    # values that may be negative (a difference, a signed change) keep the whole interval
    signed = [-0.4, 0.5, 0.6, 0.7, 23.0]
    s2 = summarize(signed)
    ci2 = mean_ci(signed, bootstrap=False)
    assert ci2 is not None and ci2.low == pytest.approx(s2.mean - t_quantile(0.975, 4) * s2.std / math.sqrt(5))
