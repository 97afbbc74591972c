"""Parsers on real outputs of the tools (tests/data/parsers, sources in SOURCES.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from labtui.core.stats.describe import slowdown_pct
from labtui.parsers import ParseError, Reading
from labtui.parsers.aim9 import (
    AIM9_CATEGORIES,
    aim9_category,
    parse_aim9_console,
    parse_aim9_ss,
)
from labtui.parsers.lmbench import parse_lat_mmap, parse_lmbench
from labtui.parsers.probe import parse_probe_output
from labtui.parsers.redis_benchmark import parse_redis_benchmark_csv
from labtui.parsers.stream import parse_stream
from labtui.parsers.stress_ng import parse_stress_ng
from labtui.parsers.sysbench import parse_sysbench
from labtui.parsers.unixbench import parse_unixbench, unixbench_slug
from labtui.parsers.wrk import parse_wrk

DATA = Path(__file__).parents[1] / "data" / "parsers"


def by_metric(readings: list[Reading]) -> dict[str, Reading]:
    return {r.metric: r for r in readings}


def line_numbers(name: str, pattern: str) -> list[str]:
    """The groups of the one line of fixture name that matches pattern (the test's own reading of the file)."""
    (match,) = re.finditer(pattern, (DATA / name).read_text(), re.M)
    return list(match.groups())


def test_wrk_with_latency_distribution() -> None:
    name = "wrk-4.1.0-latency.txt"
    got = by_metric(parse_wrk((DATA / name).read_text()))
    (rps,) = line_numbers(name, r"^Requests/sec:\s+([\d.]+)$")
    (mb,) = line_numbers(name, r"^Transfer/sec:\s+([\d.]+)MB$")
    avg, stdev, top = line_numbers(name, r"^    Latency\s+([\d.]+)us\s+([\d.]+)us\s+([\d.]+)ms\s")
    assert got["requests_per_s"] == Reading("wrk", "requests_per_s", float(rps), "req/s", "higher")
    assert got["transfer_mib_s"].value == pytest.approx(float(mb))
    assert got["latency_avg_ms"].value == pytest.approx(float(avg) / 1000)  # microseconds
    assert got["latency_stdev_ms"].value == pytest.approx(float(stdev) / 1000)
    assert got["latency_max_ms"] == Reading("wrk", "latency_max_ms", float(top), "ms", "lower")
    assert len(got) == 5


def test_wrk_plain_run_as_the_load_measure_runs_it() -> None:
    name = "wrk-4.1.0-plain.txt"
    got = by_metric(parse_wrk((DATA / name).read_text()))
    (rps,) = line_numbers(name, r"^Requests/sec:\s+([\d.]+)$")
    (avg,) = line_numbers(name, r"^    Latency\s+([\d.]+)us\s")
    assert got["requests_per_s"].value == float(rps)
    assert got["latency_avg_ms"].value == pytest.approx(float(avg) / 1000)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        # the copied fixtures: runs with a few errors are not comparable figures either
        ("wrk-solon-jetty.txt", r"^wrk: socket errors: connect 0, read 233, write 0, timeout 0$"),
        ("wrk-us-latency.txt",
         r"^wrk: 2573 of 111183648 requests got non-2xx or 3xx responses; socket errors: connect 0, read 2667, "),
        # real failures on the CI VM
        ("wrk-4.1.0-refused.txt", r"^wrk: unable to connect to 127\.0\.0\.1:23082 Connection refused$"),
        ("wrk-4.1.0-no-request.txt", r"^wrk: no request completed \(socket errors: connect 0, read 0, write 67064, "),
        ("wrk-4.1.0-all-404.txt", r"^wrk: 63003 of 63003 requests got non-2xx or 3xx responses$"),
        ("wrk-4.1.0-some-500.txt", r"^wrk: 1637 of 54206 requests got non-2xx or 3xx responses$"),
        ("wrk-4.1.0-timeout.txt", r"^wrk: 8 of 8 requests timed out; socket errors: .* timeout 8$"),
        ("wrk-4.1.0-server-killed.txt", r"^wrk: socket errors: connect 0, read 4, write 32263, timeout 0$"),
        ("wrk-4.1.0-truncated.txt", r"cut short: no complete 'Transfer/sec:' line$"),
    ],
)
def test_wrk_failed_run_is_an_error_naming_what_went_wrong(name: str, message: str) -> None:
    text = (DATA / name).read_text()
    with pytest.raises(ParseError, match=message):
        parse_wrk(text)


