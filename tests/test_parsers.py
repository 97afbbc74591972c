"""Parsers on real outputs of the tools (tests/data/parsers, sources in SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtui.parsers import ParseError, Reading
from labtui.parsers.probe import parse_probe_output
from labtui.parsers.redis_benchmark import parse_redis_benchmark_csv
from labtui.parsers.stream import parse_stream
from labtui.parsers.wrk import parse_wrk

DATA = Path(__file__).parent / "data" / "parsers"


def by_metric(readings: list[Reading]) -> dict[str, Reading]:
    return {r.metric: r for r in readings}


def test_wrk_with_latency_distribution() -> None:
    got = by_metric(parse_wrk((DATA / "wrk-solon-jetty.txt").read_text()))
    assert got["requests_per_s"] == Reading("wrk", "requests_per_s", 83974.71, "req/s", "higher")
    assert got["transfer_mib_s"].value == pytest.approx(12.89)
    assert (got["latency_avg_ms"].value, got["latency_stdev_ms"].value, got["latency_max_ms"].value) == (16.08, 34.40, 501.10)
    assert got["latency_max_ms"].better == "lower"


def test_wrk_converts_microseconds() -> None:
    got = by_metric(parse_wrk((DATA / "wrk-us-latency.txt").read_text()))
    assert got["requests_per_s"].value == 15703.72
    assert got["latency_avg_ms"].value == pytest.approx(0.42347)
    assert got["latency_max_ms"].value == pytest.approx(74.31)


def test_wrk_without_summary_is_an_error() -> None:
    with pytest.raises(ParseError, match="Requests/sec"):
        parse_wrk("Running 30s test @ http://127.0.0.1:8080/\n")


def test_redis_benchmark_old_csv() -> None:
    got = parse_redis_benchmark_csv((DATA / "redis-benchmark-csv-old.txt").read_text())
    assert got == [
        Reading("redis-benchmark", "set_rps", 265252.00, "req/s", "higher"),
        Reading("redis-benchmark", "get_rps", 276701.72, "req/s", "higher"),
    ]


def test_redis_benchmark_62_csv_has_latencies() -> None:
    got = by_metric(parse_redis_benchmark_csv((DATA / "redis-benchmark-csv-6.2.txt").read_text()))
    assert got["incr_rps"].value == 54794.52
    assert got["get_max_latency_ms"] == Reading("redis-benchmark", "get_max_latency_ms", 60.095, "ms", "lower")
    assert got["set_p99_latency_ms"].value == 2.671
    assert len(got) == 3 * 7


def test_redis_benchmark_ragged_line_names_it() -> None:
    text = (DATA / "redis-benchmark-csv-6.2.txt").read_text() + '"PING","1.0"\n'
    with pytest.raises(ParseError, match="line 5 has 2 fields"):
        parse_redis_benchmark_csv(text)


def test_stream_510() -> None:
    got = parse_stream((DATA / "stream-5.10.txt").read_text())
    assert [(r.metric, r.value) for r in got] == [
        ("copy_mb_s", 90014.1), ("scale_mb_s", 91318.6), ("add_mb_s", 97299.2), ("triad_mb_s", 98350.8),
    ]
    with pytest.raises(ParseError):
        parse_stream("Function    Best Rate MB/s  Avg time     Min time     Max time\n")


def test_probe_output_lines() -> None:
    text = 'chatter\n{"benchmark":"syscall","metric":"getppid_ns","value":123.4,"unit":"ns","better":"lower"}\n'
    assert parse_probe_output(text) == [Reading("syscall", "getppid_ns", 123.4, "ns", "lower")]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "output was empty"),
        ("no json here\n", "no JSON reading line"),
        ('{"benchmark":"x","metric":"m","value":1,"unit":"s"}', "missing better"),
        ('{"benchmark":"x","metric":"m","value":"fast","unit":"s","better":"lower"}', "finite number"),
        ('{"benchmark":"x","metric":"m","value":1,"unit":"s","better":"more"}', "'higher' or 'lower'"),
        ('{"benchmark":"x", oops', "not JSON"),
    ],
)
def test_probe_output_errors(text: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_probe_output(text)
