"""`labtui report A B C ...`: compare's side-by-side table (one column per session labelled by backend and
host, the relative difference against the first) and charts that overlay every session, each in a colour
of its own.

The sessions are real quick runs of lmbench-fork on the process backend and on Docker with runc and with
runsc (gVisor), so the columns are native, container and sandboxed container, as studies 003 and 004 set
them side by side."""

from __future__ import annotations

import html
import json
import re
import statistics
from pathlib import Path

import pytest
from host_needs import docker_missing

from labtui.cli import main
from labtui.report import charts_for, load_session
from labtui.store import fetch_frame

#: (backend, extra --set) of each session, in column order.
RUNS = [("process", []), ("docker", []), ("docker", ["backend.runtime=runsc"]), ("process", []), ("docker", [])]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    if reason := docker_missing():
        pytest.skip(reason)
    db = tmp_path_factory.mktemp("report-side") / "lab.duckdb"
    for backend, sets in RUNS:
        extra = [a for s in sets for a in ("--set", s)]
        assert main(["run", "lmbench-fork", "--profile", "quick", "--backend", backend, "--db", str(db),
                     "--set", 'worker.args=["fork", "0.2"]', "--set", "sampling.quiet_timeout_s=0", *extra]) == 0
    ids = fetch_frame(db, "SELECT session_id FROM sessions ORDER BY started_at")["session_id"].to_list()
    assert len(ids) == len(RUNS)
    return db, ids


def repetition_mean(db: Path, session: str, metric: str) -> float:
    """The mean over repetitions of each repetition's median, from the raw results."""
    frame = fetch_frame(db, "SELECT repetition, value FROM results WHERE session_id = ? AND benchmark = 'proc' "
                        "AND metric = ? AND background = 1", [session, metric])
    by_rep: dict[int, list[float]] = {}
    for rep, value in frame.iter_rows():
        by_rep.setdefault(rep, []).append(value)
    return statistics.fmean(statistics.median(v) for v in by_rep.values())


def side_table(page: str) -> list[list[str]]:
    """The cells of the page's side-by-side table, header row first."""
    start = page.index("<h2>Side by side</h2>")
    table = page[start:page.index("</table>", start)]
    return [[html.unescape(c) for c in re.findall(r"<t[dh]>(.*?)</t[dh]>", row)] for row in table.split("<tr>")[1:]]


def test_report_of_three_sessions_sets_them_side_by_side(store: tuple[Path, list[str]], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = store
    three = ids[:3]
    assert main(["report", *three, "--db", str(db), "--out", str(tmp_path / "r")]) == 0
    page = Path(capsys.readouterr().out.strip().splitlines()[-1]).read_text()
    header, *rows = side_table(page)
    isolation = [str(fetch_frame(db, "SELECT isolation FROM hosts WHERE session_id = ?", [s])["isolation"][0])
                 for s in three]
    assert "runc" in isolation[1] and "runsc" in isolation[2]
    assert header == ["benchmark", "metric (unit, better)", "background",
                      f"1: process@local ({isolation[0]}) mean (n)",
                      f"2: docker@local ({isolation[1]}) mean (n)", "2 vs 1 %",
                      f"3: docker@local ({isolation[2]}) mean (n)", "3 vs 1 %"]
    (fork,) = [r for r in rows if r[1].startswith("fork_us (")]
    means = [repetition_mean(db, s, "fork_us") for s in three]
    shown = [float(fork[i].split(" ")[0].replace(",", "")) for i in (3, 4, 6)]
    assert shown == pytest.approx(means, rel=2e-3)
    assert all(fork[i].endswith(" (2)") for i in (3, 4, 6))  # two repetitions each
    for column, mean in ((5, means[1]), (7, means[2])):
        assert float(fork[column].rstrip("*")) == pytest.approx((mean / means[0] - 1) * 100, abs=0.051)
    # the same numbers as `labtui compare A B C` prints: one definition for both
    assert main(["compare", *three, "--db", str(db), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    row = next(r for r in doc["rows"] if r["metric"] == "fork_us" and r["background"] == 1)
    assert [c["mean"] for c in row["columns"]] == pytest.approx(means)


def test_charts_overlay_every_session_in_its_own_colour(store: tuple[Path, list[str]]) -> None:
    db, ids = store
    sessions = [load_session(db, s) for s in ids]
    chart = {c.slug: c for c in charts_for(sessions)}["proc-fork_us"]
    absolute = chart.figure.axes[0]
    lines = [line for line in absolute.get_lines() if not line.get_label().startswith("_")]
    assert len(lines) == len(ids)
    labels = [line.get_label() for line in lines]
    assert len(set(labels)) == len(ids) and all(("process" in label) != ("docker" in label) for label in labels)
    assert len({line.get_color() for line in lines}) == len(ids)
    for line, session in zip(lines, ids):
        assert list(line.get_ydata()) == pytest.approx([repetition_mean(db, session, "fork_us")], rel=1e-9)


def test_a_session_named_twice_is_refused(store: tuple[Path, list[str]], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    db, ids = store
    assert main(["report", ids[0], ids[1], ids[0], "--db", str(db), "--out", str(tmp_path / "r")]) == 2
    assert f"session {ids[0]} is named twice" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