def test_wrk_failure_counts_are_the_files_own() -> None:
    """The messages above carry the counts wrk printed (read here from the files)."""
    assert line_numbers("wrk-4.1.0-some-500.txt", r"^  (\d+) requests in .*\n  Non-2xx or 3xx responses: (\d+)$") \
        == ["54206", "1637"]
    assert line_numbers("wrk-4.1.0-timeout.txt", r"^  (\d+) requests in .*\n  Socket errors: .* timeout (\d+)$") \
        == ["8", "8"]
    assert line_numbers("wrk-4.1.0-no-request.txt", r"^  (\d+) requests in ") == ["0"]


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


# --- UnixBench 5.1.2 ---------------------------------------------------------

def test_unixbench_one_copy_scores_and_index() -> None:
    got = by_metric(parse_unixbench((DATA / "unixbench-5.1.2-lpi4a.txt").read_text()))
    assert got["execl_throughput_p1"] == Reading("unixbench", "execl_throughput_p1", 1212.7, "lps", "higher")
    assert got["file_copy_1024_bufsize_2000_maxblocks_p1"].unit == "KBps"
    assert got["shell_scripts_8_concurrent_p1"].value == 930.0
    assert got["shell_scripts_8_concurrent_p1"].unit == "lpm"
    assert got["double_precision_whetstone_p1"].unit == "MWIPS"
    assert got["shell_scripts_8_concurrent_index_p1"].value == 1549.9
    assert got["index_score_p1"] == Reading("unixbench", "index_score_p1", 376.3, "index", "higher")
    assert len(got) == 12 + 12 + 1


def test_unixbench_one_and_n_copies() -> None:
    got = by_metric(parse_unixbench((DATA / "unixbench-5.1.2-atom-2copies.txt").read_text()))
    assert got["execl_throughput_p1"].value == 796.7
    assert got["execl_throughput_p2"].value == 2053.5
    assert got["system_call_overhead_p2"].value == 1057063.2
    assert (got["index_score_p1"].value, got["index_score_p2"].value) == (238.0, 407.4)
    assert len(got) == 2 * (12 + 12 + 1)


def test_unixbench_partial_index() -> None:
    got = parse_unixbench((DATA / "unixbench-partial-syscall-16copies.txt").read_text())
    assert [(r.metric, r.value, r.unit) for r in got] == [
        ("system_call_overhead_p16", 5611223.7, "lps"),
        ("system_call_overhead_index_p16", 3740.8, "index"),
        ("index_score_p16", 3740.8, "index"),
    ]


def test_unixbench_errors_name_what_is_missing() -> None:
    with pytest.raises(ParseError, match="parallel cop"):
        parse_unixbench("Execl Throughput   82.0 lps   (29.9 s, 2 samples)\n")
    with pytest.raises(ParseError, match="2 parallel copies has no test score"):
        parse_unixbench("2 CPUs in system; running 2 parallel copies of tests\n\n")


def _brandz_rows() -> list[tuple[str, list[float], str, list[str]]]:
    """The BrandZ post's table: test, [zone 1, zone 2, native 1, native 2], unit, printed percentages."""
    text = (DATA / "brandz-lx-unixbench-post.txt").read_text()
    row = re.compile(r"^(.+?) ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+) (lps|lpm|K Bps) (-?\d+,\d)% (-?\d+,\d)%$", re.M)
    return [(m[1], [float(m[i]) for i in range(2, 6)], m[6], [m[7], m[8]]) for m in row.finditer(text)]


def test_brandz_post_table_reproduced_by_slowdown() -> None:
    """Every relative difference the post prints is -slowdown_pct(zone, native, 'higher')."""
    rows = _brandz_rows()
    assert len(rows) == 11
    assert rows[0][:2] == ("Execl Throughput", [82.00, 99.30, 204.90, 230.20])
    for name, (zone1, zone2, native1, native2), _unit, printed in rows:
        for zone, native, pct in ((zone1, native1, printed[0]), (zone2, native2, printed[1])):
            change = -slowdown_pct(zone, native, "higher")
            assert f"{change:.1f}" == pct.replace(",", "."), name


