"""`labtui compare A B` on real DuckDB stores: written by the store's writer or by `labtui import`."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import statistics
from pathlib import Path

import duckdb
import pytest

from labtui.cli import main
from labtui.core.events import Result, SessionEnded, SessionStarted
from labtui.store import record_events

DATA = Path(__file__).parents[1] / "data"
T0 = 1_700_000_000.0

# R's sleep data; R 4.x prints for t.test(extra ~ group, data = sleep):
# t = -1.8608, df = 17.776, p-value = 0.07939, 95 percent CI -3.3654832 0.2054832 (group 1 - group 2).
SLEEP_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("COLUMNS", "250")  # rich tables one line per row
    return tmp_path / "store" / "lab.duckdb"


def _session(sid: str, suite: str, backend: str, results: list[tuple], ts: float) -> list:
    """Events of one recorded session: (repetition, step, background, benchmark, metric, value, unit, better, placement)."""
    events = [SessionStarted(sid, suite, "scaling", backend, "local", {}, 1, ts=ts)]
    events += [
        Result(sid, rep, step, bg, "local", f"i{n}", bench, metric, value, unit, better, ts=ts + 1 + n, placement=placement)
        for n, (rep, step, bg, bench, metric, value, unit, better, placement) in enumerate(results)
    ]
    events.append(SessionEnded(sid, "completed", ts=ts + 1000))
    return events


def _boot(values: list[float], step: int, bg: int, metric: str = "boot_time", unit: str = "s") -> list[tuple]:
    """One value per repetition, as a scaling run with one worker run per step records them."""
    return [(1 + i, step, bg, "boot", metric, v, unit, "lower", "") for i, v in enumerate(values)]


@pytest.fixture
def recorded(db: Path) -> Path:
    """Two recorded sessions (A: docker, B: unikraft) meeting at some conditions only.

    The step indexes differ on purpose (B scales in bigger steps): conditions meet by background.
    """
    a = (
        _boot([v + 10 for v in SLEEP_1], step=0, bg=0)
        + _boot([1.0, 1.1, 0.9, 1.0], step=1, bg=10)
        + [(1, 0, 0, "boot", "image_bytes", 5e6, "bytes", "lower", "")]
        + [(r, 0, 0, "cpu", "prime_ops", v, "ops/s", "higher", "") for r, v in ((1, 100.0), (2, 110.0), (3, 90.0))]
        + [(r, 0, 0, "net", "req_s", v, "req/s", "higher", "") for r, v in ((1, 1000.0), (2, 1010.0), (3, 990.0))]
        + [(1, 0, 0, "sqlite", "inserts", 2.0, "s", "lower", "")]
        + [(1, 0, 0, "boot", "memory", 1e8, "bytes", "lower", "")]
        + [(r, s, 0, "stream", "copy", v, "MB/s", "higher", p)
           for r, s, p, v in ((1, 0, "alone", 100.0), (2, 0, "alone", 102.0),
                              (1, 1, "same-thread", 60.0), (2, 1, "same-thread", 64.0))]
    )
    b = (
        _boot([v + 10 for v in SLEEP_2], step=0, bg=0)
        + _boot([2.0, 2.2, 1.8, 2.1], step=2, bg=10)  # step 2 in B is background 10
        + _boot([3.0, 3.1], step=4, bg=20)
        + [(1, 0, 0, "boot", "image_bytes", 1e6, "bytes", "lower", "")]
        + [(1, 0, 0, "cpu", "prime_ops", 50.0, "ops/s", "higher", "")]
        + [(r, 0, 0, "net", "req_s", v, "req/s", "higher", "") for r, v in ((1, 800.0), (2, 810.0), (3, 790.0))]
        + [(1, 0, 0, "sqlite", "inserts", 2100.0, "ms", "lower", "")]
        + [(r, s, 0, "stream", "copy", v, "MB/s", "higher", p)
           for r, s, p, v in ((1, 0, "alone", 101.0), (2, 0, "alone", 99.0),
                              (1, 1, "same-thread", 90.0), (2, 1, "same-thread", 94.0))]
    )
    record_events(db, _session("docker-boot-1", "boot-scaling", "docker", a, T0)
                  + _session("unikraft-boot-1", "boot-scaling", "unikraft", b, T0 + 5000))
    return db


def _json(capsys, *args: str) -> tuple[int, dict]:
    code = main(["compare", *args, "--format", "json"])
    return code, json.loads(capsys.readouterr().out)


def _rows(doc: dict) -> dict[tuple, dict]:
    return {(r["benchmark"], r["metric"], r["placement"], r["background"], r["unit"]): r for r in doc["rows"]}


def test_welch_row_matches_r_and_pools_every_repetition(recorded: Path, capsys) -> None:
    code, doc = _json(capsys, "docker", "unikraft", "--db", str(recorded))
    assert code == 0
    assert (doc["a"]["session_id"], doc["b"]["session_id"], doc["alpha"]) == ("docker-boot-1", "unikraft-boot-1", 0.05)
    r = _rows(doc)[("boot", "boot_time", "", 0, "s")]
    assert (r["present"], r["n_a"], r["n_b"]) == ("both", 10, 10)
    assert r["mean_a"] == pytest.approx(10.75) and r["mean_b"] == pytest.approx(12.33)
    assert r["std_a"] == pytest.approx(statistics.stdev(SLEEP_1))
    # Welch: R's figures, with the sign of B - A (the shift by 10 s changes no difference)
    assert r["diff"] == pytest.approx(1.58)
    assert r["t"] == pytest.approx(1.8608, abs=5e-5)
    assert r["df"] == pytest.approx(17.776, abs=5e-4)
    assert r["p_value"] == pytest.approx(0.07939, abs=5e-6)
    assert r["ci95_low"] == pytest.approx(-0.2054832, abs=1e-7)
    assert r["ci95_high"] == pytest.approx(3.3654832, abs=1e-7)
    # five conditions are tested (Benjamini-Hochberg): this p is the 4th smallest, so p_adjusted = p * 5 / 4
    assert doc["tested"] == 5 and doc["correction"] == "Benjamini-Hochberg" and doc["fdr"] == 0.05
    assert doc["equivalence_pct"] == 5.0 and doc["summary"].startswith("3 of 5 conditions tested differ after")
    assert r["p_adjusted"] == pytest.approx(0.07939 * 5 / 4, abs=1e-5)
    # not significant, and the interval reaches 3.365 / 10.75 = 31.3% of A's mean: no finding either way
    assert r["significant"] is False and r["verdict"] == "too few samples to tell (CI ±31.3%)"
    # lower is better: slowdown = (B/A - 1) * 100 = change
    assert r["ratio"] == pytest.approx(12.33 / 10.75)
    assert r["change_pct"] == pytest.approx((12.33 / 10.75 - 1) * 100)
    assert r["slowdown_pct"] == pytest.approx(r["change_pct"])


def test_conditions_meet_by_background_and_placement(recorded: Path, capsys) -> None:
    rows = _rows(_json(capsys, "docker-boot-1", "unikraft-boot-1", "--db", str(recorded))[1])
    # background 10 is step 1 in A and step 2 in B
    r = rows[("boot", "boot_time", "", 10, "s")]
    a, b = [1.0, 1.1, 0.9, 1.0], [2.0, 2.2, 1.8, 2.1]
    va, vb = statistics.variance(a) / 4, statistics.variance(b) / 4
    assert r["t"] == pytest.approx((statistics.fmean(b) - statistics.fmean(a)) / math.sqrt(va + vb))
    assert r["df"] == pytest.approx((va + vb) ** 2 / (va**2 / 3 + vb**2 / 3))
    assert r["significant"] is True and r["p_value"] < 0.001
    assert r["verdict"] == "B worse, significant" and r["slowdown_pct"] == pytest.approx(102.5)
    assert rows[("boot", "boot_time", "", 20, "s")]["present"] == "B only"
    # isolation: each placement against the same placement
    alone, same = rows[("stream", "copy", "alone", 0, "MB/s")], rows[("stream", "copy", "same-thread", 0, "MB/s")]
    assert (alone["mean_a"], alone["mean_b"]) == (101.0, 100.0)
    assert alone["verdict"] == "too few samples to tell (CI ±7.0%)"  # two samples a side: t(2) is 4.3
    assert (same["mean_a"], same["mean_b"]) == (62.0, 92.0)
    assert same["slowdown_pct"] == pytest.approx((1 - 92 / 62) * 100)  # higher is better: negative, B better
    assert same["verdict"] == "B better, significant"


def test_higher_is_better_single_samples_and_one_sided_metrics(recorded: Path, capsys) -> None:
    rows = _rows(_json(capsys, "docker-boot-1", "unikraft-boot-1", "--db", str(recorded))[1])
    net = rows[("net", "req_s", "", 0, "req/s")]
    assert (net["ratio"], net["change_pct"], net["slowdown_pct"]) == (
        pytest.approx(0.8), pytest.approx(-20.0), pytest.approx(20.0))
    assert net["verdict"] == "B worse, significant"
    one = rows[("boot", "image_bytes", "", 0, "bytes")]
    assert (one["n_a"], one["n_b"], one["ratio"], one["change_pct"]) == (1, 1, pytest.approx(0.2), pytest.approx(-80.0))
    assert (one["p_value"], one["t"], one["ci95_low"], one["significant"]) == (None, None, None, None)
    assert one["verdict"] == "no test: one repetition each"
    assert (one["std_a"], one["std_b"]) == (None, None)  # one sample has no spread (it was 0.0)
    cpu = rows[("cpu", "prime_ops", "", 0, "ops/s")]
    assert (cpu["n_a"], cpu["n_b"], cpu["slowdown_pct"], cpu["verdict"]) == (3, 1, pytest.approx(50.0),
                                                                             "no test: one repetition in B")
    assert (cpu["std_a"], cpu["std_b"]) == (pytest.approx(10.0), None)
    memory = rows[("boot", "memory", "", 0, "bytes")]
    assert (memory["present"], memory["n_a"], memory["n_b"], memory["ratio"]) == ("A only", 1, None, None)
    assert memory["verdict"] == "only in A"
    # the same metric in another unit is not compared, and each side says so
    assert rows[("sqlite", "inserts", "", 0, "s")]["verdict"] == "only in A; B records it as ms, lower is better"
    assert rows[("sqlite", "inserts", "", 0, "ms")]["verdict"] == "only in B; A records it as s, lower is better"


def test_csv_and_table_carry_the_same_rows(recorded: Path, capsys) -> None:
    assert main(["compare", "docker", "unikraft", "--db", str(recorded), "--format", "csv"]) == 0
    records = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(records) == 11
    row = next(r for r in records if r["metric"] == "boot_time" and r["background"] == "0")
    assert float(row["p_value"]) == pytest.approx(0.07939, abs=5e-6) and row["significant"] == "False"
    assert float(row["p_adjusted"]) == pytest.approx(0.07939 * 5 / 4, abs=1e-5)
    assert next(r for r in records if r["metric"] == "memory")["ratio"] == ""

    assert main(["compare", "docker", "unikraft", "--db", str(recorded)]) == 0
    out = capsys.readouterr().out
    assert "A: docker-boot-1 (boot-scaling, docker, local; completed)" in out
    # the summary leads, before the table: what differs after the correction, and what the rest show
    words = " ".join(out.split())
    assert words.index("B: unikraft-boot-1") < words.index(
        "3 of 5 conditions tested differ after correction (Benjamini-Hochberg, FDR 5%); the largest: "
        "boot/boot_time at background 10, +102.5% (B worse; 95% CI +76.9% … +128.1% of A's mean); of the "
        "other 2: 2 too few samples to tell; 2 not tested (one sample on a side); 4 in one session only") < words.index(
        "metric (unit, better)")
    assert "p adj: p adjusted by Benjamini-Hochberg over the 5 conditions tested" in words
    line = next(x for x in out.splitlines() if x.strip().startswith("boot_time") and " 10 " in x)
    cells = re.split(r"\s{2,}", line.strip())
    assert cells[:5] == ["boot_time (ms, ↓)", "10", "1000 (4)", "2025 (4)", "2.025"]  # seconds shown in ms
    assert cells[-1] == "B worse, significant" and float(cells[-2]) < 0.001


def test_narrow_terminal_gets_lines_instead_of_a_table(recorded: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["compare", "docker", "unikraft", "--db", str(recorded)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(len(x) for x in lines) <= 80
    at = lines.index("  boot_time (ms, lower is better, background 10)")
    assert lines[at + 1] == "    A 1000 (n=4)  B 2025 (n=4)  B/A 2.025  change +102.5 %  slowdown +102.5 %"
    assert lines[at + 2].startswith("    95% CI of B−A 769.4 – 1281 t  p 0.000")
    assert re.search(r"  p adj 0\.000\d+$", lines[at + 2])
    assert lines[at + 3] == "    B worse, significant"
    at = lines.index("  memory (MiB, lower is better)")
    assert lines[at + 1: at + 3] == ["    A 95.37 (n=1)", "    only in A"]
    at = lines.index("  copy (MB/s, higher is better, placement same-thread)")
    assert "slowdown -48.4 %" in lines[at + 1] and lines[at + 3] == "    B better, significant"


def test_unknown_ambiguous_and_identical_sessions_exit_2(recorded: Path, capsys) -> None:
    record_events(recorded, _session("docker-boot-2", "boot-scaling", "docker", _boot([1.0], 0, 0), T0 + 9000))
    assert main(["compare", "podman", "unikraft", "--db", str(recorded)]) == 2
    assert "no session id starts with 'podman'" in capsys.readouterr().err
    assert main(["compare", "docker", "unikraft", "--db", str(recorded)]) == 2
    assert "'docker' is ambiguous; it matches: docker-boot-1, docker-boot-2" in capsys.readouterr().err
    assert main(["compare", "docker-boot-1", "docker-boot-1", "--db", str(recorded)]) == 2
    assert "both session docker-boot-1" in capsys.readouterr().err
    assert main(["compare", "a", "b", "--db", str(recorded.parent / "none.duckdb")]) == 2
    assert "no labtui store" in capsys.readouterr().err


def test_nothing_in_common_exits_1_and_lists_both_sides(db: Path, capsys) -> None:
    record_events(db, _session("x1", "s", "process", _boot([1.0, 2.0], 0, 0), T0)
                  + _session("y1", "s", "process", _boot([1.0, 2.0], 0, 0, metric="exit_time"), T0 + 10))
    assert main(["compare", "x1", "y1", "--db", str(db), "--format", "json"]) == 1
    out, err = capsys.readouterr()
    rows = json.loads(out)["rows"]
    assert [(r["metric"], r["present"]) for r in rows] == [("boot_time", "A only"), ("exit_time", "B only")]
    assert "labtui compare: x1 and y1 have no benchmark/metric/background in common" in err


def test_recorded_against_imported_session(recorded: Path, tmp_path: Path, capsys) -> None:
    """A session imported from a CSV meets a recorded one at the background the CSV names."""
    path = tmp_path / "kvm.csv"
    path.write_text("benchmark,metric,value,unit,better,background,repetition\n"
                    + "".join(f"boot,boot_time,{v},s,lower,10,{i}\n" for i, v in enumerate([1.0, 1.1, 0.9, 1.0])))
    assert main(["import", str(path), "--session", "kvm-import", "--db", str(recorded)]) == 0
    capsys.readouterr()
    code, doc = _json(capsys, "kvm", "unikraft-boot-1", "--db", str(recorded))
    assert code == 0
    both = [r for r in doc["rows"] if r["present"] == "both"]
    assert [(r["metric"], r["background"]) for r in both] == [("boot_time", 10)]
    # the same values as A's background 10 above: the same test from the other side
    assert both[0]["n_a"] == 4 and both[0]["slowdown_pct"] == pytest.approx(102.5) and both[0]["p_value"] < 0.001


def test_reads_a_schema_version_1_store(recorded: Path, capsys) -> None:
    """A store written before results.placement existed is read as if no result had a placement."""
    con = duckdb.connect(str(recorded))
    try:
        con.execute("DROP VIEW slowdown")
        con.execute("DELETE FROM results WHERE placement <> ''")
        con.execute("ALTER TABLE results DROP COLUMN placement")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    finally:
        con.close()
    code, doc = _json(capsys, "docker", "unikraft", "--db", str(recorded))
    assert code == 0
    assert _rows(doc)[("boot", "boot_time", "", 0, "s")]["p_value"] == pytest.approx(0.07939, abs=5e-6)
    assert not any(r["benchmark"] == "stream" for r in doc["rows"])


def _import(db: Path, name: str, session: str, capsys) -> None:
    assert main(["import", str(DATA / name), "--session", session, "--db", str(db)]) == 0
    capsys.readouterr()


def test_brandz_post_every_printed_percentage(db: Path, capsys) -> None:
    """The BrandZ lx zone post (seed 003) prints, for each UnixBench test at 1 and 2 threads, the
    change of the CentOS lx zone against native, e.g. "Execl Throughput 82.00 99.30 204.90 230.20 lps
    -60,0% -56,9%".  compare_brandz_lxzone.csv carries each printed percentage in stated_change_pct."""
    _import(db, "compare_brandz_native.csv", "brandz-native", capsys)
    _import(db, "compare_brandz_lxzone.csv", "brandz-lxzone", capsys)
    with (DATA / "compare_brandz_lxzone.csv").open() as f:
        stated = {r["metric"]: r["stated_change_pct"] for r in csv.DictReader(f)}
    assert len(stated) == 22 and stated["execl_throughput_p1"] == "-60.0" and stated["system_call_overhead_p2"] == "11.4"

    assert main(["compare", "brandz-native", "brandz-lxzone", "--db", str(db)]) == 0
    printed = {}
    for line in capsys.readouterr().out.splitlines():
        cells = re.split(r"\s{2,}", line.strip())
        if m := re.fullmatch(r"(\w+) \((lps|lpm|KBps), ↑\)", cells[0]):
            printed[m[1]] = cells
    assert printed.keys() == stated.keys()
    for metric, cells in printed.items():
        change, slowdown = float(cells[4]), float(cells[5])
        assert change == pytest.approx(float(stated[metric]), abs=1e-9), metric  # printed to one decimal
        assert slowdown == pytest.approx(-change, abs=1e-9)  # higher is better
        assert cells[-1] == "no test: one repetition each"


