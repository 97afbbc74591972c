"""`labtui report` and `labtui export` on sessions recorded by real runs (process backend)."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

import duckdb
import polars as pl
import pytest
from cli_run import labtui
from matplotlib.image import imread

from labtui.core.events import (
    HostFacts,
    InstanceCreating,
    InstanceReady,
    Log,
    ResourceSample,
    Result,
    SessionEnded,
    SessionStarted,
    StepEnded,
    StepStarted,
)
from labtui.report import SESSION_TABLES, charts_for, load_session, write_report
from labtui.report.alerts import session_warnings
from labtui.report.data import distinct_labels, with_placement
from labtui.report.resources import availability
from labtui.store import record_events

SMALL = ["--set", "scale.steps=3", "--set", "scale.per_step=5", "--set", "suite.repetitions=2"]
T0 = 1_700_000_000.0


def ok(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def query(db: Path, sql: str, *params) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """A store with two boot-scaling sessions and one memory-scaling session, run for real."""
    root = tmp_path_factory.mktemp("report")
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(root / "runtime"), "COLUMNS": "200"}
    db = root / "lab.duckdb"
    for suite in ("boot-scaling", "boot-scaling", "memory-scaling"):
        ok(labtui("run", suite, *SMALL, "--db", str(db), env=env))
    rows = query(db, "SELECT suite, session_id FROM sessions ORDER BY started_at")
    return {
        "db": db, "env": env, "root": root,
        "boot": [sid for suite, sid in rows if suite == "boot-scaling"],
        "memory": [sid for suite, sid in rows if suite == "memory-scaling"][0],
    }


def html_text(path: Path) -> str:
    return re.sub(r"base64,[A-Za-z0-9+/=]+", "base64,", path.read_text(encoding="utf-8"))


def test_html_report_is_true_to_the_store(runs, tmp_path):
    sid = runs["boot"][0]
    out = tmp_path / "html"
    printed = ok(labtui("report", sid[:17], "--out", str(out), "--db", str(runs["db"]), env=runs["env"]))  # a prefix
    page = out / "report.html"
    assert printed.strip() == str(page)
    text = html_text(page)
    assert sid in text
    assert "boot: boot_time (lower is better)" in text
    assert text.count("data:image/png;base64,") == 1  # self-contained: the figure, resources beside it, is inline
    # the hosts' facts as gathered
    (kernel, cpu, cores, version), = query(
        runs["db"], "SELECT kernel, cpu_model, cores, backend_version FROM hosts WHERE session_id = ?", sid)
    for fact in (kernel, cpu, f"<td>{cores}</td>", version):
        assert str(fact) in text
    # the slowdown table at background 10, straight from the results, in ms: the mean over repetitions
    # of each repetition's median boot (worker.runs boots one after another)
    per_repetition = ("SELECT median(value) AS v FROM results WHERE session_id = ? AND metric = 'boot_time' "
                      "AND background = {} GROUP BY repetition")
    (mean, std, n), = query(runs["db"], f"SELECT avg(v), stddev_samp(v), count(*) FROM ({per_repetition.format(10)})", sid)
    (median, median0), = query(runs["db"], f"SELECT (SELECT median(v) FROM ({per_repetition.format(10)})), "
                                           f"(SELECT median(v) FROM ({per_repetition.format(0)}))", sid, sid)
    assert f"<tr><td>10</td><td>{mean * 1e3:#.4g}</td>" in text  # ms, 4 significant digits
    assert f"<td>{std * 1e3:#.4g}</td><td>{n}</td>" in text
    # the slowdown of the repetitions' medians, with its interval (issue 41), under the metric's verdict
    assert f"<td>{(median / median0 - 1) * 100:+.1f} (" in text
    assert re.search(r'<p class="verdict">boot_time( grows| shrinks|: no trend)[^<]*</p><table><caption>boot: boot_time',
                     text)
    # the suite and its overrides
    assert "<code>scale.per_step=5</code>" in text and "&quot;per_step&quot;: 5" in text


def test_png_and_svg_figures_decode(runs, tmp_path):
    sid = runs["memory"]
    for fmt in ("png", "svg"):
        out = tmp_path / fmt
        printed = ok(labtui("report", sid, "--format", fmt, "--out", str(out), "--db", str(runs["db"]), env=runs["env"]))
        files = sorted(out.iterdir())
        assert [str(f) for f in files] == sorted(printed.split())
        names = {f.stem for f in files}
        assert {"memory-host_mem_used", "memory-mem_per_instance"} <= names and "resources" not in names
        for f in files:
            if fmt == "png":
                image = imread(f)
                height, width = image.shape[:2]
                assert 400 <= width <= 2000 and 300 <= height <= 1000, (f, image.shape)
            else:
                head = f.read_text(encoding="utf-8")
                assert head.lstrip().startswith("<?xml") and "<svg" in head and " is better)</text>" in head


def test_overlay_of_two_sessions_of_one_suite(runs, tmp_path):
    first, second = runs["boot"]
    sessions = [load_session(runs["db"], first), load_session(runs["db"], second)]
    written = write_report(runs["db"], [first, second], tmp_path, "png")
    assert {p.name for p in written} == {"boot-boot_time.png"}
    charts = {c.slug: c for c in charts_for(sessions)}
    absolute, normalized, *beside = charts["boot-boot_time"].figure.axes
    panels = [ax.get_title().partition(": system resource")[0] for ax in beside]
    assert panels == [s.label for s in distinct_labels(sessions)]  # one resource panel per session
    # one line per session on each panel, each true to that session's slowdown view
    for ax, column in ((absolute, "mean"), (normalized, "normalized")):
        lines = [line for line in ax.get_lines() if len(line.get_xdata()) > 2]
        assert len(lines) == 2
        for line, session in zip(lines, sessions):
            expected = session.scaling().sort("background")[column].to_numpy()
            scale = 1e3 if column == "mean" else 1.0  # boot times are drawn in ms
            assert list(line.get_ydata()) == pytest.approx(list(expected * scale))
    labels = [t.get_text() for t in absolute.get_legend().get_texts()]
    assert len(set(labels)) == 2 and all(t.startswith("boot-scaling · process") for t in labels)
    ok(labtui("report", first, second, "--out", str(tmp_path / "h"), "--db", str(runs["db"]), env=runs["env"]))
    text = html_text(tmp_path / "h" / "report.html")
    assert first in text and second in text


def _availability_by_background(db: Path, sid: str) -> dict[str, dict[int, float]]:
    """Per resource (cpu, mem, swap): the mean of the raw samples taken while a step of each background ran."""
    steps = query(db, "SELECT background, started_at, ended_at FROM steps WHERE session_id = ?", sid)
    samples = query(db, "SELECT ts, cpu_avail, mem_avail, swap_avail FROM resources WHERE session_id = ?", sid)
    found: dict[str, dict[int, list[float]]] = {"cpu": {}, "mem": {}, "swap": {}}
    for background, start, end in steps:
        for ts, *values in samples:
            if start <= ts <= end:
                for name, value in zip(("cpu", "mem", "swap"), values):
                    if value is not None:
                        found[name].setdefault(background, []).append(value)
    return {name: {b: sum(v) / len(v) for b, v in by.items()} for name, by in found.items()}


def test_resources_are_drawn_beside_the_curve_they_explain_normalized(runs):
    """Study 001 Figs 4.2, 4.5, 4.7, 4.9 (§4.2.1 to §4.4): per platform, the benchmark's figure normalized to its
    first run and the CPU, RAM and swap availability as fractions of the host, in one panel against the background
    instances, beside the curve (the same figure, one x axis)."""
    db, sid = runs["db"], runs["boot"][0]
    chart = {c.slug: c for c in charts_for([load_session(db, sid)])}["boot-boot_time"]
    absolute, normalized, beside = chart.figure.axes
    assert beside.get_shared_x_axes().joined(beside, absolute) and beside.get_xlim() == absolute.get_xlim()
    assert beside.get_title().startswith("boot-scaling · process: system resource availability (normalized)")
    lines = {line.get_label(): line for line in beside.get_lines()}
    # the curve: each repetition's median boot, their mean by background, over the first background's
    by_rep = query(db, "SELECT background, repetition, median(value) FROM results WHERE session_id = ? "
                       "AND metric = 'boot_time' GROUP BY background, repetition", sid)
    means = {b: sum(v for bb, _, v in by_rep if bb == b) / sum(1 for bb, _, _ in by_rep if bb == b)
             for b in sorted({b for b, _, _ in by_rep})}
    first = means[min(means)]
    curve = lines["boot_time (normalized)"]
    assert list(curve.get_xdata()) == sorted(means)
    assert list(curve.get_ydata()) == pytest.approx([means[b] / first for b in sorted(means)])
    # the availabilities: the raw samples of each step's window, in fractions of the host (not %)
    raw = _availability_by_background(db, sid)
    assert len(raw["cpu"]) > 1
    for name, column in (("CPU", "cpu"), ("RAM", "mem"), ("swap", "swap")):
        if not raw[column]:
            assert f"{name} availability" not in lines and "no swap" in beside.get_title()
            continue
        line = lines[f"{name} availability"]
        # a step whose window holds only readings without a value (the first CPU sample has nothing to diff
        # against) is no point on the chart, as it is none in the raw recompute
        plotted = dict(zip(line.get_xdata(), line.get_ydata()))
        assert sorted(plotted) == sorted(raw[column]) and len(plotted) >= 2
        assert [plotted[b] for b in sorted(plotted)] == pytest.approx([raw[column][b] for b in sorted(plotted)])
        assert all(0.0 <= y <= 1.0 for y in line.get_ydata())
    assert beside.get_ylim()[1] == pytest.approx(max(1.0, max(curve.get_ydata())) * 1.1)


def test_a_step_with_no_cpu_reading_is_no_point_on_the_resource_chart(runs):
    """The first CPU sample has nothing to diff against, so a step whose window holds only it has no CPU mean: the
    chart leaves that background out rather than draw a NaN point (CI drew one, outside 0..1)."""
    session = load_session(runs["db"], runs["boot"][0])
    first = session.resources["background"].min()
    blank = session.resources.with_columns(
        cpu=pl.when(pl.col("background") == first).then(None).otherwise(pl.col("cpu")))
    drawn = {name: frame for name, _, frame in availability(dataclasses.replace(session, resources=blank))}
    assert first not in drawn["CPU"]["background"].to_list() and not drawn["CPU"]["mean"].is_nan().any()
    assert first in drawn["RAM"]["background"].to_list()


def test_export_round_trip(runs, tmp_path):
    sid = runs["boot"][1]
    for fmt, read in (("parquet", pl.read_parquet), ("csv", pl.read_csv)):
        out = tmp_path / fmt
        ok(labtui("export", sid, "--format", fmt, "--out", str(out), "--db", str(runs["db"]), env=runs["env"]))
        for table in SESSION_TABLES:
            frame = read(out / f"{table}.{fmt}")
            (count,), = query(runs["db"], f"SELECT count(*) FROM {table} WHERE session_id = ?", sid)
            assert len(frame) == count, table
            if count:
                assert set(frame["session_id"].to_list()) == {sid}
    results = pl.read_parquet(tmp_path / "parquet" / "results.parquet")
    assert results["value"].sum() == pytest.approx(
        query(runs["db"], "SELECT sum(value) FROM results WHERE session_id = ?", sid)[0][0])
    assert len(pl.read_parquet(tmp_path / "parquet" / "steps.parquet")) == 8


def test_unknown_session_lists_candidates(runs, tmp_path):
    for command in (["report", "nosuchsession"], ["export", "nosuchsession", "--format", "csv"]):
        proc = labtui(*command, "--out", str(tmp_path / "x"), "--db", str(runs["db"]), env=runs["env"])
        assert proc.returncode == 2
        assert "no session id starts with 'nosuchsession'" in proc.stderr
        for sid in (*runs["boot"], runs["memory"]):
            assert sid in proc.stderr
    assert not (tmp_path / "x").exists()


def test_isolation_session_bars_and_table(tmp_path):
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime")}
    db = tmp_path / "iso.duckdb"
    ok(labtui("run", "isolation-cpu", "--set", "suite.repetitions=2", "--set", 'worker.args=["2000", "/dev/shm"]',
              "--db", str(db), env=env))
    (sid,), = query(db, "SELECT session_id FROM sessions")
    ok(labtui("report", sid, "--format", "png", "--out", str(tmp_path / "png"), "--db", str(db), env=env))
    assert [p.name for p in (tmp_path / "png").iterdir()] == ["isolation-sqlite-inserts_2000_s.png"]
    chart, = charts_for([load_session(db, sid)])
    absolute = chart.figure.axes[0]
    ticks = [t.get_text() for t in absolute.get_xticklabels()]
    placements = [p for (p,) in query(db, "SELECT DISTINCT placement FROM results ORDER BY step")]
    names = {"alone": "single run", "same-thread": "same thread", "sibling-thread": "same core",
             "other-core": "other core", "all-other-cores": "all cores"}
    assert ticks == [names[p] for p in placements] and ticks[0] == "single run"
    means = [query(db, "SELECT avg(value) FROM results WHERE placement = ?", p)[0][0] for p in placements]
    assert [bar.get_height() for bar in absolute.patches] == pytest.approx([m * 1e3 for m in means])  # ms
    ok(labtui("report", sid, "--out", str(tmp_path / "html"), "--db", str(db), env=env))
    text = html_text(tmp_path / "html" / "report.html")
    assert "against attacker attack-cpu (lower is better)" in text
    # Table 5.1: the same-thread slowdown from the raw results
    slowdown = (means[placements.index("same-thread")] / means[0] - 1) * 100
    cell = re.search(r"<tr><td>same thread</td><td>([^<]+)</td>", text)
    assert cell, "no same-thread row in Table 5.1"
    assert float(cell[1]) == pytest.approx(means[placements.index("same-thread")] * 1e3, rel=5e-4)  # 4 digits
    # two repetitions a placement: the median slowdown is the means' (issue 41), with its interval, then the flags
    assert re.search(rf"<td>{re.escape(f'{slowdown:+.1f}')} \([+-]\d+ to [+-]\d+\)</td><td>", text)


def started(sid: str, kind: str, status: str = "completed") -> list:
    return [
        SessionStarted(sid, f"{kind}-suite", kind, "process", "local", {"overrides": []}, os.getpid(), ts=T0),
        HostFacts(sid, "local", "Linux", "6.1", "x86_64", "cpu", 2, 2**31, "process", "1", "pidns", ts=T0),
    ]


def test_creation_and_fairshare_figures(tmp_path):
    """Kinds the engine does not run yet, recorded through the store writer."""
    db = tmp_path / "lab.duckdb"
    events = started("create1", "creation")
    boots = {1: [0.10, 0.12, 0.15], 2: [0.11, 0.14, 0.16]}
    for rep, values in boots.items():
        t = T0 + rep * 100
        events.append(StepStarted("create1", rep, 0, 1, 0, ts=t))
        for n, boot in enumerate(values, 1):
            iid = f"z{rep}-{n}"
            events += [InstanceCreating("create1", iid, "local", "process", "zone", iid, ts=t + n),
                       InstanceReady("create1", iid, t + n, t + n + 0.001, 0.001, "running", ts=t + n + boot),
                       Result("create1", rep, n, n, "local", iid, "creation", "tcreate_s", boot, "s", "lower",
                              ts=t + n + boot)]  # the chart is Tcreate(n), not each instance's boot_s
        events.append(StepEnded("create1", rep, 0, 0, ts=t + 10))
    events.append(SessionEnded("create1", "completed", ts=T0 + 300))
    events += started("share1", "fairshare")
    for requested, achieved in ((25.0, (24.0, 26.0)), (50.0, (40.0, 44.0))):
        for i, got in enumerate(achieved):
            iid = f"w{requested:.0f}-{i}"
            events += [Result("share1", 1, 0, 2, "local", iid, "fairshare", "requested_share", requested, "%", "higher", ts=T0),
                       Result("share1", 1, 0, 2, "local", iid, "fairshare", "achieved_share", got, "%", "higher", ts=T0)]
    events.append(SessionEnded("share1", "completed", ts=T0 + 10))
    record_events(db, events)

    charts = {c.slug: c for c in charts_for([load_session(db, "create1")])}
    line = charts["creation-time"].figure.axes[0].get_lines()[0]
    assert list(line.get_xdata()) == [1, 2, 3]
    assert list(line.get_ydata()) == pytest.approx([105.0, 130.0, 155.0])  # mean of both repetitions, ms

    charts = {c.slug: c for c in charts_for([load_session(db, "share1")])}
    ax = charts["cpu-share"].figure.axes[0]
    points = ax.get_lines()[0]
    # in % of one CPU: the set is the host's 2 CPUs (no fairshare.cpus), so each share counts twice
    assert list(points.get_xdata()) == [100.0, 50.0] and list(points.get_ydata()) == pytest.approx([84.0, 50.0])
    assert ax.get_xlabel() == "requested CPU share (% of one CPU)"
    written = write_report(db, ["share1"], tmp_path / "share", "png")
    assert imread(written[0]).shape[1] > 400


def test_warnings_name_what_went_wrong(tmp_path):
    db = tmp_path / "lab.duckdb"
    sid = "bad1"
    events = started(sid, "scaling")
    events += [
        StepStarted(sid, 1, 0, 2, 0, ts=T0 + 1), StepEnded(sid, 1, 0, 0, ok=True, ts=T0 + 2),
        StepStarted(sid, 1, 1, 2, 10, ts=T0 + 3), StepEnded(sid, 1, 1, 10, ok=False, ts=T0 + 4),
        ResourceSample("local", 0.5, 0.4, 0.75, 2**30, 1.0, ts=T0 + 3.5, session_id=sid, instances=10),
        Log(sid, "error", "backend", "create failed: out of memory", ts=T0 + 4),
        SessionEnded(sid, "failed", "step 1 failed", ts=T0 + 5),
    ]
    # two repetitions per level: the spread is across repetitions (the slowdown view's samples)
    events += [Result(sid, rep, 0, 0, "local", "w", "boot", "boot_time", v, "s", "lower", ts=T0 + 1.5)
               for rep, v in ((1, 1.0), (2, 1.5))]
    events += [Result(sid, rep, 1, 10, "local", "w", "boot", "boot_time", v, "s", "lower", ts=T0 + 3.5)
               for rep, v in ((1, 2.0), (2, 2.02))]
    record_events(db, events)
    found = session_warnings(load_session(db, sid))
    assert found[0] == "session status is failed: step 1 failed"
    assert found[1] == "1 failed step(s): repetition 1 step 1 (background 10)"
    assert found[2] == "coefficient of variation above 10% at 1 step(s): boot/boot_time at background 0: 28.3%"
    assert found[3] == "swap in use: swap availability fell to 75.0%"
    assert found[4] == "logged error (backend): create failed: out of memory"
    assert len(found) == 5


def test_placement_read_from_benchmark_when_the_store_has_no_column():
    """A store without results.placement: '<benchmark>@<placement>' is split and renormalized."""
    v1 = pl.DataFrame({
        "session_id": ["s"] * 3, "benchmark": ["sqlite@alone", "sqlite@same-thread", "sqlite@other-core"],
        "metric": ["t"] * 3, "unit": ["s"] * 3, "better": ["lower"] * 3, "background": [0, 1, 1],
        "mean": [2.0, 3.0, 2.2], "std": [0.1, 0.1, 0.1], "n": [2, 2, 2],
        "normalized": [1.0, 1.0, 1.0], "slowdown_pct": [0.0, 0.0, 0.0],
    })
    frame = with_placement(v1)
    assert frame["benchmark"].to_list() == ["sqlite"] * 3
    assert frame["placement"].to_list() == ["alone", "same-thread", "other-core"]
    assert frame["normalized"].to_list() == pytest.approx([1.0, 1.5, 1.1])
    assert frame["slowdown_pct"].to_list() == pytest.approx([0.0, 50.0, 10.0])