def test_brandz_post_tests_are_unixbench_tests() -> None:
    """The post's rows name UnixBench 5.1.2 tests, in the units the parser reads from a real report."""
    report = by_metric(parse_unixbench((DATA / "unixbench-5.1.2-lpi4a.txt").read_text()))
    matched = 0
    for name, _values, unit, _printed in _brandz_rows():
        if (reading := report.get(unixbench_slug(name) + "_p1")) is not None:
            assert reading.unit == unit.replace(" ", ""), name
            matched += 1
    assert matched == 10  # all but Shell Scripts (16 concurrent), which the standard run lacks


# --- AIM9 --------------------------------------------------------------------


def test_aim9_console_with_cpu_columns_wrapped_rows() -> None:
    got = parse_aim9_console((DATA / "aim9-lkml-2.5.47.txt").read_text())
    metrics = by_metric(got)
    assert len(got) == 60
    assert metrics["add_double"] == Reading("aim9", "add_double", 317682.32, "Thousand Double Precision Additions/s", "higher")
    assert metrics["matrix_rtns"].value == 380811.67  # its row starts at the end of the line before
    assert metrics["sort_rtns_1"].value == 215.76
    assert metrics["creat-clo"].unit == "File Creations and Closes/s"
    assert metrics["ram_copy"].value == 332994933.00


def test_aim9_console_plain_columns_and_seven_categories() -> None:
    got = parse_aim9_console((DATA / "aim9-lkml-2.5.52-mm2.txt").read_text())
    assert len(got) == 60
    assert by_metric(got)["fork_test"] == Reading("aim9", "fork_test", 1901.35, "Task Creations/s", "higher")
    counts: dict[str | None, int] = {}
    for reading in got:
        category = aim9_category(reading.metric)
        counts[category] = counts.get(category, 0) + 1
    assert counts == {category: len(tests) for category, tests in AIM9_CATEGORIES.items()}
    assert [counts[c] for c in AIM9_CATEGORIES] == [15, 12, 4, 4, 7, 13, 5]


def test_aim9_other_builds_test_names_share_categories() -> None:
    builds = [parse_aim9_console((DATA / name).read_text()) for name in ("aim9-lkml-2.5.47.txt", "aim9-lkml-2.5.52-mm2.txt")]
    assert [aim9_category(r.metric) for r in builds[0]] == [aim9_category(r.metric) for r in builds[1]]
    assert aim9_category("not_a_test") is None


def test_aim9_ss_in_the_format_singleuser_writes() -> None:
    """No public suite9.ss was found; this one is written from a real console run with
    singleuser.c's own formats ('%s\\t%d\\t%s per second' after five header lines)."""
    console = parse_aim9_console((DATA / "aim9-lkml-2.5.52-mm2.txt").read_text())
    header = 'access1\nPIII/868MHZ/128MB\nNov 15 14:30:22 2002\nAIM Independent Resource Benchmark - Suite IX "1.1"\n5120K\n'
    lines = [f"{r.metric}\t{int(r.value)}\t{r.unit[:-2]} per second\n" for r in console]
    got = parse_aim9_ss(header + "".join(lines))
    assert [(r.metric, r.unit) for r in got] == [(r.metric, r.unit) for r in console]
    assert [r.value for r in got] == [float(int(r.value)) for r in console]


def test_aim9_errors() -> None:
    with pytest.raises(ParseError, match="no test rows"):
        parse_aim9_console("AIM Independent Resource Benchmark - Suite IX\n   Testing over\n")
    with pytest.raises(ParseError, match="line 2: expected '<operation> per second'"):
        parse_aim9_ss("name\nadd_double\t214728\tThousand Double Precision Additions\n")
    with pytest.raises(ParseError, match=r"line 1 \(add_double\): expected a number"):
        parse_aim9_ss("add_double\tfast\tThousand Double Precision Additions per second\n")
    with pytest.raises(ParseError, match="no tab-separated test lines"):
        parse_aim9_ss("access1\nconfig\n")


# --- lmbench -----------------------------------------------------------------


