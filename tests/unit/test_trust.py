"""How far to trust a figure (issue 23, part 3): n, median, interval and CoV beside every mean, and
warnings for a wide spread, outliers (modified Z-score > 10, hyperfine's threshold) and two modes,
in the CLI's run table and in reports."""

from __future__ import annotations

import io
import statistics
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from labtui.commands.printing import render_summary
from labtui.core.events import Result, SessionEnded, SessionStarted, StepEnded, StepStarted
from labtui.core.stats.trust import BIMODAL_MIN, OUTLIER_Z, SINGLE, modes, modified_z_scores, outliers, trust
from labtui.core.units import number, share_pct
from labtui.figures.table import repetition_samples, session_figures, with_trust
from labtui.report.alerts import session_warnings
from labtui.report.data import load_session
from labtui.report.tables import slowdown_tables
from labtui.store import StoreWriter, fetch_frame, slowdown_frame
from labtui.ui.model.live import RESULT_COLUMNS, RunModel
from labtui.ui.model.pane_text import slowdown_cells, slowdown_headers
from labtui.ui.model.series import slowdown_rows, trusted_slowdown


def test_modified_z_scores_by_hand() -> None:
    values = [10.0, 11.0, 12.0, 13.0, 40.0]  # median 12, |x - 12| = 2 1 0 1 28, MAD 1
    assert modified_z_scores(values) == pytest.approx([0.6745 * d for d in (-2, -1, 0, 1, 28)])
    assert outliers(values) == [40.0]
    assert outliers([10.0, 11.0, 12.0, 13.0, 14.0]) == []


def test_modified_z_scores_when_most_values_are_equal() -> None:
    values = [5.0] * 14 + [9.0]  # MAD 0: (x - median) / (1.253314 * mean |x - median|)
    assert modified_z_scores(values)[-1] == pytest.approx(4.0 / (1.253314 * 4.0 / 15))
    assert outliers(values) == [9.0]
    assert outliers(values[-5:]) == []  # 4.0 / (1.253314 * 0.8) = 3.99: not above OUTLIER_Z
    assert modified_z_scores([3.0, 3.0, 3.0]) == [0.0, 0.0, 0.0] and outliers([3.0] * 4) == []


#: hyperfine's own cases (src/outlier_detection.rs, test_detect_outliers) and how many outliers it finds.
HYPERFINE_NORMAL = [2.33269488, 1.42195907, -0.57527698, -0.31293437, 2.2948158, 0.75813273, -1.0712388,
                    -0.96394741, -1.15897446, 1.10976285]


@pytest.mark.parametrize("values, found", [
    ([-0.2, 0.0, 0.2], 0),
    ([-0.2, 0.0, 0.2, 4.0], 1),
    ([0.5, 0.30, 0.29, 0.31, 0.30], 1),
    (HYPERFINE_NORMAL, 0),
    (HYPERFINE_NORMAL + [20.0, -500.0], 2),
    ([1.00, 1.03, 0.97, 1.00, 1.20], 0),  # 0.2 / MAD 0.03 = 6.7 raw, under hyperfine's 14.826 (3.5 flagged it)
])
def test_outliers_are_those_hyperfine_counts(values: list[float], found: int) -> None:
    assert len(outliers(values)) == found


def test_the_boot_pattern_of_issue_23_is_bimodal() -> None:
    """Boot times either about 1 ms or 8 to 25 ms: two modes, which mean and std hide."""
    values = [0.001, 0.0011, 0.012, 0.0009, 0.02, 0.001, 0.008, 0.025, 0.001, 0.0012]
    low, high = modes(values)
    assert low == pytest.approx(statistics.median([0.001, 0.0011, 0.0009, 0.001, 0.001, 0.0012]))
    assert high == pytest.approx(statistics.median([0.012, 0.02, 0.008, 0.025]))
    assert "bimodal" in trust(values).flags()


