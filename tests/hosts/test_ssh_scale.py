"""Many SSH hosts at once: handshakes and session starts are paced, a slow runner start is retried.

Real sshd on 127.0.0.50-55 (tests/sshd_fixture.py).  How fast 32 hosts go is measured in
tests/perf/bench_hosts32.py; these tests check the behaviour, not the speed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_fixture import Sshd, host_table, sshd_available, start_sshd, write_key

from labtui.hosts import ssh
from labtui.hosts.config import load_lab_config
from labtui.hosts.ssh import SSHHost
from labtui.hosts.ssh_runner import Runner

pytestmark = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")

HOSTS = 6
WAIT_S = 300.0


@pytest.fixture(scope="module")
def sshd_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[Sshd]]]:
    tmp = tmp_path_factory.mktemp("scale")
    write_key(tmp / "client_key")
    servers: list[Sshd] = []
    try:
        for i in range(HOSTS):
            servers.append(start_sshd(tmp / f"s{i}", f"127.0.0.{50 + i}", tmp / "client_key.pub"))
        (tmp / "known_hosts").write_text("".join(
            f"[{s.address}]:{s.port} " + " ".join(s.host_key.export_public_key("openssh").decode().split()[:2]) + "\n"
            for s in servers))
        yield tmp, servers
    finally:
        for s in servers:
            s.stop()


def hosts(tmp: Path, servers: list[Sshd], **extra: object) -> list[SSHHost]:
    config = tmp / "labtui.toml"
    config.write_text("".join(host_table(f"h{i}", s, tmp, **extra) for i, s in enumerate(servers)))
    return [SSHHost(cfg) for cfg in load_lab_config(config).hosts.values()]


async def test_handshakes_and_session_starts_take_turns_over_all_hosts(
    sshd_pool: tuple[Path, list[Sshd]], monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp, servers = sshd_pool
    monkeypatch.setenv("LABTUI_SSH_HANDSHAKES", "2")
    under_way, most = 0, 0
    real_connect, real_start = ssh.asyncssh.connect, Runner.start

    async def counted(inner, *args, **kwargs):
        nonlocal under_way, most
        under_way += 1
        most = max(most, under_way)
        try:
            await asyncio.sleep(0.2)  # a handshake that takes a while: the others must wait their turn
            return await inner(*args, **kwargs)
        finally:
            under_way -= 1

    monkeypatch.setattr(ssh.asyncssh, "connect", lambda *a, **k: counted(real_connect, *a, **k))
    monkeypatch.setattr(Runner, "start", classmethod(lambda cls, *a: counted(real_start.__func__, cls, *a)))
    opened = hosts(tmp, servers)
    try:
        results = await asyncio.wait_for(
            asyncio.gather(*(h.run(["sh", "-c", "echo $SSH_CONNECTION"]) for h in opened for _ in range(3))), WAIT_S)
    finally:
        await asyncio.gather(*(h.close() for h in opened))
    assert sorted({r.stdout.split()[2] for r in results}) == sorted(s.address for s in servers)
    assert most == 2  # never more than the bound at once, and the bound was reached


async def test_a_slow_runner_start_is_tried_again_with_a_longer_timeout(
    sshd_pool: tuple[Path, list[Sshd]], monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp, servers = sshd_pool
    starts = []
    real_start = Runner.start

    async def first_hangs(cls, conn, launch):
        starts.append(1)
        if len(starts) == 1:
            await asyncio.sleep(WAIT_S)  # the login shell never answers in time
        return await real_start.__func__(cls, conn, launch)

    monkeypatch.setattr(Runner, "start", classmethod(first_hangs))
    (host,) = hosts(tmp, servers[:1], connect_timeout_s=3)
    try:
        result = await asyncio.wait_for(host.run(["echo", "slow but there"]), WAIT_S)
    finally:
        await host.close()
    assert result.stdout == "slow but there\n" and len(starts) == 2


async def test_a_runner_start_that_never_answers_fails_after_its_attempts(
    sshd_pool: tuple[Path, list[Sshd]], monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp, servers = sshd_pool

    async def never(cls, conn, launch):
        await asyncio.sleep(WAIT_S)

    monkeypatch.setattr(Runner, "start", classmethod(never))
    (host,) = hosts(tmp, servers[:1], connect_timeout_s=2)
    try:
        with pytest.raises(ssh.HostError, match=r"host h0: cannot start a command runner: timed out \(3 attempts"):
            await asyncio.wait_for(host.run(["true"]), WAIT_S)
    finally:
        await host.close()