def test_vserver_xen_paper_statements(db: Path, capsys) -> None:
    """The Linux-VServer vs Xen paper (seed 004), section 4.2 on Table 2 (lmbench, uniprocessor, µs)."""
    for name in ("linux", "vserver", "xen3"):
        _import(db, f"compare_lmbench_{name}_up.csv", f"{name}-up", capsys)

    def compare(a: str, b: str) -> dict[str, dict]:
        code, doc = _json(capsys, a, b, "--db", str(db))
        assert code == 0 and all(r["present"] == "both" for r in doc["rows"])
        return {r["metric"]: r for r in doc["rows"]}

    vserver, xen = compare("linux-up", "vserver-up"), compare("linux-up", "xen3-up")
    xen_vs_vserver = compare("vserver-up", "xen3-up")
    assert len(vserver) == len(xen) == 7
    # "The performance of VServer-UP is always within 1% of Linux-UP" (fork, exec and sh process)
    for metric in ("proc_fork_us", "proc_exec_us", "proc_shell_us"):
        assert 0 < vserver[metric]["change_pct"] < 1.0, metric
    # Xen3-UP: "the inherent overhead is still measurable, and almost double in the case of sh process"
    assert 1.9 < xen["proc_shell_us"]["ratio"] < 2.0
    assert xen["proc_shell_us"]["slowdown_pct"] == pytest.approx(95.57, abs=0.01)
    # ctx (16p/64K): "the 2µs to 3µs overhead for these micro-benchmarks" (Xen3-UP against Linux-UP)
    assert 2.0 <= xen["ctx_16p_64k_us"]["diff"] <= 3.0
    # mmap: "the Xen kernels incur a 19µs overhead per megabyte, versus 5.9µs in the other systems"
    for metric, mb in (("mmap_64m_us", 64), ("mmap_256m_us", 256)):
        assert round(xen[metric]["mean_b"] / mb) == 19 and round(xen[metric]["mean_a"] / mb, 1) in (5.8, 5.9)
        assert xen[metric]["ratio"] == pytest.approx(19 / 5.9, rel=0.02)
    # Table 2 shows the tests "which represent approximately 2x or greater discrepancy between
    # VServer-UP and Xen3-UP": all but ctx (1.58x) are at least 1.9x
    ratios = {m: r["ratio"] for m, r in xen_vs_vserver.items()}
    assert all(ratio >= 1.9 for m, ratio in ratios.items() if m != "ctx_16p_64k_us"), ratios
    assert ratios["ctx_16p_64k_us"] == pytest.approx(6.02 / 3.81)
    assert all(r["verdict"] == "no test: one repetition each" for r in xen.values())


