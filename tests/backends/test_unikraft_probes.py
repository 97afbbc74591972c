"""labtui's probes as Unikraft applications under the ELF loader (plugins/unikraft/elfprobes.py), and logs().

The ELF loader and the probes' initrds are built from Unikraft's own source
(../shared/vendor/unikraft) and cached by digest in the user's cache directory,
like tests/backends/test_unikraft_source.py's images, so a CI run builds each once.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import cli_run
import duckdb
import pytest
from backend_lab import Lab
from unikraft_needs import needs_unikraft

from labtui.backends.base import BackendError, InstanceSpec, Labels
from plugins.unikraft import elfprobes

BACKEND = "unikraft"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "ukp"

REPO = Path(__file__).resolve().parents[2]
#: Unikraft 0.16.3's codename, printed under its banner.
RELEASE = "Telesto 0.16.3"


pytestmark = needs_unikraft("Unikraft probe tests", sqlite=True)


def labtui(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_run.labtui(*args, cwd=REPO, timeout=900)


def test_sqlite_scaling_runs_sqlite_inside_unikraft(runtime_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    # one step: the matrix (tests/e2e/test_matrix.py) runs the whole quick profile from both faces
    run = labtui("run", "unikraft-sqlite-scaling", "--profile", "quick", "--set", "scale.steps=1", "--db", str(db))
    assert run.returncode == 0, run.stderr + run.stdout
    with duckdb.connect(str(db), read_only=True) as store:
        assert store.execute("SELECT status FROM sessions").fetchall() == [("completed",)]
        rows = store.execute("SELECT background, value FROM results WHERE metric = 'inserts_2000_s' ORDER BY 1"
                             ).fetchall()
        assert [b for b, _ in rows] == [0, 2] and all(0 < v < 60 for _, v in rows)
        roles = dict(store.execute("SELECT role, count(*) FROM instances GROUP BY role").fetchall())
        assert roles == {"warmup": 2, "worker": 2, "background": 2}


async def test_a_probe_runs_to_its_exit_status_and_its_console_is_its_log(lab: Lab) -> None:
    ok = await lab.backend.create(InstanceSpec(Labels(lab.session(), "worker", "w1"), program="sqlite",
                                               args=("300", "/dev/shm"), wait="exit", capture_output=True,
                                               timeout_s=120))
    assert ok.exit_code == 0 and RELEASE in (ok.output or "")
    assert '"metric":"inserts_300_s"' in (ok.output or "")
    assert await lab.backend.logs(ok) == ok.output  # its console file went with its QEMU: the capture
    # sqlite's usage error (INSERTS 0) returns 2 from main: the shim powers off with it through isa-debug-exit
    bad = await lab.backend.create(InstanceSpec(Labels(lab.session(), "worker", "w2"), program="sqlite", args=("0",),
                                                wait="exit", capture_output=True, timeout_s=120))
    assert bad.exit_code == 2 and "usage: sqlite" in (bad.output or "")


async def test_an_attacker_stays_up_and_logs_shows_its_live_console(lab: Lab) -> None:
    spec = InstanceSpec(Labels(lab.session(), "attacker", "a1"), program="attack-syscall", args=("stat", "/dev/shm"),
                        timeout_s=120)
    attacker = await lab.backend.create(spec)
    assert attacker.state == "running" and attacker.ready_at is not None
    log = await lab.backend.logs(attacker)
    assert log is not None and RELEASE in log and "labtui-probe attack-syscall: started" in log
    assert "\x1b" not in log and "\r" not in log  # SeaBIOS's screen clearing is gone
    (listed,) = await lab.backend.list(spec.labels.session)  # what the console's Instances view holds
    assert await lab.backend.logs(listed) == log
    await lab.backend.destroy(attacker)


async def test_fork_and_disk_attackers_are_refused_with_the_reason(lab: Lab) -> None:
    spec = InstanceSpec(Labels(lab.session(), "attacker", "a2"), program="attack-syscall", args=("fork", "/dev/shm"))
    with pytest.raises(BackendError) as raised:
        await lab.backend.create(spec)
    said = str(raised.value)
    assert "\n" not in said and said.startswith("unikraft backend cannot run probe attack-syscall fork")
    assert "ENOSYS" in said
    disk = InstanceSpec(Labels(lab.session(), "attacker", "a3"), program="attack-disk", args=("/var/tmp", "256"))
    with pytest.raises(BackendError, match="cannot run probe attack-disk /var/tmp 256: an ELF loader unikernel has no"):
        await lab.backend.create(disk)
    assert await lab.backend.list(spec.labels.session) == []


@pytest.mark.parametrize(("suite", "refused"), [
    ("isolation-disk", "attack-disk /var/tmp"),
    ("isolation-syscall-fork", "attack-syscall fork /dev/shm"),
])
def test_an_isolation_suite_unikraft_cannot_run_is_refused_before_any_instance(
    runtime_dir: Path, tmp_path: Path, suite: str, refused: str,
) -> None:
    db = tmp_path / "refused.duckdb"
    run = labtui("run", suite, "--backend", "unikraft", "--profile", "quick", "--db", str(db))
    assert run.returncode == 2
    assert run.stderr.startswith(f"labtui run: unikraft backend cannot run probe {refused}")
    assert run.stderr.count("\n") == 1
    assert not db.exists()  # refused before the session: no store, no instance, not even the 'alone' worker


def test_isolation_suite_measures_the_worker_beside_a_unikraft_attacker(runtime_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "iso.duckdb"
    run = labtui("run", "isolation-cpu", "--backend", "unikraft", "--profile", "quick", "--db", str(db),
                 "--set", "suite.repetitions=1", "--set", 'isolation.placements=["alone", "same-thread"]')
    assert run.returncode == 0, run.stderr + run.stdout
    with duckdb.connect(str(db), read_only=True) as store:
        rows = dict(store.execute("SELECT placement, value FROM results WHERE metric = 'inserts_2000_s'").fetchall())
        assert set(rows) == {"alone", "same-thread"} and all(v > 0 for v in rows.values())
        attackers = store.execute("SELECT count(*) FROM instances WHERE role = 'attacker'").fetchone()
        assert attackers == (1,)


def test_probe_initrd_digest_follows_the_probe_and_the_shim(monkeypatch: pytest.MonkeyPatch) -> None:
    before = elfprobes.digest("sqlite")
    assert elfprobes.digest("attack-cpu") != before
    monkeypatch.setattr(elfprobes, "FLAGS", (*elfprobes.FLAGS, "-g"))
    assert elfprobes.digest("sqlite") != before
