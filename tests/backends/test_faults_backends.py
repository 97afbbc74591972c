"""Fault injection on real backends: labtui, the Docker engine, an sshd or a command dies or hangs mid-run.

Every test runs `labtui run` as a real subprocess into a real DuckDB file, injects
the fault from outside (SIGKILL, a hanging simulated command), then checks what an
admin relies on: the run ends within a bounded time with an error naming the
culprit, the store opens with every completed step's results, and
`labtui cleanup --orphans` ends whatever the fault left behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
import pytest
from cli_run import labtui
from simulators.fakehost import start_fake_host, write_lab
from sshd_fixture import SSHD, Sshd, host_table, sshd_available, start_sshd, write_key

from labtui.core.liveness import sessions_of
from labtui.suites import SuiteError, load_suite

DOCKER_SOCKET = Path("/var/run/docker.sock")
#: How CI (.ci/run) starts the Docker engine; a test that kills dockerd restarts it the same way.
DOCKERD = ["dockerd", "--host=unix:///var/run/docker.sock"]

needs_docker = pytest.mark.skipif(not DOCKER_SOCKET.is_socket(), reason=f"no Docker engine socket at {DOCKER_SOCKET}")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="qemu-system-x86_64 not installed")


def start_run(*args: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    """`labtui run ARGS` in the background, its output to log."""
    with open(log, "wb") as out:
        return subprocess.Popen([sys.executable, "-m", "labtui", "run", *args], env=env, stdout=out, stderr=out)


def instances(env: dict[str, str], *target: str) -> dict[str, int]:
    """Live labtui instances per session on the target (--backend B [--host H])."""
    out = labtui("instances", *target, "--format", "json", env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    counts: dict[str, int] = {}
    for record in json.loads(out.stdout):
        counts[record["session"]] = counts.get(record["session"], 0) + 1
    return counts


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.2)


def running_session(env: dict[str, str], proc: subprocess.Popen, timeout: float = 60) -> str:
    """The id of the session proc runs: the running-lock (labtui.core.liveness) its process holds."""
    wait_for(lambda: proc.poll() is not None or sessions_of(proc.pid), timeout, "the session's running-lock")
    assert proc.poll() is None, "the run ended before it started"
    (session,) = sessions_of(proc.pid)
    return session


def live(env: dict[str, str], target: tuple[str, ...], sid: str) -> int:
    """How many instances of session sid are alive on the target."""
    return instances(env, *target, "--session", sid).get(sid, 0)


def cleanup_own(env: dict[str, str], target: tuple[str, ...], db: Path, sid: str) -> subprocess.CompletedProcess:
    """End what session sid left behind, and nothing else.

    `cleanup --orphans` must count the session among the orphans; that is checked
    with a dry run (which touches nothing), and then only this session is
    destroyed: tests running in parallel keep their instances on this machine.
    """
    dry = labtui("cleanup", "--orphans", "--dry-run", *target, "--db", str(db), env=env)
    assert dry.returncode == 0 and sid in dry.stdout.split("to destroy", 1)[-1], dry.stdout + dry.stderr
    return labtui("cleanup", "--session", sid, *target, "--db", str(db), env=env)


def run_until(env: dict[str, str], target: tuple[str, ...], proc: subprocess.Popen, count: int) -> str:
    """Wait until proc's session has count live instances on the target; its session id."""
    sid = running_session(env, proc)
    wait_for(lambda: proc.poll() is not None or live(env, target, sid) >= count, 120, f"{count} instances of {sid}")
    assert proc.poll() is None, "the run ended early"
    return sid


