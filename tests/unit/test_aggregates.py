"""Aggregates across instances that ran at once: rates sum, a time aggregates as the throughput it
implies (sum of 1/t), never as a sum of times (issue 23, part 4).

The direction checks use the studies' own figures: the UnixBench multi-copy scores of the BrandZ
post (seed 003) and the shape of the VServer/Xen paper's Figure 7 (seed 004, section 4.4).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import cli_run
import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labtui.core.stats.aggregate import TIME_UNITS, aggregate_metric, aggregate_readings, is_work_time, rate_sum
from labtui.core.stats.describe import slowdown_pct
from labtui.engine.concurrent import record_aggregates, record_sums
from labtui.parsers import Reading

SHM = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"


# --- the definition -----------------------------------------------------------------------------


def test_a_rate_sums_and_keeps_its_unit() -> None:
    agg = aggregate_metric("int_mops", "Mops/s", "higher", [100.0, 98.0])
    assert (agg.metric, agg.value, agg.unit, agg.better, agg.how) == ("int_mops_sum", 198.0, "Mops/s", "higher", "sum")


@pytest.mark.parametrize("metric, unit, times, per_second", [
    ("inserts_5000_s", "s", [2.0, 4.0], 0.5 + 0.25),  # runs of 5000 inserts per second, all instances together
    ("fork_us", "us", [100.0, 200.0], 1e4 + 5e3),  # forks per second
    ("getppid_ns", "ns", [500.0], 2e6),
    ("boot_time", "s", [0.01, 0.02, 0.04], 100 + 50 + 25),
    ("exec_us", "µs", [1000.0], 1000.0),
    ("shell_ms", "ms", [4.0, 4.0], 500.0),
])
def test_a_time_aggregates_as_the_throughput_it_implies(metric, unit, times, per_second) -> None:
    agg = aggregate_metric(metric, unit, "lower", times)
    assert agg is not None and agg.how == "rate_sum"
    assert (agg.metric, agg.unit, agg.better) == (f"{metric}_rate_sum", "1/s", "higher")
    assert agg.value == pytest.approx(per_second)


@pytest.mark.parametrize("metric, unit", [
    ("memory", "bytes"), ("latency_avg_ms", "ms"), ("set_p99_latency_ms", "ms"), ("latency_stdev_ms", "ms"),
    ("maxgap_us", "us"), ("meangap_us", "us"), ("start_lag_ms", "ms"), ("start_spread_ms", "ms"),
])
def test_other_lower_is_better_metrics_stay_per_instance(metric, unit) -> None:
    assert aggregate_metric(metric, unit, "lower", [1.0, 2.0]) is None


def test_a_zero_or_negative_time_gives_no_throughput() -> None:
    assert rate_sum([0.0, 1.0], "s") != rate_sum([0.0, 1.0], "s")  # nan


@given(
    metric=st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True),
    unit=st.sampled_from([*TIME_UNITS, "bytes", "ratio", "%", "MB/s", ""]),
    values=st.lists(st.floats(min_value=1e-6, max_value=1e6), min_size=1, max_size=8),
)
def test_no_lower_is_better_metric_is_ever_summed(metric: str, unit: str, values: list[float]) -> None:
    agg = aggregate_metric(metric, unit, "lower", values)
    if agg is not None:
        # the only aggregate of a lower-is-better metric is a throughput, higher is better
        assert agg.better == "higher" and agg.unit == "1/s" and agg.metric == f"{metric}_rate_sum"
        assert agg.value == pytest.approx(sum(1.0 / (v * TIME_UNITS[unit]) for v in values))
        assert is_work_time(metric, unit, "lower")


@dataclass
class _Ctx:
    """What record_aggregates needs of a RunContext: result()."""

    results: list[tuple]

    def result(self, benchmark, metric, value, unit, better, instance_id="", placement=""):
        self.results.append((benchmark, metric, value, unit, better))


def test_the_engine_records_the_stats_definition() -> None:
    """The concurrent kind (and the creation kind's where = all, which imports record_sums) record
    exactly what labtui.core.stats.aggregate.aggregate_readings defines, one aggregate per metric."""
    readings = [
        Reading("sqlite", "inserts_5000_s", 2.0, "s", "lower"),
        Reading("sqlite", "inserts_5000_s", 4.0, "s", "lower"),
        Reading("arith", "int_mops", 10.0, "Mops/s", "higher"),
        Reading("arith", "int_mops", 12.0, "Mops/s", "higher"),
        Reading("hourglass", "maxgap_us", 80.0, "us", "lower"),
    ]
    ctx = _Ctx([])
    record_aggregates(ctx, readings)  # type: ignore[arg-type]
    assert ctx.results == [
        ("sqlite", "inserts_5000_s_rate_sum", pytest.approx(0.75), "1/s", "higher"),
        ("arith", "int_mops_sum", 22.0, "Mops/s", "higher"),
    ]
    assert record_sums is record_aggregates
    assert [(b, a.metric) for b, a in aggregate_readings(readings)] == [(b, m) for b, m, *_ in ctx.results]


# --- the studies' direction -----------------------------------------------------------------------

# The BrandZ post (seed 003): UnixBench 5.1.2 scores with 1 and 2 parallel copies ("1 thread",
# "2 threads"), in the CentOS lx zone and native.  UnixBench's multi-copy score is the sum of the
# copies' rates.
BRANDZ = {  # test: (zone 1 copy, zone 2 copies, native 1 copy, native 2 copies)
    "Execl Throughput": (82.00, 99.30, 204.90, 230.20),
    "File Copy 1024 bufsize 2000 maxblocks": (31784.90, 45180.30, 40514.50, 54613.10),
    "Pipe Throughput": (58154.50, 80420.50, 89803.10, 117446.00),
    "Pipe-based Context Switching": (3773.30, 6809.80, 3838.50, 7238.90),
    "Process Creation": (134.20, 151.90, 263.30, 301.20),
    "Shell Scripts (8 concurrent)": (32.20, 30.50, 66.10, 67.50),
    "Shell Scripts (16 concurrent)": (15.80, 14.90, 32.40, 33.00),
    "System Call Overhead": (60471.00, 81388.60, 58388.50, 73052.70),
}


@pytest.mark.parametrize("test", sorted(BRANDZ))
def test_unixbench_multi_copy_scores_from_per_copy_times(test: str) -> None:
    """labtui's probes report a time per operation in each instance.  The aggregate of those times
    over 2 copies is UnixBench's 2-copy score (the sum of the copies' rates), so 1 -> 2 copies moves
    the way the post's table does, up or (Shell Scripts 8 and 16 in the zone) down.  A sum of the
    times would call every 2-copy run a slowdown, the boost of Pipe-based Context Switching included."""
    for one, two in (BRANDZ[test][:2], BRANDZ[test][2:]):
        t_one = 1.0 / one  # seconds per loop of the single copy
        t_two = [2.0 / two, 2.0 / two]  # each of 2 copies ran at half the 2-copy score
        agg1 = aggregate_metric("loop_s", "s", "lower", [t_one])
        agg2 = aggregate_metric("loop_s", "s", "lower", t_two)
        assert agg1.value == pytest.approx(one) and agg2.value == pytest.approx(two)  # the scores themselves
        # the direction of the table: slowdown < 0 where the 2-copy score is higher
        assert (slowdown_pct(agg2.value, agg1.value, agg2.better) < 0) == (two > one)
        # the inverted figure the time sum gave: always worse with 2 copies
        summed = slowdown_pct(sum(t_two), t_one, "lower")
        assert summed > 0


def _fig7_times(n: int, cores: int = 2, contention: float = 0.08) -> list[float]:
    """Seconds each of n instances takes for one OSDB-like run: alone up to the core count, shared
    beyond it, and a little slower for every other instance (more processes, more I/O requests: the
    pressure section 4.4 of the paper describes)."""
    return [1.0 * max(1.0, n / cores) * (1.0 + contention * (n - 1))] * n


def test_vserver_xen_figure_7_direction() -> None:
    """Figure 7 (seed 004, 4.4): "after an initial boost in aggregate throughput at two VMs, all
    systems follow the expected diminishing trend" (1, 2, 4 and 8 instances on a two-way SMP).
    The aggregate of the instances' times has that shape; their sum rises at every step, so read
    as a lower-is-better figure it shows the boost at two VMs as the largest loss."""
    counts = (1, 2, 4, 8)
    agg = {n: aggregate_metric("inserts_5000_s", "s", "lower", _fig7_times(n)) for n in counts}
    throughput = [agg[n].value for n in counts]
    assert agg[1].better == "higher"
    assert throughput[1] > throughput[0]  # the boost at two VMs
    assert throughput[1] > throughput[2] > throughput[3]  # then diminishing
    normalized = [t / throughput[0] for t in throughput]
    assert normalized[1] > 1.0  # above the single VM at two
    summed = [sum(_fig7_times(n)) for n in counts]
    assert summed == sorted(summed) and summed[1] > summed[0]  # the old _sum: worse at every step


# --- end to end: concurrent-sqlite on the process backend ------------------------------------------


def test_concurrent_sqlite_records_throughput_not_a_sum_of_times(tmp_path: Path) -> None:
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "200"}
    db = tmp_path / "c.duckdb"
    proc = cli_run.labtui(
        "run", "concurrent-sqlite", "--profile", "quick",
        "--set", f'worker.args=["300", "{SHM}"]', "--set", "concurrent.instances=[1, 2]",
        "--set", "concurrent.start_delay_s=1.0", "--set", "sampling.quiet_timeout_s=0", "--db", str(db), env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "inserts_300_s_rate_sum (1/s, higher is better)" in proc.stdout
    con = duckdb.connect(str(db), read_only=True)
    try:
        summed_times = con.execute(
            "SELECT count(*) FROM results WHERE better = 'lower' AND metric LIKE '%\\_sum' ESCAPE '\\'").fetchone()[0]
        rounds = con.execute(
            "SELECT background, list(value) FILTER (WHERE metric = 'inserts_300_s'), "
            "any_value(value) FILTER (WHERE metric = 'inserts_300_s_rate_sum'), "
            "any_value(unit) FILTER (WHERE metric = 'inserts_300_s_rate_sum') "
            "FROM results GROUP BY background ORDER BY background").fetchall()
        view = con.execute("SELECT better FROM slowdown WHERE metric = 'inserts_300_s_rate_sum'").fetchall()
    finally:
        con.close()
    assert summed_times == 0
    assert [(n, len(times)) for n, times, _, _ in rounds] == [(1, 1), (2, 2)]
    for _, times, throughput, unit in rounds:
        assert unit == "1/s" and throughput == pytest.approx(sum(1.0 / t for t in times))
    assert {b for b, in view} == {"higher"}
