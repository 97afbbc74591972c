import math

import pytest

from labtui.stats import aggregate, normalized, slowdown_pct, summarize


def test_summarize_known_values():
    s = summarize([2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0])
    assert s.n == 8
    assert s.mean == 5.0
    assert s.std == pytest.approx(2.138089935, rel=1e-9)  # sample std (n - 1)
    assert s.median == 4.5
    assert s.ci95 == pytest.approx(2.365 * s.std / math.sqrt(8))
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