def completed_steps(db: Path) -> tuple[int, int]:
    """(steps that ended ok, of those the ones with a result), read from a closed store."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        steps = con.execute("select count(*) from steps where ok").fetchone()[0]
        with_results = con.execute(
            "select count(*) from steps s where ok and exists (select 1 from results r where r.session_id = s.session_id"
            " and r.repetition = s.repetition and r.step = s.step)"
        ).fetchone()[0]
    finally:
        con.close()
    return steps, with_results


def session_row(db: Path) -> tuple[str, str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        ((sid, status),) = con.execute("select session_id, status from sessions").fetchall()
    finally:
        con.close()
    return sid, status


# -- 1. kill -9 of labtui mid-run ---------------------------------------------------------------

KILL_RUNS = {
    "docker": pytest.param(
        "docker", "docker-boot-scaling", ["--set", "scale.per_step=3"], 9, marks=needs_docker, id="docker"
    ),
    "unikraft": pytest.param(
        "unikraft", "unikraft-boot-scaling", ["--set", "scale.per_step=2"], 6, marks=needs_qemu, id="unikraft"
    ),
}


@pytest.mark.parametrize(("backend", "suite", "sets", "enough"), list(KILL_RUNS.values()))
def test_kill_9_mid_run_keeps_completed_steps_and_cleanup_ends_orphans(
    backend: str, suite: str, sets: list[str], enough: int, tmp_path: Path, env: dict[str, str]
) -> None:
    db, target = tmp_path / "x.duckdb", ("--backend", backend)
    proc = start_run(
        suite, *target, "--db", str(db), "--set", "scale.steps=40", "--set", "suite.repetitions=1",
        "--set", "sampling.quiet_timeout_s=0", *sets, env=env, log=tmp_path / "run.log",
    )
    try:
        sid = run_until(env, target, proc, enough)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, (tmp_path / "run.log").read_text()
    assert live(env, target, sid) >= enough  # the crash left them behind
    steps, with_results = completed_steps(db)  # the store opens
    assert steps >= 1 and with_results == steps
    out = cleanup_own(env, target, db, sid)
    assert out.returncode == 0 and "destroyed" in out.stdout, out.stdout + out.stderr
    assert live(env, target, sid) == 0
    assert session_row(db) == (sid, "crashed")


# -- 2. the Docker engine killed mid-run --------------------------------------------------------


def docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30, check=False).returncode == 0


class Dockerd:
    """The running Docker engine, which a test may SIGKILL and then restart.

    An engine under systemd (docker.service) is restarted by systemd; any other is
    started again with the command line CI (.ci/run) uses.
    """

    PID_FILE = Path("/var/run/docker.pid")

    def __init__(self) -> None:
        self.killed: int | None = None
        self.supervised = False

    def kill(self) -> None:
        pid = int(self.PID_FILE.read_text())
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"dockerd")
        self.supervised = "docker.service" in Path(f"/proc/{pid}/cgroup").read_text()
        os.kill(pid, signal.SIGKILL)
        self.killed = pid

    def restart(self) -> None:
        """Start dockerd again (once) after kill(), and wait until it answers."""
        if self.killed is None:
            return
        killed, self.killed = self.killed, None
        wait_for(lambda: not _alive(killed), 30, "the killed dockerd to go")
        if self.supervised:
            wait_for(docker_answers, 90, "systemd to restart dockerd")
            return
        if self.PID_FILE.exists() and self.PID_FILE.read_text().strip() == str(killed):
            self.PID_FILE.unlink()  # stale: a new dockerd refuses to start while a zombie holds that pid
        # The killed engine's containerd may still be going away: a new dockerd that finds it dying
        # gives up ("timeout waiting for containerd to start"), so start it again until one answers.
        for _ in range(3):
            with open("/tmp/dockerd.log", "ab") as log:
                engine = subprocess.Popen(DOCKERD, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                          start_new_session=True)
            wait_for(lambda e=engine: e.poll() is not None or docker_answers(), 90, "dockerd to answer or exit")
            if engine.poll() is None:
                return
            time.sleep(2)
        raise AssertionError("dockerd did not start again: see /tmp/dockerd.log")


def _alive(pid: int) -> bool:
    """Whether pid runs (a zombie waiting for its parent does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.fixture
def dockerd() -> Iterator[Dockerd]:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("kills the machine's one dockerd, which the Docker tests of the other workers need: "
                    "run it serially (python -m pytest -m serial, as the README's test command does after -n 2)")
    if not Dockerd.PID_FILE.exists() or not docker_answers():
        pytest.skip(f"no running dockerd with a pid file at {Dockerd.PID_FILE}")
    engine = Dockerd()
    try:
        yield engine
    finally:
        engine.restart()


@pytest.mark.serial
@needs_docker
def test_docker_engine_killed_mid_run_fails_the_run_in_bounded_time(
    dockerd: Dockerd, tmp_path: Path, env: dict[str, str]
) -> None:
    db, target, log = tmp_path / "x.duckdb", ("--backend", "docker"), tmp_path / "run.log"
    proc = start_run(
        "docker-boot-scaling", *target, "--db", str(db), "--set", "scale.steps=200", "--set", "scale.per_step=2",
        "--set", "suite.repetitions=1", "--set", "sampling.quiet_timeout_s=0", env=env, log=log,
    )
    try:
        sid = run_until(env, target, proc, 6)
        dockerd.kill()
        killed_at = time.monotonic()
        proc.wait(timeout=90)
        took = time.monotonic() - killed_at
    finally:
        proc.kill()
        proc.wait()
    output = log.read_text()
    print(f"run ended {took:.1f} s after dockerd was killed")
    assert proc.returncode == 1, output
    assert "failed:" in output and "Cannot connect to Docker Engine" in output and "docker on host local" in output
    assert session_row(db) == (sid, "failed")
    steps, with_results = completed_steps(db)
    assert steps >= 1 and with_results == steps
    dockerd.restart()
    # The restarted engine keeps the old containers: without live-restore (Docker's default) it has stopped
    # them, with it they still run.  Either way they are listed until cleanup removes them.
    live_restore = subprocess.run(["docker", "info", "--format", "{{.LiveRestoreEnabled}}"], capture_output=True,
                                  text=True, timeout=30, check=False).stdout.strip() == "true"
    left = json.loads(labtui("instances", *target, "--session", sid, "--format", "json", env=env).stdout)
    assert len(left) >= 6, left
    assert any(r["state"] == "running" for r in left) is live_restore, left
    out = cleanup_own(env, target, db, sid)
    assert out.returncode == 0 and "destroyed" in out.stdout, out.stdout + out.stderr
    assert live(env, target, sid) == 0


# -- 3. an sshd killed mid-run ------------------------------------------------------------------


def kill_sshd(server: Sshd) -> None:
    """SIGKILL the sshd listener and its per-connection sshd processes, not the commands they started.

    (Killing those too would be a host dying; it could also kill a login shell's start-up files
    mid-way, e.g. a pyenv rehash holding its lock.)
    """
    for pid in [server.proc.pid, *server.descendants()]:
        try:
            if Path(f"/proc/{pid}/comm").read_text().startswith("sshd"):
                os.kill(pid, signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError):
            pass


def restart_sshd(server: Sshd) -> Sshd:
    """Start sshd again from the same config: same address, port and host key."""
    with open(server.directory / "sshd.log", "ab") as log:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(server.directory / "sshd_config")], stdout=log,
                                stderr=log, start_new_session=True)

    def listening() -> bool:
        assert proc.poll() is None, (server.directory / "sshd.log").read_text()
        try:
            socket.create_connection((server.address, server.port), timeout=0.5).close()
            return True
        except OSError:
            return False

    wait_for(listening, 10, f"sshd on {server.address}:{server.port}")
    return Sshd(server.address, server.port, server.directory, server.host_key, proc)