@pytest.mark.parametrize("draw", [
    lambda rng, n: rng.normal(10.0, 1.0, n),
    lambda rng, n: rng.lognormal(0.0, 0.5, n),  # skewed, one mode
    lambda rng, n: rng.uniform(1.0, 2.0, n),
])
def test_one_mode_is_seldom_called_two(draw) -> None:
    rng = np.random.default_rng(23)
    calls = sum(modes(list(draw(rng, 10))) is not None for _ in range(400))
    assert calls <= 0.05 * 400  # fixed seed: 0 to 4% here (uniform, flattest, the most)


def test_no_bimodality_verdict_on_few_values() -> None:
    half = BIMODAL_MIN // 2
    assert modes([1.0] * half + [9.0] * (half - 1)) is None
    assert modes([1.0] * half + [9.0] * half) == (1.0, 9.0)


def test_trust_of_steady_and_noisy_samples() -> None:
    steady = trust([1.00, 1.01, 0.99, 1.00, 1.02])
    assert steady.flags() == [] and steady.summary.n == 5 and steady.ci is not None
    assert steady.ci.contains(steady.summary.mean)
    noisy = trust([1.0, 1.1, 0.9, 1.0, 5.0])
    assert noisy.flags() == ["spread", "1 outlier"] and noisy.outliers == (5.0,)
    assert trust([2.0]).ci is None and trust([2.0]).flags() == [SINGLE]


# --- in the run table and the report ---------------------------------------------------------------


def _store(path: Path, samples: dict[int, list[float]]) -> Path:
    """A session whose boot_time at each background count has the given per-repetition values."""
    sid = "s1"
    events: list = [SessionStarted(sid, "t", "scaling", "process", "local", {}, 0, ts=1.79e9)]
    for step, (background, values) in enumerate(samples.items()):
        for rep, value in enumerate(values, 1):
            events.append(StepStarted(sid, rep, step, len(samples), background, ts=1.79e9 + step))
            events.append(Result(sid, rep, step, background, "local", f"w{rep}", "boot", "boot_time", value, "s",
                                 "lower", 1.79e9 + step))
            events.append(StepEnded(sid, rep, step, background, ts=1.79e9 + step + 0.5))
    events.append(SessionEnded(sid, "completed", "", ts=1.79e9 + 9))
    with StoreWriter.open(path) as writer:
        for event in events:
            writer.add(event)
    return path


SAMPLES = {
    0: [0.0100, 0.0101, 0.0099, 0.0100, 0.0102, 0.0100, 0.0101, 0.0099, 0.0100, 0.0101],  # steady
    10: [0.0100, 0.0101, 0.0099, 0.0100, 0.0102, 0.0100, 0.0101, 0.0099, 0.0100, 0.0400],  # one outlier
    20: [0.001, 0.0011, 0.012, 0.0009, 0.02, 0.001, 0.008, 0.025, 0.001, 0.0012],  # two modes
}


def test_the_run_table_says_how_far_to_trust_each_figure(tmp_path: Path) -> None:
    db = _store(tmp_path / "lab.duckdb", SAMPLES)
    out = io.StringIO()
    render_summary(Console(file=out, width=250), db, "s1")
    text = out.getvalue()
    for header in ("median", "95% CI", "CoV", "n", "trust"):
        assert f" {header} " in text
    lines = {b: next(line for line in text.splitlines() if line.startswith(f"│ {b:>10} ")) for b in SAMPLES}
    assert "outlier" not in lines[0] and "bimodal" not in lines[0] and "spread" not in lines[0]
    assert "1 outlier" in lines[10] and "spread" in lines[10]
    assert "bimodal" in lines[20]
    assert f"background 10: outlier(s) by modified Z-score > {OUTLIER_Z}: 40.00 ms" in text
    assert "background 20: bimodal, two groups around 1.000 ms and 16.00 ms" in text
    assert " 10.00 " in lines[0]  # the median, in the unit the title names once
    assert "boot: boot_time (ms, lower is better)" in text


