"""Native against container (studies 003 and 004): the same suite on the process and the docker backend
meets under one metric name, so `labtui compare` sets them side by side with a relative difference.

Each suite runs its quick profile on both backends, for real (the probes compiled here; the FROM scratch
images built on this machine's Docker engine), with shorter probe runs than the profile's: the
comparison's rows do not depend on how long the probe ran.  The relative difference is recomputed from
the raw results the run recorded.
"""

from __future__ import annotations

import json
import os
import statistics
from pathlib import Path

import pytest
from host_needs import docker_missing

from labtui.cli import main
from labtui.store import fetch_frame

#: suite -> (its probe arguments, shortened; the benchmark and metric both backends must record)
SUITES = {
    "lmbench-fork": (["fork", "0.3"], "proc", "fork_us"),
    "lmbench-exec": (["exec", "0.3"], "proc", "exec_us"),
    # /bin/sh -c, and UnixBench's scripts: the docker images carry the host's shell and tools
    "lmbench-sh": (["shell", "0.3"], "proc", "shell_us"),
    "unixbench-shell8": (["multi", "0.3", "8", "/tmp"], "proc", "shell8_lpm"),
    "unixbench-execl": (["execl", "0.3"], "proc", "execl_lps"),
    "unixbench-syscall": (["mix", "0.3"], "syscall", "mix_ns"),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One store with each suite's quick profile run on process and on docker."""
    if reason := docker_missing():
        if os.environ.get("LABTUI_CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    db = tmp_path_factory.mktemp("native-vs-container") / "lab.duckdb"
    for suite, (args, _, _) in SUITES.items():
        for backend in ("process", "docker"):
            code = main(["run", suite, "--profile", "quick", "--backend", backend, "--db", str(db),
                         "--set", f"worker.args={json.dumps(args)}", "--set", "sampling.quiet_timeout_s=0"])
            assert code == 0, f"{suite} on {backend} exited {code}"
    return db


def _session(db: Path, suite: str, backend: str) -> str:
    frame = fetch_frame(db, "SELECT session_id FROM sessions WHERE suite = ? AND backend = ? AND status = 'completed'",
                        [suite, backend])
    assert frame.height == 1, (suite, backend, frame)
    return str(frame["session_id"][0])


def _repetition_means(db: Path, session: str, metric: str, benchmark: str = "proc") -> float:
    """The mean over repetitions of each repetition's median (one instance, one run: its value)."""
    frame = fetch_frame(db, "SELECT repetition, value FROM results WHERE session_id = ? AND benchmark = ? "
                        "AND metric = ? AND background = 1", [session, benchmark, metric])
    by_rep: dict[int, list[float]] = {}
    for rep, value in frame.iter_rows():
        by_rep.setdefault(rep, []).append(value)
    assert by_rep, f"no {metric} recorded in {session}"
    return statistics.fmean(statistics.median(v) for v in by_rep.values())


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_compare_finds_the_metric_on_both_backends(store: Path, suite: str, capsys) -> None:
    _, benchmark, metric = SUITES[suite]
    native, container = _session(store, suite, "process"), _session(store, suite, "docker")
    assert main(["compare", native, container, "--db", str(store), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = [r for r in doc["rows"] if r["metric"] == metric and r["background"] == 1]
    assert len(rows) == 1 and rows[0]["present"] == "both", doc["rows"]
    # no build-named twin of the metric (fork_static_us and the like) on either side
    assert not [r for r in doc["rows"] if r["present"] != "both"], doc["rows"]
    a, b = _repetition_means(store, native, metric, benchmark), _repetition_means(store, container, metric, benchmark)
    assert rows[0]["mean_a"] == pytest.approx(a) and rows[0]["mean_b"] == pytest.approx(b)
    assert rows[0]["change_pct"] == pytest.approx((b / a - 1) * 100)
    # the table a person reads: the row, with its relative difference
    assert main(["compare", native, container, "--db", str(store)]) == 0
    table = capsys.readouterr().out
    assert metric in table and f"{(b / a - 1) * 100:+.1f}" in table, table


def test_side_by_side_labels_each_column_by_backend_host_and_isolation(store: Path, capsys) -> None:
    native, container = _session(store, "lmbench-fork", "process"), _session(store, "lmbench-fork", "docker")
    other = _session(store, "lmbench-exec", "docker")
    assert main(["compare", native, container, other, "--db", str(store), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    isolation = {sid: str(fetch_frame(store, "SELECT isolation FROM hosts WHERE session_id = ?", [sid])["isolation"][0])
                 for sid in (native, container, other)}
    assert "runc" in isolation[container]  # the docker runtime, as the engine reported it
    assert [c["label"] for c in doc["columns"]] == [f"process@local ({isolation[native]})",
                                                     f"docker@local ({isolation[container]})",
                                                     f"docker@local ({isolation[other]})"]
    fork = next(r for r in doc["rows"] if r["metric"] == "fork_us" and r["background"] == 1)
    first, second, third = fork["columns"]
    b_over_a = _repetition_means(store, container, "fork_us") / _repetition_means(store, native, "fork_us")
    assert first["change_pct"] is None and second["change_pct"] == pytest.approx((b_over_a - 1) * 100)
    assert third["mean"] is None  # the exec session has no fork figure