def test_lmbench_results_file_gives_table_2_metrics() -> None:
    """The VServer/Xen paper's Table 2 rows: fork, exec, sh, ctx (16p/64K), mmap 64MB/256MB (page fault: next test)."""
    got = by_metric(parse_lmbench((DATA / "lmbench-3alpha4-results.txt").read_text()))
    assert got["proc_fork_us"] == Reading("lmbench", "proc_fork_us", 178.2188, "us", "lower")
    assert got["proc_exec_us"].value == 549.4
    assert got["proc_shell_us"].value == 1032.5
    assert got["ctx_16p_64k_us"].value == 4.68
    assert got["ctx_2p_0k_us"].value == 3.40
    assert got["mmap_64m_us"].value == 565
    assert got["mmap_256m_us"].value == 2253
    assert got["mmap_512k_us"].value == 9.824
    assert got["syscall_null_us"].value == 0.1303
    assert got["syscall_openclose_us"].value == 1.8797
    assert not [m for m in got if "bandwidth" in m or m.startswith("select")]
    assert sum(m.startswith("mmap_") for m in got) == 14  # the "read bandwidth" pairs are not mmap latencies
    assert sum(m.startswith("ctx_") for m in got) == 6 * 8


def test_lmbench_single_tools_and_page_fault() -> None:
    text = (DATA / "lmbench-oskernel-riscv.txt").read_text()
    got = by_metric(parse_lmbench(text))
    assert got["pagefault_us"] == Reading("lmbench", "pagefault_us", 3.8195, "us", "lower")
    assert got["proc_shell_us"].value == 12740.0
    assert got["ctx_16p_32k_us"].value == 28.91
    assert not [m for m in got if m.startswith("mmap_")]  # a bare '0.524288 161' has no "mappings header here
    bare = text.splitlines()[text.splitlines().index("Pagefaults on /var/tmp/XXX: 3.8195 microseconds") + 1]
    assert parse_lat_mmap(bare) == [Reading("lmbench", "mmap_512k_us", 161.0, "us", "lower")]


def test_lmbench_errors() -> None:
    with pytest.raises(ParseError, match="no lat_"):
        parse_lmbench("Pipe bandwidth: 266.12 MB/sec\n")
    with pytest.raises(ParseError, match="lat_mmap"):
        parse_lat_mmap("mappings\n")


# --- sysbench and stress-ng --------------------------------------------------


def test_sysbench_cpu() -> None:
    got = by_metric(parse_sysbench((DATA / "sysbench-1.0.20-cpu-pi5.txt").read_text()))
    assert got["cpu_events_per_s"] == Reading("sysbench", "cpu_events_per_s", 1033.96, "events/s", "higher")
    latencies = (got["cpu_latency_avg_ms"].value, got["cpu_latency_max_ms"].value, got["cpu_latency_p95_ms"].value)
    assert latencies == (0.97, 1.51, 0.97)
    assert got["cpu_latency_max_ms"].better == "lower"


def test_sysbench_memory() -> None:
    got = by_metric(parse_sysbench((DATA / "sysbench-1.0.20-memory.txt").read_text()))
    assert got["memory_mib_s"] == Reading("sysbench", "memory_mib_s", 16705.94, "MiB/s", "higher")
    assert got["memory_ops_per_s"].value == 17106884.26
    assert got["memory_latency_max_ms"].value == 10.77


def test_sysbench_fileio() -> None:
    got = by_metric(parse_sysbench((DATA / "sysbench-1.0.20-fileio-seqrewr.txt").read_text()))
    assert got["fileio_written_mib_s"] == Reading("sysbench", "fileio_written_mib_s", 293.21, "MiB/s", "higher")
    assert got["fileio_writes_per_s"].value == 18765.34
    assert got["fileio_fsyncs_per_s"].value == 24039.77
    assert got["fileio_read_mib_s"].value == 0.0
    assert got["fileio_latency_p95_ms"].value == 1.04
    with pytest.raises(ParseError, match="sysbench: no"):
        parse_sysbench("sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n")


def test_stress_ng_metrc_rows() -> None:
    got = by_metric(parse_stress_ng((DATA / "stress-ng-metrc-brief-pi.txt").read_text()))
    assert got["cpu_bogo_ops_s"] == Reading("stress-ng", "cpu_bogo_ops_s", 207.94, "bogo ops/s", "higher")
    assert got["vm_bogo_ops_s_cpu"].value == 18143.58
    assert len(got) == 3 * 2


