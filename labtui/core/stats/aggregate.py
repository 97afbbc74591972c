"""Aggregates across instances that ran at once (`aggregate_readings`).

A rate (higher is better: ops/s, MB/s, a CPU share) sums, S_n = sum of R_i, as the Zones study and UnixBench's
multi-copy score add theirs.  A time (lower is better, in s, ms, us or ns) is never summed: n instances that each
take t_i to do one unit of work complete sum(1 / t_i) units per second together, the aggregate throughput of the
VServer/Xen paper's Figure 7.  Anything else (bytes, latency percentiles, gaps) is kept per instance only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: Seconds per unit of the time units readings use.
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0, "h": 3600.0}
#: Parts of a metric's name that make a time a statistic of waiting (a latency, a gap, a lag),
#: not the time one unit of work takes: 1 / t of it is no throughput.
_NOT_WORK = ("latency", "gap", "jitter", "spread", "stdev")  # anywhere in a word of the name
_NOT_WORK_WORDS = ("lag", "std", "max", "min", "p50", "p90", "p95", "p99", "p999")  # whole words


@dataclass(frozen=True, slots=True)
class Aggregate:
    """What n instances did together, for one metric they each reported."""

    metric: str  # the aggregate's metric name
    value: float
    unit: str
    better: str
    how: str  # "sum" (a rate, summed) or "rate_sum" (a time, as the throughput sum(1/t) it implies)


def aggregate(values: Sequence[float]) -> float:
    """The aggregate S_n = sum of R_i of a rate over concurrently measured instances.

    Only for rates (higher is better); a time is aggregated by `rate_sum`, see `aggregate_metric`.
    """
    return float(sum(values))


def rate_sum(times: Sequence[float], unit: str) -> float:
    """The throughput, per second, of instances that each took times[i] (in unit) per unit of work: sum(1 / t)."""
    scale = TIME_UNITS[unit]
    if any(not t > 0 for t in times):
        return float("nan")
    return float(sum(1.0 / (t * scale) for t in times))


def is_work_time(metric: str, unit: str, better: str) -> bool:
    """A lower-is-better time of one unit of work (fork_us, inserts_5000_s, boot_time), whose inverse is a rate."""
    if better != "lower" or unit not in TIME_UNITS:
        return False
    words = metric.lower().replace("-", "_").split("_")
    return not any(w in _NOT_WORK_WORDS or any(part in w for part in _NOT_WORK) for w in words)


def aggregate_metric(metric: str, unit: str, better: str, values: Sequence[float]) -> Aggregate | None:
    """The one aggregate of a metric over instances that ran at once, or None when it has none.

    - higher is better (a rate or a share): ``<metric>_sum`` = sum of R_i, same unit;
    - a time of one unit of work (lower is better, a time unit): ``<metric>_rate_sum`` =
      sum of 1/t_i per second (unit ``1/s``, higher is better): units of work done per
      second by all instances together, never the sum of the times;
    - anything else lower-is-better (bytes, latencies, gaps): None, the values stay per instance.
    """
    if not values:
        return None
    if better == "higher":
        return Aggregate(f"{metric}_sum", aggregate(values), unit, "higher", "sum")
    if is_work_time(metric, unit, better):
        return Aggregate(f"{metric}_rate_sum", rate_sum(values, unit), "1/s", "higher", "rate_sum")
    return None


def aggregate_readings(readings: Iterable) -> list[tuple[str, Aggregate]]:
    """(benchmark, aggregate) for every metric that readings (with benchmark, metric, value, unit,
    better) of instances that ran at once report, in the order the metrics first appear."""
    values: dict[tuple[str, str, str, str], list[float]] = {}
    for r in readings:
        values.setdefault((r.benchmark, r.metric, r.unit, r.better), []).append(r.value)
    out = []
    for (benchmark, metric, unit, better), found in values.items():
        if (agg := aggregate_metric(metric, unit, better, found)) is not None:
            out.append((benchmark, agg))
    return out
