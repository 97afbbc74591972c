"""The Zones study's trendlines: Δ% and d% as its tables print them, and `labtui trend` over a store."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from labtui.cli import main
from labtui.core.events import Result, SessionEnded, SessionStarted, StepEnded, StepStarted
from labtui.core.stats.trend import trend_delta_ci_pct, trend_delta_pct, trend_distance_pct, trendline
from labtui.store import StoreWriter

ZONES = list(range(1, 110))  # the study's 109 zones

#: Study 000, Table 5-3 (Int Additions, Int Divides, Int Multiplies): each scenario's published trendline
#: (slope, intercept), with the Δ% and d% the table prints for it.
GLOBAL_BASELINE = [(-755.25, 4299360, -1.91), (-0.9693, 53635, -0.20), (-22.325, 1017087, -0.24)]
NON_GLOBAL = [(-105.76, 4207347, -0.27, -1.31), (-1.3189, 53571, -0.27, -0.16), (-9.6558, 1015402, -0.10, -0.10)]
ONE_CPU_GLOBAL = [(-900.79, 3370946, -2.91, -21.78), (-7.3525, 50703, -1.58, -6.12), (9.4675, 1000140, 0.10, -1.49)]


def line_through(slope: float, intercept: float):
    return trendline(ZONES, [slope * x + intercept for x in ZONES])


@pytest.mark.parametrize("column", range(3), ids=["int-add", "int-div", "int-mul"])
def test_delta_and_distance_reproduce_table_5_3(column: int) -> None:
    slope0, b0, delta0 = GLOBAL_BASELINE[column]
    baseline = line_through(slope0, b0)
    assert round(trend_delta_pct(baseline), 2) == delta0
    for slope, intercept, delta, distance in (NON_GLOBAL[column], ONE_CPU_GLOBAL[column]):
        line = line_through(slope, intercept)
        assert round(trend_delta_pct(line), 2) == delta
        assert round(trend_distance_pct(line, baseline), 2) == distance


def test_a_trendline_recovers_its_line_and_says_how_far_to_trust_the_delta() -> None:
    exact = line_through(2.0, 100.0)
    assert exact.slope == pytest.approx(2.0) and exact.intercept == pytest.approx(100.0) and exact.r2 == pytest.approx(1)
    assert trend_delta_ci_pct(exact) == pytest.approx(0.0, abs=1e-9)
    noisy = trendline([0, 0, 10, 10, 20, 20], [100, 104, 118, 126, 138, 142])
    assert noisy.xs == (0, 10, 20) and noisy.n == 6
    assert trend_delta_pct(noisy) == pytest.approx(noisy.slope * 20 / noisy.intercept * 100)
    assert 0 < trend_delta_ci_pct(noisy) < abs(trend_delta_pct(noisy))
    through_zero = trendline([0, 10, 20], [0.0, 1.0, 2.0])  # a figure that starts at 0 has no Δ% or d% over it
    assert math.isnan(trend_delta_pct(through_zero)) and math.isnan(trend_distance_pct(exact, through_zero))
    with pytest.raises(ValueError, match="two background counts"):
        trendline([5, 5, 5], [1, 2, 3])


def _session(writer: StoreWriter, sid: str, slope: float, intercept: float, *, t0: float) -> None:
    """A scaling session whose arith/int_mops at backgrounds 0, 10, ..., 40 lie on the line (two reps each)."""
    writer.add(SessionStarted(sid, "zone-creation", "scaling", "zones", "local", {}, 1, ts=t0))
    for step, background in enumerate(range(0, 50, 10)):
        writer.add(StepStarted(sid, 1, step, 5, background, ts=t0 + step))
        for rep, wobble in ((1, -1.0), (2, 1.0)):
            writer.add(Result(sid, rep, step, background, "local", f"w{rep}", "arith", "int_mops",
                              slope * background + intercept + wobble, "Mops/s", "higher", ts=t0 + step))
        writer.add(Result(sid, 1, step, background, "local", "w1", "arith", "int_mops", 1.0, "Mops/s", "higher",
                          ts=t0 + step, placement="same-thread"))  # an isolation figure: no background trend
        writer.add(StepEnded(sid, 1, step, background, ts=t0 + step + 0.5))
    writer.add(SessionEnded(sid, "completed", "", ts=t0 + 9))


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_labtui_trend_fits_each_session_and_measures_d_from_the_baseline(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    with StoreWriter.open(db) as writer:
        _session(writer, "20260101-000000-global", -2.0, 1000.0, t0=1.79e9)
        _session(writer, "20260101-000100-nonglobal", -1.0, 950.0, t0=1.79e9 + 100)
    code, out, err = run("--db", str(db), "trend", "20260101-000100", "--baseline", "20260101-000000",
                         "--format", "csv")
    assert code == 0, err
    rows = {r["role"]: r for r in csv.DictReader(io.StringIO(out))}
    base, tested = rows["baseline"], rows["tested"]
    assert (base["metric"], base["n"], base["levels"]) == ("int_mops", "10", "5")  # the placed result is left out
    assert float(base["slope"]) == pytest.approx(-2.0) and float(base["intercept"]) == pytest.approx(1000.0)
    assert float(tested["delta_pct"]) == pytest.approx(-1.0 * 40 / 950 * 100)
    # the lines' mean distance over 0..40 is at 20: (-20 + 950) - (-40 + 1000) = -30, over b0 = 1000
    assert float(tested["d_pct"]) == pytest.approx(-3.0)
    code, table, _ = run("trend", "20260101-000100", "--baseline", "20260101-000000", "--db", str(db))
    assert code == 0 and "(baseline)" in table and "-3.00" in table and "-4.21" in table
    # each session's verdict (issue 41) under its table, from the same points: the lines fall 2 and 1 a count
    said = " ".join(table.split())
    assert re.search(r"arith/int_mops shrinks 2\.0\d* Mops/s per background instance \(95% CI 1\.\d+ to 2\.\d+\), "
                     r"-8\.0% from 0 to 40", said), table
    assert re.search(r"arith/int_mops shrinks 1\.0\d* Mops/s per background instance .*, -4\.2% from 0 to 40", said)
    code, doc, err = run("trend", "20260101-000100", "--baseline", "20260101-000000", "--db", str(db),
                         "--format", "json")
    assert code == 0, err
    found = {r["role"]: r for r in json.loads(doc)}
    assert found["tested"]["d_pct"] == pytest.approx(-3.0) and found["baseline"]["d_pct"] == float(base["d_pct"])
    assert set(found["tested"]) == set(rows["tested"])  # the same columns as the CSV


def test_labtui_trend_names_what_it_cannot_fit(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    with StoreWriter.open(db) as writer:
        _session(writer, "20260101-000000-global", -2.0, 1000.0, t0=1.79e9)
    assert run("trend", "nosuch", "--db", str(db))[0] == 2
    code, _, err = run("trend", "20260101", "--metric", "fork_us", "--db", str(db))
    assert code == 1 and "no session has metric 'fork_us' at two or more background counts" in err


def test_an_80_column_table_cuts_no_metric_name_and_no_number(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`labtui trend A --baseline B | cat` at 80 columns split the metric as 'arith/i', 'nt_mop', 's' and cut
    the numbers with an ellipsis; the table is now as wide as its cells need."""
    monkeypatch.setenv("COLUMNS", "80")
    db = tmp_path / "lab.duckdb"
    with StoreWriter.open(db) as writer:
        _session(writer, "20260101-000000-global", -2.0, 1000.0, t0=1.79e9)
        _session(writer, "20260101-000100-nonglobal", -1.0, 950.0, t0=1.79e9 + 100)
    code, table, err = run("trend", "20260101-000100", "--baseline", "20260101-000000", "--db", str(db))
    assert code == 0, err
    (row,) = [line for line in table.splitlines() if "-3.00" in line]
    cells = [c.strip() for c in row.split("│")]
    assert cells[0] == "arith/int_mops (Mops/s)" and "…" not in row, table
    assert "-4.21" in cells and "-1.000" in cells and "950.0" in cells, cells


def test_a_session_named_twice_is_refused_as_compare_refuses_it(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    with StoreWriter.open(db) as writer:
        _session(writer, "20260101-000000-global", -2.0, 1000.0, t0=1.79e9)
    for argv in (["20260101-000000", "--baseline", "20260101-000000-global"], ["20260101", "20260101-000000"]):
        code, out, err = run("--db", str(db), "trend", *argv)
        assert (code, out) == (2, "") and err == (
            "labtui trend: session 20260101-000000-global is named twice; give each session once\n"), err
