"""The studies' figures as labtui reports them, each recomputed from a real run's raw samples in the store.

- study 000 §4.4.1: the creation-time chart is Tcreate(n) = Tstart(n) - Tend(n-1) (``creation/tcreate_s``);
- study 000 §5.1.2: Δ% and d% are positive when better, also for a lower-is-better time;
- study 004 §5.1, Table 3: weight and cap stay separate points and rows, SMP shares per CPU;
- study 004 §4.4, Fig 7: overall performance is n / max(t_i);
- study 000 §4.3.2.1, §5.2.2: S_n = Σ R_in and D_n = S_n / R_11, each chart labelled with the formula its metric uses;
- docs/suites.md maps each suite to the figures its ``reproduces`` names, and no others.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import os
import re
import tomllib
from pathlib import Path

import cli_run
import numpy as np
import polars as pl
import pytest

from labtui.core.stats.aggregate import aggregate_metric
from labtui.core.units import display_unit
from labtui.engine.concurrent import finish_rate
from labtui.report import charts_for, load_session, write_report
from labtui.report.tables import share_tables, slowdown_tables
from labtui.store import fetch_frame

ROOT = Path(__file__).resolve().parents[2]


def labtui(env: dict[str, str], *args: str) -> str:
    return cli_run.labtui(*args, env=env, timeout=600, check=True).stdout


def frame(db: Path, sql: str, *params: object) -> pl.DataFrame:
    return fetch_frame(db, sql, list(params))


@pytest.fixture(scope="module")
def study_runs(tmp_path_factory) -> dict:
    """Quick runs on the process backend: zone-creation (2 repetitions), zone-worker, fairshare-cpu on two
    CPUs and concurrent-sqlite, each a session in one store."""
    root = tmp_path_factory.mktemp("figures")
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(root / "runtime"), "COLUMNS": "200"}
    db = root / "lab.duckdb"
    runs = {
        "creation": ("zone-creation", "--backend", "process", "--set", "suite.repetitions=2"),
        "worker": ("zone-worker", "--backend", "process"),
        "fairshare": ("fairshare-cpu", "--set", "fairshare.cpus=0-1", "--set", "fairshare.duration_s=1"),
        "concurrent": ("concurrent-sqlite", "--set", 'worker.args=["1000", "/dev/shm"]'),
    }
    sessions = {}
    for name, (suite, *args) in runs.items():
        labtui(env, "run", suite, "--profile", "quick", *args, "--set", "sampling.quiet_timeout_s=0", "--db", str(db))
        sessions[name] = frame(db, "SELECT session_id FROM sessions WHERE suite = ? ORDER BY started_at DESC",
                               suite)["session_id"][0]
    return {"db": db, "env": env, "root": root, **sessions}


def results(db: Path, session_id: str, benchmark: str, metric: str) -> pl.DataFrame:
    return frame(db, "SELECT repetition, step, background, instance_id, value FROM results "
                     "WHERE session_id = ? AND benchmark = ? AND metric = ? ORDER BY repetition, step",
                 session_id, benchmark, metric)


# --- 1. study 000 §4.4.1: the creation-time chart --------------------------------------------------


def test_creation_chart_plots_tcreate_of_section_4_4_1(study_runs) -> None:
    db, sid = study_runs["db"], study_runs["creation"]
    raw = results(db, sid, "creation", "tcreate_s")
    assert raw["repetition"].n_unique() == 2 and sorted(raw["background"].unique()) == [1, 2]
    expected = raw.group_by("background").agg(pl.col("value").mean(), std=pl.col("value").std()).sort("background")
    ready = results(db, sid, "creation", "ready_s").group_by("background").agg(pl.col("value").mean())
    assert ready["value"].to_list() != pytest.approx(expected["value"].to_list(), rel=0.05)  # not each boot

    chart = {c.slug: c for c in charts_for([load_session(db, sid)])}["creation-time"]
    ax = chart.figure.axes[0]
    shown, factor = display_unit("s")
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == [1, 2]
    assert list(line.get_ydata()) == pytest.approx((expected["value"] / factor).to_list())
    assert ax.get_ylabel() == f"Tcreate(n) ({shown})" and "Tstart(n) - Tend(n-1)" in chart.title
    band = ax.collections[0].get_paths()[0].vertices[:, 1]  # the ± 1 std band reaches mean + std
    assert max(band) == pytest.approx(((expected["value"] + expected["std"]) / factor).max())

    table = next(t for t in slowdown_tables(load_session(db, sid)) if t.caption.startswith("creation: tcreate_s"))
    means = [float(row[1]) for row in table.rows]
    assert means == pytest.approx((expected["value"] / factor).to_list(), rel=1e-3)


# --- 2. study 000 §5.1.2: Δ% and d%, positive is better ---------------------------------------------


def _line(points: pl.DataFrame) -> tuple[float, float]:
    slope, intercept = np.polyfit(points["background"].to_numpy(), points["value"].to_numpy(), 1)
    return float(slope), float(intercept)


def test_trend_reads_a_time_so_that_positive_is_better(study_runs) -> None:
    db = study_runs["db"]
    base = results(db, study_runs["creation"], "proc", "fork_us").filter(pl.col("background").is_not_null())
    tested = results(db, study_runs["worker"], "proc", "fork_us")
    (a0, b0), (a, b) = _line(base), _line(tested)
    xs = sorted(tested["background"].unique().to_list())
    # Table 5-2: Δ% = a·x_max / b, d% = mean distance from the baseline's line over b0; a time turns both signs
    delta = -(a * xs[-1] / b) * 100
    distance = -np.mean([(a * x + b) - (a0 * x + b0) for x in xs]) / b0 * 100

    out = labtui(study_runs["env"], "trend", study_runs["worker"], "--baseline", study_runs["creation"], "--metric", "fork_us",
                 "--format", "csv", "--db", str(db))
    rows = {r["role"]: r for r in csv.DictReader(io.StringIO(out))}
    row = rows["tested"]
    assert (row["better"], row["sign"]) == ("lower", "turned")
    assert float(row["delta_pct"]) == pytest.approx(delta, rel=1e-6)
    assert float(row["d_pct"]) == pytest.approx(distance, rel=1e-6)
    faster = np.mean([a * x + b for x in xs]) < np.mean([a0 * x + b0 for x in xs])
    assert (float(row["d_pct"]) > 0) == faster  # the zone's fork is faster: it is better than the global zone
    assert rows["baseline"]["d_pct"] == "0.0"  # the baseline against itself, with its sign turned: never "-0.0"

    table = labtui(study_runs["env"], "trend", study_runs["worker"], "--baseline", study_runs["creation"], "--metric", "fork_us",
                   "--db", str(db))
    assert f"{distance:+.2f}" in table and "turned" in table and "lower-is-better metric" in table


# --- 3. study 004 §5.1, Table 3: weight and cap apart, SMP shares per CPU ----------------------------


def test_table_3_keeps_weight_and_cap_apart_and_states_smp_shares_per_cpu(study_runs) -> None:
    db, sid = study_runs["db"], study_runs["fairshare"]
    achieved = results(db, sid, "fairshare", "achieved_share")
    requested = results(db, sid, "fairshare", "requested_share")
    raw = achieved.join(requested, on=["repetition", "step", "instance_id"], suffix="_requested")
    cpus = 2  # fairshare.cpus = 0-1: the paper's SMP column, 200% in all
    points = (raw.group_by(["step", "value_requested"]).agg(pl.col("value").mean())  # 8 instances: 1 reserved, 7 not
              .with_columns(pl.col("value") * 100 * cpus, pl.col("value_requested") * 100 * cpus))
    names = {0: "equal", 1: "weight", 2: "cap"}

    session = load_session(db, sid)
    chart = {c.slug: c for c in charts_for([session])}["cpu-share"]
    ax = chart.figure.axes[0]
    series = {c.get_label().split(" ")[0]: c for c in ax.containers}
    assert set(series) == {"equal", "weight", "cap"}
    for step, name in names.items():
        mine = points.filter(pl.col("step") == step).sort("value_requested", descending=True)
        xs, ys = series[name].lines[0].get_data()
        assert list(xs) == pytest.approx(mine["value_requested"].to_list())
        assert list(ys) == pytest.approx(mine["value"].to_list())
    # one quarter of the set of two CPUs is 50% of one CPU, requested by weight and by cap: two points
    assert any(x == pytest.approx(50.0) for x in series["weight"].lines[0].get_xdata())
    assert any(x == pytest.approx(50.0) for x in series["cap"].lines[0].get_xdata())

    (table,) = share_tables(session)
    assert "% of one CPU" in table.caption and "200%" in table.caption
    reserved = [row for row in table.rows if row[1] == "reserved"]
    assert [row[0] for row in reserved] == ["weight", "cap"] and [float(row[2]) for row in reserved] == [50.0, 50.0]
    for row in reserved:
        step = 1 if row[0] == "weight" else 2
        want = points.filter((pl.col("step") == step) & (pl.col("value_requested").round(6) == 50.0))["value"][0]
        assert float(row[3]) == pytest.approx(want, rel=1e-3)


# --- 4. study 004 §4.4, Fig 7: overall performance n / max(t_i) --------------------------------------


def test_fig_7_overall_performance_is_n_over_the_last_finish(study_runs) -> None:
    db, sid = study_runs["db"], study_runs["concurrent"]
    times = results(db, sid, "sqlite", "inserts_1000_s")
    recorded = results(db, sid, "sqlite", "inserts_1000_s_finish_rate")
    assert sorted(recorded["background"].to_list()) == [1, 2, 4]
    for r in recorded.iter_rows(named=True):
        mine = times.filter((pl.col("repetition") == r["repetition"]) & (pl.col("step") == r["step"]))["value"]
        assert len(mine) == r["background"]
        assert r["value"] == pytest.approx(len(mine) / mine.max())
    assert finish_rate([1.0, 1.0, 1.0, 1.1], "s") == pytest.approx(4 / 1.1) != sum(1 / t for t in (1, 1, 1, 1.1))

    charts = {c.slug: c for c in charts_for([load_session(db, sid)])}
    fig7 = charts["sqlite-inserts_1000_s_finish_rate"]
    assert "overall performance of inserts_1000_s" in fig7.title
    assert fig7.figure.axes[0].get_title().startswith("n / max t_in per second, t_in = inserts_1000_s")
    line = fig7.figure.axes[0].get_lines()[0]
    by_n = recorded.group_by("background").agg(pl.col("value").mean()).sort("background")
    assert list(line.get_ydata()) == pytest.approx(by_n["value"].to_list())
    # the sum of 1/t_i is S_n of the rate each time implies, not a sum of the times
    rate_sum = charts["sqlite-inserts_1000_s_rate_sum"].figure.axes[0].get_title()
    assert rate_sum.startswith("S_n = Σ 1/t_in per second, t_in = inserts_1000_s of instance i")


def test_reports_of_the_runs_write(study_runs) -> None:
    written = write_report(study_runs["db"], [study_runs["fairshare"]], study_runs["root"] / "report", "html")
    assert "% of one CPU" in written[0].read_text()


# --- 4b. study 000 §4.3.2.1: S_n = Σ R_in, labelled with the formula its metric uses -----------------------


@pytest.fixture(scope="module")
def zones(tmp_path_factory) -> dict:
    """zone-concurrent's quick profile on the process backend twice: with its arithmetic probe (a rate, int_mops)
    and with the fork probe (a time, fork_us), the two kinds of R_in the aggregate is taken of."""
    root = tmp_path_factory.mktemp("zones")
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(root / "runtime"), "COLUMNS": "200"}
    db = root / "lab.duckdb"
    sessions = {}
    for name, args in (("rate", ()), ("time", ("--set", "worker.program=proc", "--set", 'worker.args=["fork", "1"]'))):
        labtui(env, "run", "zone-concurrent", "--profile", "quick", "--backend", "process", *args,
               "--set", "sampling.quiet_timeout_s=0", "--db", str(db))
        sessions[name] = frame(db, "SELECT session_id FROM sessions ORDER BY started_at DESC")["session_id"][0]
    return {"db": db, **sessions}


@pytest.mark.parametrize(("kind", "bench", "metric", "unit", "formula"), [
    ("rate", "arith", "int_mops", "Mops/s", "S_n = Σ R_in, R_in = int_mops of instance i"),
    ("time", "proc", "fork_us", "us", "S_n = Σ 1/t_in per second, t_in = fork_us of instance i"),
])
def test_zone_concurrent_chart_names_the_formula_of_its_metric(zones, kind, bench, metric, unit, formula) -> None:
    db, sid = zones["db"], zones[kind]
    raw = results(db, sid, bench, metric)
    per_step = raw.group_by(["repetition", "background"]).agg(
        n=pl.len(), s=pl.col("value").sum() if kind == "rate" else (1 / (pl.col("value") * 1e-6)).sum())
    assert (per_step["n"] == per_step["background"]).all()  # R_in of every instance i = 1..n of step n
    s_n = per_step.group_by("background").agg(pl.col("s").mean()).sort("background")
    assert s_n["background"].to_list() == [1, 2]

    aggregate = aggregate_metric(metric, unit, "higher" if kind == "rate" else "lower", [1.0])
    assert aggregate is not None and aggregate.how == ("sum" if kind == "rate" else "rate_sum")
    chart = {c.slug: c for c in charts_for([load_session(db, sid)])}[f"{bench}-{aggregate.metric}"]
    absolute, normalized, *_ = chart.figure.axes
    title = absolute.get_title()
    assert title.startswith(formula) and "study 000 §4.3.2.1" in title
    assert ("1/t" in title) == (kind == "time")  # a rate is summed as it is, a time as its rate 1/t
    assert chart.title == f"{bench}: S_n of {'1/' if kind == 'time' else ''}{metric} (higher is better)"
    shown, factor = display_unit(aggregate.unit)
    line = absolute.get_lines()[0]
    assert list(line.get_xdata()) == [1, 2] and absolute.get_xlabel() == "concurrent instances n"
    assert list(line.get_ydata()) == pytest.approx((s_n["s"] / factor).to_list())
    # study 000 §5.2.2: D_n = S_n / R_11, R_11 the one zone's result at n = 1
    assert normalized.get_title().startswith("D_n = S_n / R_11")
    assert list(normalized.get_lines()[0].get_ydata()) == pytest.approx((s_n["s"] / s_n["s"][0]).to_list())


# --- 5. docs/suites.md's mapping of suites to the studies' figures ------------------------------------

_REF = re.compile(r"\b(Fig(?:ure)?s?\.?|Tables?)\s+((?:[0-9][0-9a-z.\-]*(?:,\s*|\s+to\s+|\s+and\s+)?)+)")
_NUMBER = re.compile(r"([0-9]+)(?:([.\-])([0-9]+)([a-z]?))?")


def refs(text: str) -> set[tuple[str, str]]:
    """("fig" or "table", number) for every figure and table text names, ranges ("5.1 to 5.8") expanded."""
    found = set()
    for word, numbers in _REF.findall(text):
        kind = "table" if word.lower().startswith("table") else "fig"
        parts = re.split(r",\s*|\s+and\s+", re.sub(r"(,|\s+and|\s+to)?\s*$", "", numbers))
        for part in parts:
            low, _, high = part.partition(" to ")
            first, last = _NUMBER.fullmatch(low.strip()), _NUMBER.fullmatch(high.strip()) if high else None
            assert first, f"cannot read figure number {part!r} in {text!r}"
            if last and first.group(3) and last.group(3) and not first.group(4):
                sep = first.group(2)
                found |= {(kind, f"{first.group(1)}{sep}{n}")
                          for n in range(int(first.group(3)), int(last.group(3)) + 1)}
            elif last and first.group(4):
                found |= {(kind, f"{first.group(1)}{first.group(2)}{first.group(3)}{chr(c)}")
                          for c in range(ord(first.group(4)), ord(last.group(4)) + 1)}
            else:
                found.add((kind, low.strip()))
    if "UnixBench table" in text:  # study 003 has one table, named for its benchmark
        found.add(("table", "UnixBench"))
    return found


def reproduces() -> dict[str, set[tuple[str, str, str]]]:
    """Per built-in suite: (study, kind, number) of every figure and table its ``reproduces`` names."""
    claims = {}
    for path in sorted((ROOT / "suites").glob("*.toml")):
        suite = tomllib.loads(path.read_text())["suite"]
        mine = set()
        for part in suite.get("reproduces", "").split(";"):
            study = re.search(r"study (\d{3})", part)
            assert study, f"{path.name}: reproduces part {part!r} names no study"
            mine |= {(study.group(1), kind, n) for kind, n in refs(part)}
        claims[suite["name"]] = mine
    return claims


def mapping() -> dict[str, set[tuple[str, str, str]]]:
    """Per suite: (study, kind, number) docs/suites.md's figure table maps it to."""
    text = (ROOT / "docs" / "suites.md").read_text()
    table = text.split("## The studies' figures and tables, suite by suite", 1)[1].split("\n## ", 1)[0]
    names = reproduces().keys()
    mapped: dict[str, set[tuple[str, str, str]]] = {}
    study = ""
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.match(r"\d{3}", cells[0]):
            continue
        study = cells[0][:3]
        suites = {n for pattern in re.findall(r"`([a-z0-9*-]+)`", cells[2]) for n in fnmatch.filter(names, pattern)}
        for name in suites:
            mapped.setdefault(name, set()).update((study, kind, n) for kind, n in refs(cells[1]))
    return mapped