def test_the_console_says_how_far_to_trust_each_figure_as_the_run_table_does(tmp_path: Path) -> None:
    """The console's slowdown table, live (from results as they come) and replayed (from the store), shows the
    same median, 95% interval, CoV and flags as the CLI's run table: trust of the repetitions' values."""
    db = _store(tmp_path / "lab.duckdb", SAMPLES)
    replayed = with_trust(slowdown_frame(db, "s1"), repetition_samples(db, "s1"))
    model = RunModel()
    model.results.extend(fetch_frame(db, f"SELECT {', '.join(RESULT_COLUMNS)} FROM results ORDER BY ts").rows())
    live = trusted_slowdown(model.results_frame())
    for frame in (replayed, live):
        rows = {r["background"]: r for r in frame.iter_rows(named=True)}
        for background, values in SAMPLES.items():
            expected = trust(values)
            row = rows[background]
            assert row["median"] == pytest.approx(expected.summary.median)
            assert (row["ci_low"], row["ci_high"]) == pytest.approx((expected.ci.low, expected.ci.high))
            assert row["cv"] == pytest.approx(abs(expected.summary.cv))
            assert row["flags"] == ", ".join(expected.flags())
    cells = {str(row[1]): dict(zip(slowdown_headers(), (c.plain for c in slowdown_cells(row))))
             for row in slowdown_rows(live).values()}
    assert cells["10"]["trust"] == "spread, 1 outlier" and "bimodal" in cells["20"]["trust"] and cells["0"]["trust"] == ""
    steady = trust(SAMPLES[0])
    assert cells["0"]["median"] == "10.00 ms" and cells["0"]["CoV"] == f"{abs(steady.summary.cv):.1%}"
    assert cells["0"]["95% CI"] == f"{steady.ci.low * 1000:#.4g} – {steady.ci.high * 1000:#.4g} ms"


@pytest.mark.parametrize("terminal", [False, True], ids=["file", "terminal"])
def test_an_80_column_table_cuts_no_number(tmp_path: Path, terminal: bool) -> None:
    """Redirected to a file, rich assumes 80 columns: the intervals used to end in "…" there; into a file the table
    keeps its natural width.  An 80-column terminal leaves out the mean and the interval (and says so) rather than
    squeeze the trust column: every row shows its flags whole, on its own line (issue 41)."""
    db = _store(tmp_path / "lab.duckdb", SAMPLES)
    out = io.StringIO()
    render_summary(Console(file=out, width=80, force_terminal=terminal, color_system=None), db, "s1")
    text = out.getvalue()
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert rows and not any("…" in line for line in rows)
    widest = max(len(line) for line in text.splitlines())
    assert widest <= 80 if terminal else widest > 80
    for background, values in SAMPLES.items():
        interval = trust(values).ci
        assert interval is not None
        at = next(i for i, line in enumerate(rows) if line.split("│")[1].strip() == str(background))
        low, high = number(interval.low, "s"), number(interval.high, "s")
        assert rows[at].split("│")[-2].strip() == ", ".join(trust(values).flags())  # the trust cell, whole
        if terminal:
            assert f" {low} – " not in text
        else:
            assert f" {low} – {high} " in rows[at]
    header = next(line for line in text.splitlines() if "trust" in line)
    assert ("95% CI" in header) != terminal and ("mean" in header) != terminal
    assert ("left out to fit 80 columns: mean, 95% CI" in text) == terminal


def test_a_repetition_without_a_finite_value_leaves_its_figure_blank_not_the_table(tmp_path: Path) -> None:
    """A rate of a time the probe clamped to 0 is nan: CI's lmbench-ctx run died in the table with it."""
    db = _store(tmp_path / "lab.duckdb", {0: [0.01, 0.011], 10: [float("nan"), 0.012], 20: [0.012, float("inf")]})
    out = io.StringIO()
    render_summary(Console(file=out, width=250), db, "s1")
    lines = out.getvalue().splitlines()
    assert any(line.startswith(f"│ {10:>10} ") for line in lines) and any(line.startswith(f"│ {20:>10} ") for line in lines)
    figure = trust([float("nan"), 0.012])
    assert figure.summary.n == 2 and all(v != v for v in (figure.summary.std, figure.summary.median, figure.summary.cv))
    assert trust([0.012, float("inf")]).summary.mean == float("inf")


