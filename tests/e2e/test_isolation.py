"""The isolation and concurrent kinds: placements from the CPU topology, and real runs end to end."""

from __future__ import annotations

import os
import subprocess
from functools import partial
from pathlib import Path

import duckdb
import pytest
from cli_run import labtui as run_labtui

from labtui.engine.topology import Cpu, parse_cpu_list, parse_smt_control, parse_topology, plan_placements, read_topology
from labtui.hosts.local import LocalHost
from labtui.store import run_sql, slowdown_frame
from labtui.store.schema import SCHEMA_VERSION, ensure_schema
from labtui.suites import SuiteError, load_suite
from labtui.suites.kinds import steps_per_repetition
from labtui.suites.kinds.isolation import PLACEMENTS, Isolation

SHM = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"

GREP = """/sys/devices/system/cpu/cpu1/topology/physical_package_id:0
/sys/devices/system/cpu/cpu1/topology/core_id:0
/sys/devices/system/cpu/cpu0/topology/physical_package_id:0
/sys/devices/system/cpu/cpu0/topology/core_id:0
/sys/devices/system/cpu/cpu2/topology/physical_package_id:0
/sys/devices/system/cpu/cpu2/topology/core_id:1
/sys/devices/system/cpu/cpu3/topology/physical_package_id:0
/sys/devices/system/cpu/cpu3/topology/core_id:1
"""


def test_parse_topology_reads_grep_lines() -> None:
    assert parse_topology(GREP) == [Cpu(0, 0, 0), Cpu(0, 0, 1), Cpu(0, 1, 2), Cpu(0, 1, 3)]


def test_plan_on_two_cores_with_smt_offers_every_placement() -> None:
    plan = plan_placements(parse_topology(GREP), PLACEMENTS)
    assert plan.worker_cpu == 0
    assert plan.attackers == {
        "alone": (),
        "same-thread": (0,),
        "sibling-thread": (1,),
        "other-core": (2,),
        "all-other-cores": (2, 3),
    }
    assert plan.skipped == {}


def test_plan_without_smt_skips_the_sibling_and_prefers_a_core_with_siblings() -> None:
    two_plain = [Cpu(0, 0, 0), Cpu(0, 1, 1)]
    plan = plan_placements(two_plain, PLACEMENTS)
    assert "sibling-thread" in plan.skipped and "SMT" in plan.skipped["sibling-thread"]
    assert plan.attackers["other-core"] == (1,) and plan.attackers["all-other-cores"] == (1,)
    mixed = [Cpu(0, 0, 0), Cpu(0, 1, 1), Cpu(0, 1, 2)]
    assert plan_placements(mixed, PLACEMENTS).worker_cpu == 1
    single = plan_placements([Cpu(0, 0, 0)], PLACEMENTS)
    assert set(single.skipped) == {"sibling-thread", "other-core", "all-other-cores"}


def test_plan_prefers_another_core_of_the_same_package() -> None:
    cpus = [Cpu(0, 0, 0), Cpu(1, 0, 1), Cpu(0, 1, 2)]
    assert plan_placements(cpus, ("alone", "other-core")).attackers["other-core"] == (2,)


# Two dies of one package whose core ids repeat (as on multi-die processors): only
# thread_siblings_list tells that CPUs 0 and 2 are different cores.
GREP_DIES = """/sys/devices/system/cpu/cpu0/topology/physical_package_id:0
/sys/devices/system/cpu/cpu0/topology/core_id:0
/sys/devices/system/cpu/cpu0/topology/thread_siblings_list:0-1
/sys/devices/system/cpu/cpu1/topology/physical_package_id:0
/sys/devices/system/cpu/cpu1/topology/core_id:0
/sys/devices/system/cpu/cpu1/topology/thread_siblings_list:0-1
/sys/devices/system/cpu/cpu2/topology/physical_package_id:0
/sys/devices/system/cpu/cpu2/topology/core_id:0
/sys/devices/system/cpu/cpu2/topology/thread_siblings_list:2,3
/sys/devices/system/cpu/cpu3/topology/physical_package_id:0
/sys/devices/system/cpu/cpu3/topology/core_id:0
/sys/devices/system/cpu/cpu3/topology/thread_siblings_list:2,3
/sys/devices/system/cpu/smt/control:on
/sys/devices/system/cpu/cpu0/power/control:auto
"""


def test_table_5_1_thread_is_same_thread_and_core_is_the_sibling_hyper_thread() -> None:
    """Study 001, 5.2.1: the attacker "on the same thread", then "on the other hyper thread
    belonging to the same core": Table 5.1's thread and core slowdowns."""
    cpus = parse_topology(GREP_DIES)
    assert [c.siblings for c in cpus] == [(0, 1), (0, 1), (2, 3), (2, 3)]
    assert parse_smt_control(GREP_DIES) == "on"
    plan = plan_placements(cpus, PLACEMENTS, "on")
    assert plan.attackers["same-thread"] == (plan.worker_cpu,) == (0,)
    assert plan.attackers["sibling-thread"] == (1,)  # the same core's other thread, not another core
    assert plan.attackers["other-core"] == (2,) and plan.attackers["all-other-cores"] == (2, 3)
    assert plan.skipped == {}
    assert parse_cpu_list("0-2,8,10-11") == (0, 1, 2, 8, 10, 11)