def test_docs_map_each_suite_to_the_figures_its_reproduces_names() -> None:
    claims, mapped = reproduces(), mapping()
    assert refs("Figures 5.1 to 5.3, 5-4 and Table 3") == {("fig", "5.1"), ("fig", "5.2"), ("fig", "5.3"),
                                                           ("fig", "5-4"), ("table", "3")}
    for name, claimed in claims.items():
        assert claimed, f"suites/{name}.toml: reproduces names no figure or table"
        missing = claimed - mapped.get(name, set())
        assert not missing, f"docs/suites.md does not map {name} to {sorted(missing)} (its reproduces)"
        extra = mapped.get(name, set()) - claimed
        assert not extra, f"docs/suites.md maps {name} to {sorted(extra)}, which its reproduces does not name"


# --- 6. the Xen suites that need guests, on a backend without them --------------------------------------

@pytest.mark.parametrize(("suite", "twin"), [("xen-domu", "zone-worker"), ("xen-concurrent", "zone-concurrent")])
def test_xen_suites_that_boot_guests_are_refused_before_anything_and_name_the_suite_for_here(tmp_path, suite,
                                                                                            twin) -> None:
    """The process backend runs no images: refused in one line of 80 columns, before a store or a session."""
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "80"}
    proc = cli_run.labtui("run", suite, "--backend", "process", "--db", str(tmp_path / "lab.duckdb"), env=env, timeout=300)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == f"labtui run: backend process cannot run image 'guest'; run {twin} instead\n"
    assert list(tmp_path.iterdir()) == []  # no store, journal or lock file (nor the runtime directory)


def test_xen_fairshare_that_needs_cpu_times_names_the_suite_that_does_the_same_here(tmp_path) -> None:
    """No capability says whether a backend lists CPU times: the first reading finds it."""
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "400"}
    proc = cli_run.labtui("run", "xen-fairshare", "--profile", "quick", "--backend", "process", "--set",
                          "fairshare.duration_s=1", "--db", str(tmp_path / "lab.duckdb"), env=env)
    assert proc.returncode != 0
    (line,) = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("failed:")]
    assert 'fairshare.measure = "cpu_time" needs it' in line and "labtui run fairshare-cpu --backend process" in line