def test_a_report_warns_of_outliers_and_two_modes(tmp_path: Path) -> None:
    db = _store(tmp_path / "lab.duckdb", SAMPLES)
    found = session_warnings(load_session(db, "s1"))
    outlying = [w for w in found if w.startswith("outliers")]
    bimodal = [w for w in found if w.startswith("two modes")]
    assert len(outlying) == 1 and "boot/boot_time at background 10: 40.00 ms" in outlying[0]
    assert len(bimodal) == 1 and "boot/boot_time at background 20" in bimodal[0]
    assert not any("background 0" in w for w in found)


def test_a_reports_tables_say_how_far_to_trust_each_figure(tmp_path: Path) -> None:
    db = _store(tmp_path / "lab.duckdb", SAMPLES)
    (table,) = slowdown_tables(load_session(db, "s1"))
    assert table.headers[:4] == ["background", "mean (ms)", "median (ms)", "95% CI (ms)"] and table.headers[-1] == "trust"
    rows = {int(row[0]): dict(zip(table.headers, row)) for row in table.rows}
    for background, values in SAMPLES.items():
        t = trust(values)
        assert rows[background]["median (ms)"] == number(t.summary.median, "s")
        assert rows[background]["95% CI (ms)"] == f"{number(t.ci.low, 's')} – {number(t.ci.high, 's')}"
        assert rows[background]["CoV"] == share_pct(t.summary.cv)
        assert rows[background]["trust"] == ", ".join(t.flags())
    assert rows[10]["trust"] == "spread, 1 outlier" and rows[0]["trust"] == ""


def test_without_bootstrap_the_interval_is_students_t() -> None:
    values = [1.0] * 12 + [1.2] * 7 + [3.0]  # skewed and BOOTSTRAP_MIN values: BCa where it is affordable
    assert trust(values).ci.method == "bootstrap"
    t = trust(values, bootstrap=False)
    assert t.ci.method == "t"
    assert t.ci.high - t.summary.mean == pytest.approx(t.summary.ci95)


def test_the_faces_draw_one_figures_table(tmp_path: Path) -> None:
    """The run table, the report's table and the console's slowdown table show the same mean, median, 95%
    interval, CoV and flags for one session: each draws labtui.figures' table, none assembles trust itself."""
    db = _store(tmp_path / "lab.duckdb", SAMPLES)
    figures = {r["background"]: r for r in session_figures(db, "s1").iter_rows(named=True)}
    out = io.StringIO()
    render_summary(Console(file=out, width=250), db, "s1")
    cli = {int(line.split("│")[1]): [c.strip() for c in line.split("│")[2:-1]]
           for line in out.getvalue().splitlines() if line.startswith("│ ") and line.split("│")[1].strip().isdigit()}
    (table,) = slowdown_tables(load_session(db, "s1"))
    report = {int(row[0]): dict(zip(table.headers, row)) for row in table.rows}
    console = {int(cells[1].plain): dict(zip(slowdown_headers(), (c.plain for c in cells)))
               for cells in map(slowdown_cells, slowdown_rows(session_figures(db, "s1")).values())}
    assert set(cli) == set(report) == set(console) == set(figures) == set(SAMPLES)
    for background, f in figures.items():
        mean, median, low, high = (number(f[k], "s") for k in ("mean", "median", "ci_low", "ci_high"))
        assert cli[background][:4] == [mean, median, f"{low} – {high}", share_pct(f["cv"])]
        assert cli[background][-1] == f["flags"]
        assert [report[background][k] for k in ("mean (ms)", "median (ms)", "95% CI (ms)", "trust")] == [
            mean, median, f"{low} – {high}", f["flags"]]
        assert [console[background][k] for k in ("mean", "median", "95% CI", "CoV", "trust")] == [
            f"{mean} ms", f"{median} ms", f"{low} – {high} ms", share_pct(f["cv"]), f["flags"]]