@pytest.fixture
def ssh_lab(tmp_path: Path) -> Iterator[tuple[Path, list[Sshd]]]:
    """A lab config with host h31: a real sshd on 127.0.0.31 (the list holds it, and any restarted one)."""
    if not sshd_available():
        pytest.skip(f"{SSHD} not installed (apt-get install openssh-server)")
    write_key(tmp_path / "client_key")
    servers = [start_sshd(tmp_path / "sshd31", "127.0.0.31", tmp_path / "client_key.pub")]
    key = servers[0].host_key.export_public_key("openssh").decode().split()
    (tmp_path / "known_hosts").write_text(f"[127.0.0.31]:{servers[0].port} {key[0]} {key[1]}\n")
    config = tmp_path / "labtui.toml"
    config.write_text(host_table("h31", servers[0], tmp_path))
    try:
        yield config, servers
    finally:
        for server in servers:
            server.stop()


def test_sshd_killed_mid_run_fails_the_run_and_cleanup_ends_leftovers(
    ssh_lab: tuple[Path, list[Sshd]], tmp_path: Path, env: dict[str, str]
) -> None:
    config, servers = ssh_lab
    db, log = tmp_path / "x.duckdb", tmp_path / "run.log"
    target = ("--backend", "process", "--host", "h31", "--config", str(config))
    proc = start_run(
        "boot-scaling", *target, "--db", str(db), "--set", "scale.steps=200", "--set", "scale.per_step=5",
        "--set", "suite.repetitions=1", "--set", "sampling.settle_s=0.1", "--set", "sampling.quiet_timeout_s=0",
        env=env, log=log,
    )
    try:
        sid = run_until(env, target, proc, 15)
        kill_sshd(servers[0])
        killed_at = time.monotonic()
        proc.wait(timeout=90)
        took = time.monotonic() - killed_at
    finally:
        proc.kill()
        proc.wait()
    output = log.read_text()
    print(f"run ended {took:.1f} s after sshd was killed")
    assert proc.returncode == 1, output
    assert "failed:" in output and "host h31:" in output, output
    assert session_row(db) == (sid, "failed")
    steps, with_results = completed_steps(db)
    assert steps >= 1 and with_results == steps
    servers.append(restart_sshd(servers[0]))
    left = instances(env, *target).get(sid, 0)
    print(f"{left} processes of the session left on h31")
    out = cleanup_own(env, target, db, sid)
    assert out.returncode == 0, out.stdout + out.stderr
    assert live(env, target, sid) == 0


