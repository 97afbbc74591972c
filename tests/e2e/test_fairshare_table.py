"""The CLI's fairshare table states shares per CPU as study 004 does (§5.1, Table 3: a quarter of an SMP's
200% is 50%), from the same definition as the report's Table 3, weight and cap as rows of their own."""

from __future__ import annotations

import os
import re
from pathlib import Path

import cli_run
import polars as pl
import pytest
from host_needs import needs_cpu_controller

from labtui.report.data import load_session
from labtui.report.tables import share_tables
from labtui.store import fetch_frame


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """fairshare-cpu's quick profile on CPUs 0-1: the store, the session, and what `labtui run` printed."""
    root = tmp_path_factory.mktemp("fairshare-table")
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(root / "runtime"), "COLUMNS": "200"}
    db = root / "lab.duckdb"
    proc = cli_run.labtui("run", "fairshare-cpu", "--profile", "quick", "--db", str(db), "--set", "fairshare.cpus=0-1",
                          "--set", "fairshare.duration_s=1", "--set", "sampling.quiet_timeout_s=0", env=env)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    (session,) = fetch_frame(db, "SELECT session_id FROM sessions")["session_id"].to_list()
    return db, session, proc.stdout


def raw(db: Path, session: str) -> pl.DataFrame:
    """Each instance's achieved and requested share as recorded (a ratio of the CPU set) with its role."""
    return fetch_frame(db, """
        SELECT r.step, r.repetition, r.instance_id, coalesce(i.role, 'worker') AS role,
               max(r.value) FILTER (WHERE r.metric = 'achieved_share') AS achieved,
               max(r.value) FILTER (WHERE r.metric = 'requested_share') AS requested
        FROM results r LEFT JOIN instances i USING (session_id, instance_id)
        WHERE r.session_id = ? AND r.metric IN ('achieved_share', 'requested_share')
        GROUP BY ALL""", [session])


def table_rows(out: str) -> dict[tuple[str, str], list[str]]:
    """(configuration, instances) -> the row's cells, from the printed table."""
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line)[1:-1]]
        if len(cells) == 8 and cells[0] in ("equal", "weight", "cap"):
            rows[(cells[0], cells[1].split(" ")[0] if cells[1] != "reserved" else "reserved")] = cells
    return rows


@needs_cpu_controller
def test_cli_table_states_smp_shares_per_cpu_with_weight_and_cap_apart(run: tuple[Path, str, str]) -> None:
    db, session, out = run
    assert "fairshare on CPUs 0-1: CPU share achieved against requested, in % of one CPU; the 2 CPUs shared are 200%" \
        in out, out
    shares = raw(db, session)
    rows = table_rows(out)
    assert set(rows) == {("equal", "each"), ("weight", "reserved"), ("weight", "each"), ("cap", "reserved"),
                         ("cap", "each")}, out
    for (configuration, who), cells in rows.items():
        step = ("equal", "weight", "cap").index(configuration)
        mine = shares.filter((pl.col("step") == step) & ((pl.col("role") == "reserved") == (who == "reserved")))
        # per CPU: the ratio of the two-CPU set times 200%
        assert cells[2] == f"{mine['requested'].mean() * 200:.2f}%"
        assert cells[3] == f"{mine['achieved'].mean() * 200:.2f}%"
        assert cells[4] == f"{mine['achieved'].min() * 200:.2f}% - {mine['achieved'].max() * 200:.2f}%"
        assert cells[7] == str(mine.height)
    # a quarter of 200% is 50%, reserved by weight and by cap: two rows, not one of the mean
    assert rows[("weight", "reserved")][2] == rows[("cap", "reserved")][2] == "50.00%"
    assert rows[("equal", "each")][2] == "25.00%" and rows[("equal", "each")][1] == "each (8)"
    together = (shares.group_by(["step", "repetition"]).agg(pl.col("achieved").sum())
                .group_by("step").agg(pl.col("achieved").mean()).sort("step")["achieved"].to_list())
    assert (f"all instances together received: equal {together[0] * 200:.2f}%, weight {together[1] * 200:.2f}%, "
            f"cap {together[2] * 200:.2f}% (of 200% of CPUs 0-1)") in out


@needs_cpu_controller
def test_cli_table_and_report_table_3_agree(run: tuple[Path, str, str]) -> None:
    db, session, out = run
    (table,) = share_tables(load_session(db, session))
    printed = table_rows(out)
    for row in table.rows:
        configuration, who = row[0], row[1] if row[1] == "reserved" else row[1].split(" ")[0]
        cells = printed[(configuration, who)]
        assert float(cells[2].rstrip("%")) == pytest.approx(float(row[2]), abs=0.01)
        assert float(cells[3].rstrip("%")) == pytest.approx(float(row[3]), rel=1e-3, abs=0.01)