# --- samples are repetitions or sessions, never the instances of one step (issue 23, part 7) ---


def _concurrent(values_by_rep: list[list[float]], bg: int = 4) -> list[tuple]:
    """A concurrent step: every repetition measures `bg` instances at once."""
    return [(rep, 1, bg, "sqlite", "inserts_s", v, "s", "lower", "")
            for rep, values in enumerate(values_by_rep, start=1) for v in values]


def test_the_instances_of_one_step_are_not_samples(db: Path, capsys) -> None:
    """Eight instances measured at once in one repetition are one sample, not eight: pooling them
    (pseudo-replication) gave this pair p < 1e-9."""
    a = _concurrent([[1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.00, 1.01]], bg=8)
    b = _concurrent([[1.10, 1.11, 1.09, 1.10, 1.12, 1.08, 1.10, 1.11]], bg=8)
    record_events(db, _session("conc-a", "concurrent-sqlite", "process", a, T0)
                  + _session("conc-b", "concurrent-sqlite", "process", b, T0 + 5000))
    code, doc = _json(capsys, "conc-a", "conc-b", "--db", str(db))
    r = _rows(doc)[("sqlite", "inserts_s", "", 8, "s")]
    assert code == 0 and doc["samples"] == "repetitions"
    assert (r["samples"], r["n_a"], r["n_b"], r["values_a"], r["values_b"]) == ("repetitions", 1, 1, 8, 8)
    assert r["p_value"] is None and r["verdict"] == "no test: one repetition each"
    assert r["mean_a"] == pytest.approx(statistics.fmean(v for *_, v, _u, _b, _p in a))