# -- 4. a backend command that hangs -----------------------------------------------------------


def test_operation_timeout_is_a_checked_suite_key() -> None:
    assert load_suite("zone-creation").operation_timeout_s == 7200.0
    assert load_suite("zone-creation", ["suite.operation_timeout_s=4"]).operation_timeout_s == 4.0
    with pytest.raises(SuiteError, match=r"suite\.operation_timeout_s.*a number from 1 to 86400"):
        load_suite("zone-creation", ["suite.operation_timeout_s=0"])


HANGS = {
    # zone 1's create: its own deadline (the suite's operation_timeout_s) names the command
    "boot": r"zones backend on host zh32: zoneadm -z labtui-\S+-in1 boot timed out after [0-4]\.\d s and was killed",
    # a destroy: the engine's bound (operation_timeout_s + 2 s per instance), then the force path, bounded again
    "halt": r"zones destroy of 1 instance\(s\) on zh32 did not finish within 6 s",
}


@pytest.mark.skipif(not sshd_available(), reason=f"{SSHD} not installed (apt-get install openssh-server)")
@pytest.mark.parametrize("command", list(HANGS))
def test_a_hanging_zoneadm_ends_the_run_with_a_timeout_naming_it(command: str, tmp_path: Path, env: dict[str, str]) -> None:
    (tmp_path / "keys").mkdir()
    write_key(tmp_path / "keys" / "client_key")
    illumos = start_fake_host(tmp_path / "illumos", "zh32", "127.0.0.32", "zones", tmp_path / "keys" / "client_key.pub")
    try:
        config = write_lab(tmp_path, [illumos], tmp_path / "keys")
        illumos.knobs(hang=[command])  # `zoneadm -z Z <command>` never returns
        db, target = tmp_path / "x.duckdb", ("--backend", "zones", "--host", "zh32", "--config", str(config))
        out = labtui("run", "zone-creation", *target, "--db", str(db), "--set", "scale.steps=1",
                     "--set", "suite.operation_timeout_s=4", "--set", "sampling.quiet_timeout_s=0", env=env)
        assert out.returncode == 1, out.stdout + out.stderr
        # the error names the bound that ended it: the suite's 4 s, not the 60 s / 120 s defaults
        assert re.search("failed: BackendError: " + HANGS[command], out.stderr), out.stderr
        sid, status = session_row(db)
        assert status == "failed"
        illumos.knobs()
        # a create that timed out undoes its zone; a zone that would not halt is left for cleanup
        assert live(env, target, sid) == (0 if command == "boot" else 1)
        cleanup = labtui("cleanup", "--session", sid, *target, "--db", str(db), env=env)
        assert cleanup.returncode == 0 and live(env, target, sid) == 0, cleanup.stdout + cleanup.stderr
    finally:
        illumos.server.stop()