def test_stress_ng_old_info_rows_and_full_metrics() -> None:
    old = parse_stress_ng((DATA / "stress-ng-info-brief-mq.txt").read_text())
    assert [(r.metric, r.value) for r in old] == [("mq_bogo_ops_s", 445062.30), ("mq_bogo_ops_s_cpu", 112907.00)]
    full = parse_stress_ng((DATA / "stress-ng-metrc-full-cpu.txt").read_text())
    assert [(r.metric, r.value) for r in full] == [("cpu_bogo_ops_s", 17825.52), ("cpu_bogo_ops_s_cpu", 1190.09)]
    with pytest.raises(ParseError, match="--metrics-brief"):
        parse_stress_ng("stress-ng: info:  [1255] dispatching hogs: 4 cpu\nstress-ng: info:  [1255] passed: 4: cpu (4)\n")



def test_redis_benchmark_names_the_preparatory_lpush_apart():
    from labtui.parsers.redis_benchmark import parse_redis_benchmark_csv

    text = '"LPUSH","100000.00"\n"LPUSH (needed to benchmark LRANGE)","90000.00"\n"MSET (10 keys)","50000.00"\n'
    metrics = [r.metric for r in parse_redis_benchmark_csv(text)]
    assert metrics == ["lpush_rps", "lpush_for_lrange_rps", "mset_rps"]


# --- redis-benchmark 7.0.15 on the CI VM ---------------------------------------


