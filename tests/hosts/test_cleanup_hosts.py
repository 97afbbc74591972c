"""`labtui cleanup --orphans` with no --host reaches every host: a zones run on a simulated remote host
is killed -9, and the cleanup, told nothing about where, removes its zones (and nothing else)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import cli_run
import duckdb
import pytest
from simulators.fakehost import FakeHost, write_lab
from zones_host import foreign_intact, needs_sshd

from labtui.commands.instances import cleanup_hosts
from plugins.zones.listing import parse_zoneadm_list


def _labtui(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return cli_run.labtui(*args, env=env, timeout=timeout)


def _lab_zones(host: FakeHost) -> set[str]:
    names = {e.name for e in parse_zoneadm_list(host.tool("zoneadm", "list", "-cp").stdout)}
    return names - {"global", "webzone", "labtui-imposter"}


def _created_rows(db: Path) -> int:
    try:
        with duckdb.connect(str(db), read_only=True) as con:
            return con.execute("select count(*) from instances where state <> 'creating'").fetchone()[0]
    except duckdb.Error:
        return 0


@needs_sshd
def test_cleanup_without_host_removes_the_zones_of_a_killed_run(seeded: FakeHost, tmp_path: Path,
                                                                 keys: Path) -> None:
    config = write_lab(tmp_path, [seeded], keys)
    env = {**os.environ, "LABTUI_CONFIG": str(config), "LABTUI_RUNTIME_DIR": str(tmp_path / "rt"), "COLUMNS": "200"}
    db = tmp_path / "lab.duckdb"
    seeded.knobs(install_s=0.2)
    run = subprocess.Popen([sys.executable, "-m", "labtui", "run", "zone-creation", "--host", "zhost",
                            "--set", "scale.steps=6", "--set", 'worker.args=["fork", "0.1"]', "--db", str(db)],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while _created_rows(db) < 2:
        assert run.poll() is None, run.communicate()
        assert time.monotonic() < deadline, "the zones run never created its zones"
        time.sleep(0.2)
    run.send_signal(signal.SIGKILL)
    run.communicate()
    assert _lab_zones(seeded), "the killed run left no zone to clean up"
    assert "zhost" in cleanup_hosts(db)
    # The judgement of --orphans on every host, as a dry run: a real one would also end, on this machine, the
    # instances of other tests (another xdist worker's) that hold no running-lock.  Then only this run's session.
    judged = _labtui("cleanup", "--orphans", "--dry-run", "--db", str(db), env=env)
    assert judged.returncode == 0 and "== host zhost" in judged.stdout, judged.stdout + judged.stderr
    assert all(zone in judged.stdout for zone in _lab_zones(seeded)), judged.stdout
    with duckdb.connect(str(db), read_only=True) as con:
        (session,) = con.execute("select session_id from sessions").fetchone()
    cleanup = _labtui("cleanup", "--session", session, "--db", str(db), env=env)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert "== host zhost" in cleanup.stdout and "== host local" in cleanup.stdout
    assert _lab_zones(seeded) == set()
    foreign_intact(seeded)
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select count(*) from instances where destroyed_at is null "
                           "and state <> 'exited'").fetchone()[0] == 0


def test_the_store_names_hosts_the_config_forgot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "empty.toml").write_text("")
    monkeypatch.setenv("LABTUI_CONFIG", str(tmp_path / "empty.toml"))
    db = tmp_path / "lab.duckdb"
    assert cleanup_hosts(db) == ["local"]
    from labtui.core.events import InstanceCreating, SessionStarted
    from labtui.store import StoreWriter

    writer = StoreWriter.open(db)
    writer.add(SessionStarted("s1", "boot-scaling", "scaling", "zones", "farhost", {}, 1))
    writer.add(InstanceCreating("s1", "i1", "farhost", "zones", "background", "i1"))
    writer.close()
    assert cleanup_hosts(db) == ["local", "farhost"]