def test_each_repetition_is_the_mean_of_its_instances_measured_at_once(db: Path, capsys) -> None:
    reps_a = [[1.0, 1.2, 1.1, 0.9], [1.3, 1.1, 1.0, 1.2], [0.9, 1.0, 1.1, 1.0]]
    reps_b = [[2.0, 2.1, 1.9, 2.2], [2.3, 2.0, 2.1, 2.0], [1.9, 2.2, 2.0, 2.1]]
    record_events(db, _session("rep-a", "s", "process", _concurrent(reps_a), T0)
                  + _session("rep-b", "s", "process", _concurrent(reps_b), T0 + 5000))
    code, doc = _json(capsys, "rep-a", "rep-b", "--db", str(db))
    r = _rows(doc)[("sqlite", "inserts_s", "", 4, "s")]
    means_a, means_b = [statistics.fmean(x) for x in reps_a], [statistics.fmean(x) for x in reps_b]
    assert (r["n_a"], r["n_b"], r["values_a"], r["values_b"]) == (3, 3, 12, 12)
    assert r["std_a"] == pytest.approx(statistics.stdev(means_a)) and r["std_b"] == pytest.approx(statistics.stdev(means_b))
    va, vb = statistics.variance(means_a) / 3, statistics.variance(means_b) / 3
    assert r["t"] == pytest.approx((statistics.fmean(means_b) - statistics.fmean(means_a)) / math.sqrt(va + vb))
    assert r["df"] == pytest.approx((va + vb) ** 2 / (va**2 / 2 + vb**2 / 2))
    # three samples a side: too few for a bootstrap, Welch's t interval
    assert r["ci_method"] == "t" and (r["ci95_low"], r["ci95_high"]) == (r["t_ci95_low"], r["t_ci95_high"])
    assert r["verdict"] == "B worse, significant"
    assert main(["compare", "rep-a", "rep-b", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "n = repetitions: each sample is one repetition's value at its step" in " ".join(out.split())


def test_several_sessions_a_side_are_the_samples(db: Path, capsys) -> None:
    """`compare A1,A2,A3 B1,B2,B3`: a sample is a session (the mean of its repetitions), on both sides."""
    events = []
    for i, (x, y) in enumerate([(1.0, 1.5), (1.1, 1.6), (0.9, 1.4)]):
        events += _session(f"sa{i}", "s", "process", _boot([x, x + 0.1], 0, 0), T0 + 100 * i)
        events += _session(f"sb{i}", "s", "process", _boot([y, y + 0.1], 0, 0), T0 + 1000 + 100 * i)
    record_events(db, events)
    code, doc = _json(capsys, "sa0,sa1,sa2", "sb0,sb1,sb2", "--db", str(db))
    assert code == 0 and doc["samples"] == "sessions" and [s["session_id"] for s in doc["a"]] == ["sa0", "sa1", "sa2"]
    r = _rows(doc)[("boot", "boot_time", "", 0, "s")]
    assert (r["samples"], r["n_a"], r["n_b"], r["values_a"]) == ("sessions", 3, 3, 6)
    assert r["mean_a"] == pytest.approx(1.05) and r["std_a"] == pytest.approx(0.1)
    # one session against three: the one side has a single sample
    code, doc = _json(capsys, "sa0", "sb0,sb1,sb2", "--db", str(db))
    assert _rows(doc)[("boot", "boot_time", "", 0, "s")]["verdict"] == "no test: one session in A"
    assert main(["compare", "sa0,sa1", "sa1,sb0", "--db", str(db)]) == 2
    assert "both session sa1" in capsys.readouterr().err


def test_many_skewed_samples_get_a_bootstrap_interval_and_few_get_welchs(db: Path, capsys) -> None:
    skewed_a = [1.0, 1.01, 1.02, 1.0, 1.01, 1.03, 1.0, 1.02, 1.01, 1.0] * 2 + [1.02, 1.9]  # one slow repetition
    steady_b = [1.2 + 0.01 * (i % 4) for i in range(22)]
    few_a, few_b = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95], [1.3, 1.2, 1.4, 1.3, 1.25, 1.35]
    record_events(db, _session("sk-a", "s", "process", _boot(skewed_a, 0, 0) + _boot(few_a, 1, 10), T0)
                  + _session("sk-b", "s", "process", _boot(steady_b, 0, 0) + _boot(few_b, 1, 10), T0 + 5000))
    rows = _rows(_json(capsys, "sk-a", "sk-b", "--db", str(db))[1])
    skewed, few = rows[("boot", "boot_time", "", 0, "s")], rows[("boot", "boot_time", "", 10, "s")]
    assert skewed["ci_method"] == "bootstrap"
    assert skewed["t_ci95_low"] is not None and (skewed["ci95_low"], skewed["ci95_high"]) != (
        skewed["t_ci95_low"], skewed["t_ci95_high"])
    assert skewed["ci95_low"] < skewed["diff"] < skewed["ci95_high"]
    assert few["ci_method"] == "t" and (few["ci95_low"], few["ci95_high"]) == (few["t_ci95_low"], few["t_ci95_high"])
    assert few["verdict"] == "B worse, significant" and few["ci95_low"] > 0
    # the same samples give the same interval (the bootstrap's seed is fixed)
    again = _rows(_json(capsys, "sk-a", "sk-b", "--db", str(db))[1])[("boot", "boot_time", "", 0, "s")]
    assert (again["ci95_low"], again["ci95_high"]) == (skewed["ci95_low"], skewed["ci95_high"])
    assert main(["compare", "sk-a", "sk-b", "--db", str(db)]) == 0
    assert " boot " in capsys.readouterr().out


# --- more than two sessions: the studies' side-by-side table (issue 33) ---


def _table2(db: Path, capsys) -> dict[str, dict[str, float]]:
    """Study 004's Table 2 imported as three sessions; the paper's numbers per system and metric."""
    paper: dict[str, dict[str, float]] = {}
    for name in ("linux", "vserver", "xen3"):
        _import(db, f"compare_lmbench_{name}_up.csv", f"{name}-up", capsys)
        with (DATA / f"compare_lmbench_{name}_up.csv").open() as f:
            paper[name] = {r["metric"]: float(r["value"]) for r in csv.DictReader(f)}
    return paper


def test_side_by_side_sets_table_2_beside_linux(db: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    paper = _table2(db, capsys)
    code, doc = _json(capsys, "linux-up", "vserver-up", "xen3-up", "--db", str(db))
    assert code == 0 and doc["samples"] == "repetitions"
    assert [c["sessions"][0]["session_id"] for c in doc["columns"]] == ["linux-up", "vserver-up", "xen3-up"]
    assert {r["metric"] for r in doc["rows"]} == paper["linux"].keys()
    for row in doc["rows"]:
        linux, vserver, xen = row["columns"]
        base = paper["linux"][row["metric"]]
        assert (linux["mean"], vserver["mean"], xen["mean"]) == (
            pytest.approx(base), pytest.approx(paper["vserver"][row["metric"]]), pytest.approx(paper["xen3"][row["metric"]]))
        assert linux["change_pct"] is None
        assert xen["change_pct"] == pytest.approx((paper["xen3"][row["metric"]] / base - 1) * 100)
        assert vserver["p_value"] is None and vserver["significant"] is None  # one value a side: no test
    # "VServer-UP is always within 1% of Linux-UP" (fork, exec, sh); Xen3 "almost double" for sh
    rows = {r["metric"]: r["columns"] for r in doc["rows"]}
    assert all(0 < rows[m][1]["change_pct"] < 1 for m in ("proc_fork_us", "proc_exec_us", "proc_shell_us"))
    assert rows["proc_shell_us"][2]["change_pct"] == pytest.approx(95.57, abs=0.01)

    assert main(["compare", "linux-up", "vserver-up", "xen3-up", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("1: import@")
    line = next(x for x in out.splitlines() if x.strip().startswith("proc_shell_us"))
    cells = re.split(r"\s{2,}", line.strip())
    assert cells == ["proc_shell_us (µs, ↓)", "968.1 (1)", "977.7 (1)", "+1.0", "1893 (1)", "+95.6"]

    monkeypatch.setenv("COLUMNS", "80")  # a narrow terminal or a pipe: the metric and numbers stay whole
    assert main(["compare", "linux-up", "vserver-up", "xen3-up", "--db", str(db)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("proc_shell_us"))
    assert re.split(r"\s{2,}", line.strip()) == cells

    assert main(["compare", "linux-up", "vserver-up", "xen3-up", "--db", str(db), "--format", "csv"]) == 0
    records = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    fork = next(r for r in records if r["metric"] == "proc_fork_us")
    assert (float(fork["mean_1"]), float(fork["mean_3"])) == (86.5, 271.9)
    assert float(fork["change_pct_3"]) == pytest.approx((271.9 / 86.5 - 1) * 100) and fork["change_pct_1"] == ""


def test_side_by_side_marks_significant_differences_and_rows_of_one_session(recorded: Path, capsys) -> None:
    record_events(recorded, _session("process-boot-1", "boot-scaling", "process", _boot([5.0, 5.2, 4.8], 0, 0), T0 + 9000))
    code, doc = _json(capsys, "docker-boot-1", "unikraft-boot-1", "process-boot-1", "--db", str(recorded))
    assert code == 0
    rows = {(r["benchmark"], r["metric"], r["placement"], r["background"], r["unit"]): r["columns"] for r in doc["rows"]}
    docker, unikraft, process = rows[("boot", "boot_time", "", 0, "s")]
    assert (docker["n"], unikraft["n"], process["n"]) == (10, 10, 3)
    assert unikraft["p_value"] == pytest.approx(0.07939, abs=5e-6) and unikraft["significant"] is False  # R's figure
    # the star follows p adjusted over every test of the table: the five of unikraft and process's boot_time at 0
    assert doc["correction"] == "Benjamini-Hochberg" and unikraft["p_adjusted"] > unikraft["p_value"]
    assert process["significant"] is True and process["change_pct"] == pytest.approx((5.0 / 10.75 - 1) * 100)
    assert process["median"] == pytest.approx(5.0) and docker["median"] == pytest.approx(statistics.median(SLEEP_1) + 10)
    assert process["std"] == pytest.approx(0.2)
    assert [c["std"] for c in rows[("boot", "image_bytes", "", 0, "bytes")]] == [None, None, None]  # n = 1 each
    assert rows[("boot", "memory", "", 0, "bytes")][1:] == [
        {"mean": None, "n": None, "std": None, "change_pct": None, "p_value": None, "p_adjusted": None,
         "significant": None, "median": None}] * 2
    assert main(["compare", "docker-boot-1", "unikraft-boot-1", "process-boot-1", "--db", str(recorded)]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.strip().startswith("boot_time") and " 0 " in x)
    assert re.split(r"\s{2,}", line.strip())[-1] == f"{(5.0 / 10.75 - 1) * 100:+.1f}*"


def test_side_by_side_refuses_a_session_twice_and_exits_1_with_nothing_in_common(recorded: Path, capsys) -> None:
    assert main(["compare", "docker-boot-1", "unikraft-boot-1", "docker-boot-1", "--db", str(recorded)]) == 2
    assert "session docker-boot-1 is named twice" in capsys.readouterr().err
    record_events(recorded, _session("other-1", "x", "process", [(1, 0, 0, "other", "m", 1.0, "s", "lower", "")], T0 + 9000))
    record_events(recorded, _session("other-2", "x", "process", [(1, 0, 0, "other", "n", 1.0, "s", "lower", "")], T0 + 9500))
    assert main(["compare", "other-1", "other-2", "unikraft-boot-1", "--db", str(recorded)]) == 1
    assert "have no benchmark/metric/background in common with the first" in capsys.readouterr().err


def test_side_by_side_gives_every_registered_sample_figure_per_column(recorded: Path, capsys,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A figure registered in labtui.figures.columns (a 95th percentile) is a field of every column, named
    NAME_N in the CSV, as compare A B gives NAME_a and NAME_b."""
    import numpy as np

    from labtui.figures import columns

    p95 = columns.SampleFigure("p95", lambda values: float(np.percentile(values, 95)))
    monkeypatch.setattr(columns, "SAMPLE_FIGURES", (*columns.SAMPLE_FIGURES, p95))
    record_events(recorded, _session("process-boot-1", "boot-scaling", "process", _boot([5.0, 5.2, 4.8], 0, 0), T0 + 9000))
    sessions = ("docker-boot-1", "unikraft-boot-1", "process-boot-1", "--db", str(recorded))
    code, doc = _json(capsys, *sessions)
    assert code == 0
    docker, unikraft, process = _rows(doc)[("boot", "boot_time", "", 0, "s")]["columns"]
    assert docker["p95"] == pytest.approx(np.percentile([v + 10 for v in SLEEP_1], 95))
    assert process["p95"] == pytest.approx(5.18) and process["median"] == pytest.approx(5.0)
    assert main(["compare", *sessions, "--format", "csv"]) == 0
    header = capsys.readouterr().out.splitlines()[0].split(",")
    assert header[-9:] == ["mean_3", "n_3", "std_3", "change_pct_3", "p_value_3", "p_adjusted_3", "significant_3",
                           "median_3", "p95_3"]
