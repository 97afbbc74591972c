"""A session's SSH host lost mid-run: the sampler notices, reconnects once, then the session fails;
with several hosts, the other hosts' sessions go on.

The sshd on 127.0.0.45 is killed while the suite waits in a long settle pause
(no command of the experiment is running), so only the resource sampler can
notice.  CI needs the openssh-server package (sshd) and a C compiler (cc) for
the process backend's agent, as tests/hosts/test_ssh_host.py does.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from sshd_fixture import Sshd, host_table, sshd_available, start_sshd, write_key

from labtui.backends.base import open_backend
from labtui.core.events import Log, SessionEnded, StepStarted
from labtui.core.liveness import sessions_of
from labtui.engine import SessionRunner
from labtui.hosts import get_host
from labtui.suites import load_suite

pytestmark = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")

#: Seconds to wait for a condition: generous, since speed is not what these tests check (tests/perf does).
WAIT_S = 300.0


def wait_until(condition, what: str, proc: subprocess.Popen | None = None) -> None:
    """Poll condition() until true; fail naming what after WAIT_S, or at once if proc ended meanwhile."""
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"labtui ended ({proc.returncode}) while waiting for {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"still waiting after {WAIT_S:g} s for {what}")
        time.sleep(0.1)


def samplers(server: Sshd) -> list[int]:
    """Resource sampler loops running on server (one per session sampling that host)."""
    found = []
    for pid in server.descendants():
        try:
            if b"stat meminfo loadavg" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            pass
    return found


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sshd]:
    """An sshd on 127.0.0.45 named h45 in a lab config; stopped at the end whatever happened."""
    write_key(tmp_path / "client_key")
    started = start_sshd(tmp_path / "sshd45", "127.0.0.45", tmp_path / "client_key.pub")
    try:
        words = started.host_key.export_public_key("openssh").decode().split()
        (tmp_path / "known_hosts").write_text(f"[{started.address}]:{started.port} {words[0]} {words[1]}\n")
        config = tmp_path / "labtui.toml"
        config.write_text(host_table("h45", started, tmp_path, keepalive_s=1))
        monkeypatch.setenv("LABTUI_CONFIG", str(config))
        monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "rt"))
        yield started
    finally:
        started.stop()


async def test_host_lost_mid_run_fails_the_session_naming_host_and_reconnect(server: Sshd) -> None:
    suite = load_suite("boot-scaling", ["scale.steps=1", "scale.per_step=1", "suite.repetitions=1",
                                        "sampling.quiet_timeout_s=0", "sampling.interval_s=0.2",
                                        "sampling.settle_s=3600"])
    host = get_host("h45")
    runner = SessionRunner(suite, open_backend("process", host), host)
    events = runner.bus.subscribe()
    task = asyncio.create_task(runner.run())
    seen: list[object] = []
    try:
        while not any(isinstance(e, StepStarted) for e in seen):  # the baseline step: settling for an hour
            event = await asyncio.wait_for(events.get(), 120)
            assert event is not None, f"session ended before its first step: {seen}"
            seen.append(event)
        await asyncio.sleep(0.5)
        server.signal_all(signal.SIGKILL)
        # generous, yet far shorter than the settle pause: only noticing the lost host ends the session
        status = await asyncio.wait_for(task, WAIT_S)
    finally:
        if not task.done():
            task.cancel()
        await host.close()
    while (event := events.get_nowait()) is not None:
        seen.append(event)
    assert status == "failed"
    logs = [e for e in seen if isinstance(e, Log)]
    lost = [e for e in logs if e.category == "host-lost"]
    assert lost and "host h45 lost" in lost[0].message and "reconnecting" in lost[0].message
    ended = [e for e in seen if isinstance(e, SessionEnded)]
    assert len(ended) == 1 and ended[0].status == "failed"
    assert ended[0].message.startswith("HostLost: host h45 lost")
    assert "reconnecting failed" in ended[0].message and "gave up after 4 attempts" in ended[0].message


def test_one_of_two_hosts_lost_ends_its_session_and_the_other_goes_on(tmp_path: Path) -> None:
    write_key(tmp_path / "client_key")
    servers = {name: start_sshd(tmp_path / name, address, tmp_path / "client_key.pub")
               for name, address in (("h46", "127.0.0.46"), ("h47", "127.0.0.47"))}
    db = tmp_path / "lab.duckdb"
    env = {**os.environ, "LABTUI_CONFIG": str(tmp_path / "labtui.toml"), "LABTUI_RUNTIME_DIR": str(tmp_path / "rt")}
    proc = None
    try:
        (tmp_path / "known_hosts").write_text("".join(
            f"[{s.address}]:{s.port} " + " ".join(s.host_key.export_public_key("openssh").decode().split()[:2]) + "\n"
            for s in servers.values()))
        (tmp_path / "labtui.toml").write_text(
            "".join(host_table(name, s, tmp_path, keepalive_s=1) for name, s in servers.items()))
        proc = subprocess.Popen(
            [sys.executable, "-m", "labtui", "run", "boot-scaling", "--host", "h46", "--host", "h47", "--db", str(db),
             "--set", "scale.steps=2", "--set", "scale.per_step=1", "--set", "suite.repetitions=1",
             "--set", "sampling.quiet_timeout_s=0", "--set", "sampling.interval_s=0.2", "--set", "sampling.settle_s=3"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_until(lambda: len(sessions_of(proc.pid)) >= 2, "both sessions to start", proc)
        wait_until(lambda: all(samplers(s) for s in servers.values()), "both sessions to sample their hosts", proc)
        servers["h46"].signal_all(signal.SIGKILL)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        for server in servers.values():
            server.stop()
    assert proc.returncode == 1, out + err  # the worst of the two sessions: failed
    con = duckdb.connect(str(db), read_only=True)
    try:
        ended = dict(con.execute("select host, status from sessions").fetchall())
        message = con.execute("select message from sessions where host = 'h46'").fetchone()[0]
        steps = con.execute("select s.host, count(*) from steps t join sessions s using (session_id) "
                            "where t.ok group by all order by 1").fetchall()
    finally:
        con.close()
    assert ended == {"h46": "failed", "h47": "completed"}
    # the sampler's HostLost, or the experiment's own next command failing to reconnect: either names h46
    assert "host h46" in message and ("HostLost" in message or "gave up after 4 attempts" in message), message
    assert dict(steps)["h47"] == 3  # the other host ran its baseline and both steps to the end
    assert "on h47 completed" in err and "on h46 failed" in err