@pytest.mark.parametrize("smt, says", [
    ("off", "SMT is turned off"), ("forceoff", "forced off"), ("notsupported", "have no SMT"),
    (None, "no core has a second hardware thread"),
])
def test_no_smt_sibling_says_so_and_skips_the_placement(smt, says) -> None:
    plan = plan_placements([Cpu(0, 0, 0, (0,)), Cpu(0, 1, 1, (1,))], PLACEMENTS, smt)
    assert "sibling-thread" not in plan.attackers
    reason = plan.skipped["sibling-thread"]
    assert "no SMT sibling" in reason and says in reason and "Table 5.1" in reason
    assert plan.attackers["same-thread"] == (0,) and plan.attackers["other-core"] == (1,)


def test_all_other_cores_stays_on_the_workers_processor() -> None:
    """Study 001, 5.3: "on the same processor ... an attacker on every hyper thread the processor
    has, apart from one core that we use for the application benchmark"."""
    cpus = [Cpu(0, 0, 0), Cpu(0, 0, 1), Cpu(0, 1, 2), Cpu(0, 1, 3), Cpu(1, 0, 4), Cpu(1, 0, 5)]
    assert plan_placements(cpus, PLACEMENTS).attackers["all-other-cores"] == (2, 3)


async def test_read_topology_of_this_machine_matches_sysfs() -> None:
    cpus = await read_topology(LocalHost())
    online = len([p for p in Path("/sys/devices/system/cpu").glob("cpu[0-9]*") if (p / "topology").is_dir()])
    assert len(cpus) == online and cpus[0].cpu == 0


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "s.toml"
    path.write_text(text)
    return str(path)


ISO = """[suite]
name = "iso"
kind = "isolation"
[worker]
program = "hourglass"
args = ["share", "0.1"]
measure = "output"
[attacker]
program = "attack-cpu"
"""


def test_isolation_suite_defaults(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path, ISO))
    assert suite.table(Isolation).placements == PLACEMENTS and suite.scale is None
    assert steps_per_repetition(suite) == 5 and suite.attacker is not None


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (ISO.replace('[attacker]\nprogram = "attack-cpu"\n', ""), "attacker", "needs a [attacker] table"),
        (ISO + '[isolation]\nplacements = ["same-thread"]\n', "isolation.placements", "starting with 'alone'"),
        (ISO + '[isolation]\nplacements = ["alone", "next-door"]\n', "isolation.placements", "from: alone"),
        (ISO + "[scale]\nsteps = 1\nper_step = 1\n", "scale", "only a scaling suite uses [scale]"),
        (ISO.replace('measure = "output"', 'measure = "stdout"'), "worker.measure", "one of: boot, output"),
    ],
)
def test_isolation_suite_errors_name_the_key(tmp_path: Path, text: str, key: str, message: str) -> None:
    with pytest.raises(SuiteError) as info:
        load_suite(write(tmp_path, text))
    assert info.value.key == key and message in info.value.message


def test_builtin_isolation_suites_follow_the_study() -> None:
    for name, attacker in [("isolation-cpu", "attack-cpu"), ("isolation-memory", "attack-mem"),
                           ("isolation-syscall", "attack-syscall")]:
        suite = load_suite(name)
        assert suite.kind == "isolation" and suite.repetitions == 20
        assert suite.worker is not None and suite.worker.program == "sqlite" and suite.worker.args[0] == "60000"
        assert suite.attacker is not None and suite.attacker.program == attacker


def _version_1_store(db: Path, rows: list[tuple[str, int, int, float]]) -> duckdb.DuckDBPyConnection:
    """A store as labtui wrote it at schema version 1 (no placement, no run), with results (instance, step,
    background, value) of session 's', and a slowdown view that is not today's."""
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute(
        "CREATE TABLE results (session_id TEXT NOT NULL, repetition INTEGER, step INTEGER, background INTEGER, "
        "host TEXT, instance_id TEXT, benchmark TEXT, metric TEXT, value DOUBLE, unit TEXT, better TEXT, ts TIMESTAMPTZ)"
    )
    for instance, step, background, value in rows:
        con.execute("INSERT INTO results VALUES ('s', 1, ?, ?, 'h', ?, 'b', 'm', ?, 's', 'lower', now())",
                    [step, background, instance, value])
    con.execute("CREATE VIEW slowdown AS SELECT * FROM results")
    return con