def test_redis_benchmark_70_csv_every_test_and_latency() -> None:
    name = "redis-benchmark-7.0.15-csv.txt"
    got = by_metric(parse_redis_benchmark_csv((DATA / name).read_text()))
    header = line_numbers(name, r'^"test","rps",(.*)$')[0].replace('"', "").split(",")
    for test, metric in (("SET", "set"), ("LPUSH \\(needed to benchmark LRANGE\\)", "lpush_for_lrange"),
                         ("LRANGE_100 \\(first 100 elements\\)", "lrange_100"), ("MSET \\(10 keys\\)", "mset")):
        rps, rest = line_numbers(name, rf'^"{test}","([\d.]+)",(.*)$')
        assert got[f"{metric}_rps"] == Reading("redis-benchmark", f"{metric}_rps", float(rps), "req/s", "higher")
        for column, value in zip(header, rest.replace('"', "").split(",")):
            assert got[f"{metric}_{column}"] == Reading("redis-benchmark", f"{metric}_{column}", float(value), "ms", "lower")
    assert len(got) == 7 * (1 + len(header))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("redis-benchmark-7.0.15-refused.txt",
         r"^redis-benchmark: Could not connect to Redis at 127\.0\.0\.1:23382: Connection refused$"),
        ("redis-benchmark-7.0.15-server-killed.txt", r"^redis-benchmark: Error: Connection reset by peer$"),
        ("redis-benchmark-7.0.15-server-killed-2nd-test.txt", r"^redis-benchmark: Error: Connection reset by peer$"),
        ("redis-benchmark-7.0.15-noauth.txt",
         r"^redis-benchmark: Node 127\.0\.0\.1:23379 replied with error: NOAUTH Authentication required\.$"),
        ("redis-benchmark-7.0.15-truncated.txt", r'^redis-benchmark: CSV line 3 is cut short: "GET","259$'),
    ],
)
def test_redis_benchmark_failed_run_is_an_error_naming_it(name: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_redis_benchmark_csv((DATA / name).read_text())


def test_redis_benchmark_stdout_of_a_run_with_no_test_finished() -> None:
    """The load measure parses stdout alone: there a failed run leaves the CSV header and no test line."""
    for name in ("redis-benchmark-7.0.15-refused.txt", "redis-benchmark-7.0.15-server-killed.txt"):
        stdout = "".join(line for line in (DATA / name).read_text().splitlines(True) if line.startswith('"'))
        assert stdout.startswith('"test","rps",')
        with pytest.raises(ParseError, match="no test line after the CSV header"):
            parse_redis_benchmark_csv(stdout)


# --- sysbench 1.0.20 on the CI VM ----------------------------------------------


def test_sysbench_cpu_memory_fileio_on_the_ci_vm() -> None:
    cpu = by_metric(parse_sysbench((DATA / "sysbench-1.0.20-cpu-ci.txt").read_text()))
    (rate,) = line_numbers("sysbench-1.0.20-cpu-ci.txt", r"^    events per second:\s+([\d.]+)$")
    (p95,) = line_numbers("sysbench-1.0.20-cpu-ci.txt", r"^\s+95th percentile:\s+([\d.]+)$")
    assert cpu["cpu_events_per_s"] == Reading("sysbench", "cpu_events_per_s", float(rate), "events/s", "higher")
    assert cpu["cpu_latency_p95_ms"].value == float(p95)
    assert len(cpu) == 4
    memory = by_metric(parse_sysbench((DATA / "sysbench-1.0.20-memory-ci.txt").read_text()))
    (mib,) = line_numbers("sysbench-1.0.20-memory-ci.txt", r"^[\d.]+ MiB transferred \(([\d.]+) MiB/sec\)$")
    (ops,) = line_numbers("sysbench-1.0.20-memory-ci.txt", r"^Total operations: \d+ \(([\d.]+) per second\)$")
    assert (memory["memory_mib_s"].value, memory["memory_ops_per_s"].value) == (float(mib), float(ops))
    fileio = by_metric(parse_sysbench((DATA / "sysbench-1.0.20-fileio-rndrw-ci.txt").read_text()))
    (reads,) = line_numbers("sysbench-1.0.20-fileio-rndrw-ci.txt", r"^    reads/s:\s+([\d.]+)$")
    (written,) = line_numbers("sysbench-1.0.20-fileio-rndrw-ci.txt", r"^    written, MiB/s:\s+([\d.]+)$")
    assert fileio["fileio_reads_per_s"].value == float(reads)
    assert fileio["fileio_written_mib_s"] == Reading("sysbench", "fileio_written_mib_s", float(written), "MiB/s", "higher")
    assert len(fileio) == 5 + 3


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("sysbench-1.0.20-bad-option.txt", r"^sysbench: invalid option: --cpu-max-primes=10000$"),
        ("sysbench-1.0.20-fileio-no-prepare.txt",
         r"^sysbench: FATAL: Cannot open file 'test_file\.0' errno = 2 \(No such file or directory\)$"),
        ("sysbench-1.0.20-sigint.txt", r"result \(the run stopped after 'Threads started!', before its report\)$"),
        ("sysbench-1.0.20-truncated.txt", r"^sysbench: the report is cut short \(no complete 'execution time"),
    ],
)
def test_sysbench_failed_run_is_an_error_naming_it(name: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_sysbench((DATA / name).read_text())


# --- stress-ng 0.15.06 on the CI VM --------------------------------------------


def test_stress_ng_good_run_on_the_ci_vm() -> None:
    name = "stress-ng-0.15.06-cpu.txt"
    got = parse_stress_ng((DATA / name).read_text())
    row = r"^stress-ng: metrc: \[\d+\] cpu\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)$"
    per_real, per_cpu = line_numbers(name, row)
    assert got == [
        Reading("stress-ng", "cpu_bogo_ops_s", float(per_real), "bogo ops/s", "higher"),
        Reading("stress-ng", "cpu_bogo_ops_s_cpu", float(per_cpu), "bogo ops/s", "higher"),
    ]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("stress-ng-0.15.06-unknown-option.txt", r"^stress-ng: unrecognized option '--cpux'$"),
        ("stress-ng-0.15.06-sock-fail.txt",
         r"^stress-ng: sock: bind failed on port 23080, errno=98 \(Address already in use\)$"),
        ("stress-ng-0.15.06-cpu-sock-fail.txt", r"^stress-ng: sock: bind failed on port 23080, "),
        # stopped 1 s into a 10 s run, yet "successful run completed"
        ("stress-ng-0.15.06-sigint.txt", r"^stress-ng: cpu ran 0\.99 s of the 10 second run it was set to \(stopped by"),
        ("stress-ng-0.15.06-sigterm.txt", r"^stress-ng: cpu ran 1 s of the 10 second run it was set to \(stopped by"),
        ("stress-ng-0.15.06-truncated.txt", r"^stress-ng: no complete metrics row for cpu \(dispatched: 1 cpu\); "),
    ],
)
def test_stress_ng_failed_or_partial_run_is_an_error_naming_it(name: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        parse_stress_ng((DATA / name).read_text())


def test_stress_ng_stopped_runs_say_successful() -> None:
    """Why the run time is checked: stress-ng itself calls the stopped runs successful."""
    for name in ("stress-ng-0.15.06-sigint.txt", "stress-ng-0.15.06-sigterm.txt"):
        assert line_numbers(name, r"^stress-ng: info:  \[\d+\] setting to a (\d+) second run per stressor$") == ["10"]
        (real,) = line_numbers(name, r"^stress-ng: info:  \[\d+\] successful run completed in ([\d.]+)s$")
        assert float(real) < 2


def test_stress_ng_unsuccessful_run_without_its_fail_lines() -> None:
    """The closing verdict alone is enough: the cpu + failed sock run with its fail:/error: lines taken out."""
    text = (DATA / "stress-ng-0.15.06-cpu-sock-fail.txt").read_text()
    kept = "".join(line for line in text.splitlines(True) if " fail: " not in line and " error: " not in line)
    assert "unsuccessful run completed" in kept and "cpu " in kept
    with pytest.raises(ParseError, match="^stress-ng: unsuccessful run completed$"):
        parse_stress_ng(kept)


# --- the probe's errors, exactly (mutation survivors) ----------------------------------------------------------

GOOD_PROBE_LINE = '{"benchmark":"x","metric":"m","value":1,"unit":"s","better":"lower"}'


def test_probe_errors_name_the_line_counted_from_one() -> None:
    with pytest.raises(ParseError, match=r"^line 3: not JSON: "):
        parse_probe_output(f"chatter\n{GOOD_PROBE_LINE}\n{{oops\n")


def test_probe_output_without_a_reading_is_quoted_up_to_200_characters() -> None:
    text = "x" * 300
    with pytest.raises(ParseError) as failed:
        parse_probe_output(text)
    assert str(failed.value) == "no JSON reading line in the output: " + repr("x" * 200)


@pytest.mark.parametrize("key", ["benchmark", "metric", "unit"])
@pytest.mark.parametrize("bad", ["", 7])
def test_probe_names_must_be_non_empty_strings(key: str, bad: object) -> None:
    record = {"benchmark": "x", "metric": "m", "value": 1, "unit": "s", "better": "lower", key: bad}
    with pytest.raises(ParseError, match=f"^line 1: {key} must be a non-empty string$"):
        parse_probe_output(json.dumps(record))


def test_a_reading_is_hashable_and_cannot_be_changed() -> None:
    """Readings are values: kept in sets and dict keys, never changed in place."""
    reading = parse_probe_output(GOOD_PROBE_LINE)[0]
    assert {reading, Reading("x", "m", 1.0, "s", "lower")} == {reading}
    with pytest.raises(AttributeError):
        reading.value = 2.0  # type: ignore[misc]


@pytest.mark.parametrize(("row", "message"), [
    ('"SET","fast"', "SET rps: expected a number, got 'fast'"),
    ('"GET","1000.0","slow"', "GET avg_latency_ms: expected a number, got 'slow'"),
])
def test_redis_benchmark_value_that_is_not_a_number_names_its_test_and_column(row: str, message: str) -> None:
    header = '"test","rps"' if row.count(",") == 1 else '"test","rps","avg_latency_ms"'
    with pytest.raises(ParseError) as failed:
        parse_redis_benchmark_csv(f"{header}\n{row}\n")
    assert str(failed.value) == message


def test_lat_mmap_sizes_are_named_in_mib_when_whole_and_in_kib_otherwise() -> None:
    """lat_mmap prints sizes in MB of 10^6 bytes; 1 GiB must be named 1024m, not 1048575k or 1025m."""
    bare = "0.524288 10\n1.048576 20\n1.572864 30\n1073.741824 40\n"
    assert [r.metric for r in parse_lat_mmap(bare)] == ["mmap_512k_us", "mmap_1m_us", "mmap_1536k_us",
                                                         "mmap_1024m_us"]
