"""gVisor (runsc) as the docker backend's runtime: ``--set backend.runtime=runsc`` end to end.

A real ``labtui run docker-boot-scaling --profile quick`` runs on the local engine while every lab
container is inspected: each of the run's must have ``HostConfig.Runtime`` runsc and, on the host,
gVisor's sandbox (``runsc-sandbox``) as its init process, where runc would show the probe itself.
The tests that need runsc are skipped, with the reason, only when runsc is not installed (or no
engine answers) and LABTUI_CI is unset: CI installs runsc and registers it with dockerd (.ci/run).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import aiodocker
import cli_run
import duckdb
import pytest

from labtui.backends.base import open_backend
from labtui.hosts.local import LocalHost

SOCKET = "/var/run/docker.sock"


def _need_runsc(*, runsc: bool = True) -> None:
    """Skip (fail under CI) unless an engine answers and (with runsc) runsc is installed."""
    missing = [why for ok, why in (
        (Path(SOCKET).is_socket(), f"no Docker engine socket at {SOCKET}: start dockerd"),
        (not runsc or shutil.which("runsc") is not None, "runsc is not installed (apt-get install runsc; register it "
                                                         "with dockerd as .ci/run does)"),
    ) if not ok]
    if missing:
        if os.environ.get("LABTUI_CI"):
            pytest.fail(f"CI installs what this needs, yet: {'; '.join(missing)}")
        pytest.skip("; ".join(missing))


def _init_argv0(pid: int) -> str | None:
    """The program name of a host process (None when it is gone or not started)."""
    if pid <= 0:
        return None
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    return os.path.basename(argv[0].decode()) or None


async def _watch(seen: dict[str, tuple[str, str, str]], stop: asyncio.Event) -> None:
    """Until stop: every running lab container, id -> (session label, HostConfig.Runtime, its init on the host)."""
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        while not stop.is_set():
            for container in await docker.containers.list(filters={"label": ["labtui.session"]}):
                if container.id in seen:
                    continue
                try:
                    found = await container.show()
                except aiodocker.DockerError:
                    continue  # removed meanwhile
                if (argv0 := _init_argv0(int((found.get("State") or {}).get("Pid") or 0))) is not None:
                    seen[container.id] = (found["Config"]["Labels"]["labtui.session"],
                                          found["HostConfig"].get("Runtime", ""), argv0)
            await asyncio.sleep(0.1)


async def test_boot_scaling_runs_under_gvisor_and_records_the_runtime(tmp_path, env):
    _need_runsc()
    db = tmp_path / "lab.duckdb"
    seen: dict[str, tuple[str, str, str]] = {}
    stop = asyncio.Event()
    watcher = asyncio.create_task(_watch(seen, stop))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "labtui", "run", "docker-boot-scaling", "--profile", "quick",
        "--set", "backend.runtime=runsc", "--set", "sampling.quiet_timeout_s=0", "--db", str(db),
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    out, err = await proc.communicate()
    stop.set()
    await watcher
    assert proc.returncode == 0, f"{out.decode()}\n{err.decode()}"

    con = duckdb.connect(str(db), read_only=True)
    (session, status, config), = con.execute("select session_id, status, config from sessions").fetchall()
    assert status == "completed"
    assert json.loads(config)["backend_settings"] == {"runtime": "runsc"}
    (version, isolation), = con.execute("select backend_version, isolation from hosts").fetchall()
    assert isolation.startswith("runsc+") and ", runtime runsc --platform=" in version
    steps = con.execute("select step, count(*), min(value) from results where metric = 'boot_time' "
                        "group by step order by step").fetchall()
    assert [s for s, _, _ in steps] == [0, 1, 2] and all(n >= 1 and low > 0 for _, n, low in steps)
    con.close()

    ours = [(runtime, init) for label, runtime, init in seen.values() if label == session]
    assert len(ours) >= 5, f"saw only {len(ours)} of the run's containers running: {seen}"
    assert all(runtime == "runsc" and init == "runsc-sandbox" for runtime, init in ours), ours


async def test_backends_lists_the_runtimes_the_engine_offers(runtime_dir, env):
    _need_runsc()
    found = await open_backend("docker", LocalHost()).check()
    assert found.usable, found.reason
    assert "runtimes: " in found.reason and "runc" in found.reason and "runsc --platform=" in found.reason
    listed = cli_run.labtui("backends", env={**env, "COLUMNS": "300"})
    (docker_row,) = [line for line in listed.stdout.splitlines() if line.startswith("│ docker ")]
    assert found.reason in docker_row, listed.stdout


def test_a_runtime_the_engine_lacks_fails_the_run_before_any_container(tmp_path, env):
    _need_runsc(runsc=False)
    db = tmp_path / "lab.duckdb"
    proc = cli_run.labtui("run", "docker-boot-scaling", "--profile", "quick", "--set", "backend.runtime=no-such-runtime",
                          "--db", str(db), env=env)
    assert proc.returncode != 0
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "the engine has no runtime 'no-such-runtime'" in said and "daemon.json" in said, said
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("select status from sessions").fetchall() == [("failed",)]
    assert con.execute("select count(*) from instances").fetchone() == (0,)
    con.close()


def test_a_backend_without_runtimes_refuses_the_setting(tmp_path, env):
    proc = cli_run.labtui("run", "boot-scaling", "--profile", "quick", "--set", "backend.runtime=runsc",
                          "--db", str(tmp_path / "lab.duckdb"), env=env)
    assert proc.returncode == 2
    assert "backend process has no setting backend.runtime (set to 'runsc')" in proc.stderr
    assert not (tmp_path / "lab.duckdb").exists()