def test_a_version_1_store_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.duckdb"
    con = _version_1_store(db, [("w1", 0, 0, 2.0), ("w2", 1, 10, 3.0)])
    ensure_schema(con, db)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall() == [(str(SCHEMA_VERSION),)]
    rows = con.execute("SELECT background, placement, slowdown_pct FROM slowdown ORDER BY step").fetchall()
    assert rows == [(0, "", 0.0), (10, "", 50.0)]  # no placement reads as '' (schema 3)
    assert con.execute("SELECT count(*), count(run) FROM results").fetchall() == [(2, 0)]  # schema 5's column


def test_an_older_store_reads_as_the_current_one_before_a_writer_migrates_it(tmp_path: Path) -> None:
    """A reader cannot migrate: the run table, reports and compare read an old file through today's views."""
    db = tmp_path / "old.duckdb"
    _version_1_store(db, [("w1", 0, 0, 2.0), ("w2", 1, 10, 2.0), ("w3", 1, 10, 4.0)]).close()
    frame = slowdown_frame(db, "s")
    assert frame.select("background", "placement", "mean", "slowdown_pct").rows() == [(0, "", 2.0, 0.0), (10, "", 3.0, 50.0)]
    assert run_sql(db, "SELECT count(*), count(run) FROM results").rows == [(3, 0)]  # no run: values of one step averaged
    assert run_sql(db, "SELECT value FROM meta WHERE key = 'schema_version'").rows == [("1",)]  # the file is untouched


labtui = partial(run_labtui, check=True)


def test_labtui_run_isolation_cpu_prints_the_slowdown_table(tmp_path: Path, env: dict[str, str]) -> None:
    db = tmp_path / "iso.duckdb"
    out = labtui(
        "run", "isolation-cpu", "--set", "suite.repetitions=2", "--set", f'worker.args=["300", "{SHM}"]',
        "--set", "sampling.quiet_timeout_s=1", "--set", "isolation.settle_s=0.1", "--db", str(db), env=env,
    )
    assert "inserts_300_s" in out.stdout and "placement" in out.stdout and "same-thread" in out.stdout
    con = duckdb.connect(str(db), read_only=True)
    cpus = len(parse_topology(subprocess.run(
        ["grep", "-r", "--include=core_id", "--include=physical_package_id", ".", "/sys/devices/system/cpu"],
        capture_output=True, text=True).stdout))
    placements = [p for p, in con.execute("SELECT DISTINCT placement FROM results ORDER BY step").fetchall()]
    assert placements[:2] == ["alone", "same-thread"]
    counts = dict(con.execute("SELECT placement, count(*) FROM results GROUP BY placement").fetchall())
    assert set(counts.values()) == {2}  # one worker run per placement and repetition
    steps = dict(con.execute("SELECT placement, min(step) FROM results GROUP BY placement").fetchall())
    assert all(steps[p] == PLACEMENTS.index(p) for p in steps)
    attackers = con.execute("SELECT count(*) FROM instances WHERE role = 'attacker'").fetchone()[0]
    if cpus > 1:
        assert "other-core" in placements and attackers >= 2 * 3
    # every instance was destroyed or ran to its end
    assert con.execute("SELECT count(*) FROM instances WHERE state NOT IN ('destroyed', 'exited')").fetchone()[0] == 0
    baseline = con.execute(
        "SELECT slowdown_pct FROM slowdown WHERE placement = 'alone'").fetchone()[0]
    assert baseline == 0.0
    warnings = [m for m, in con.execute("SELECT message FROM events WHERE category = 'placement-skipped'").fetchall()]
    assert bool(warnings) == ("sibling-thread" not in placements)


def test_labtui_run_concurrent_records_each_instance_and_the_sum(tmp_path: Path, env: dict[str, str]) -> None:
    suite = tmp_path / "conc.toml"
    suite.write_text(
        '[suite]\nname = "conc"\nkind = "concurrent"\n'
        '[worker]\nprogram = "arith"\nargs = ["int", "0.1"]\nmeasure = "output"\nwarmup = 0\n'
        "[concurrent]\ninstances = [1, 2]\nstart_delay_s = 0.3\n[sampling]\nquiet_timeout_s = 0\n"
    )
    db = tmp_path / "c.duckdb"
    labtui("run", str(suite), "--db", str(db), env=env)
    con = duckdb.connect(str(db), read_only=True)
    rows = con.execute(
        "SELECT background, count(*) FILTER (WHERE metric = 'int_mops'), sum(value) FILTER (WHERE metric = 'int_mops'), "
        "max(value) FILTER (WHERE metric = 'int_mops_sum') FROM results GROUP BY background ORDER BY background"
    ).fetchall()
    assert [(b, n) for b, n, _, _ in rows] == [(1, 1), (2, 2)]
    for _, _, total, aggregate in rows:
        assert aggregate == pytest.approx(total)
