"""SSHHost against real OpenSSH sshd processes on 127.0.0.2 and 127.0.0.3.

CI needs the openssh-server package (sshd); the fixture writes its own config,
host keys and authorized_keys under tmp and runs sshd in the foreground.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncssh
import duckdb
import pytest
from cli_run import labtui
from sshd_fixture import Sshd, host_table, sshd_available, start_sshd, write_key

from labtui.backends.base import InstanceSpec, Labels, open_backend
from labtui.hosts import CommandTimeout, HostError, get_host, hostkeys, illumos, known_hosts, remote_sampler, ssh, ssh_transfer
from labtui.hosts.config import ConfigError, load_lab_config
from labtui.hosts.local import LocalHost
from labtui.hosts.ssh import MAX_CHANNELS, SSHHost, remote_command

pytestmark = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")


# -- fixtures -----------------------------------------------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the client key the servers accept."""
    tmp = tmp_path_factory.mktemp("keys")
    write_key(tmp / "client_key")
    return tmp


@pytest.fixture(scope="module", params=[True, False], ids=["sftp", "no-sftp"])
def servers(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            keys: Path) -> Iterator[dict[str, Sshd]]:
    """h2 on 127.0.0.2 and h3 on 127.0.0.3, shared by the module's tests: every test runs against
    servers with the SFTP subsystem and again against servers without it (a hardened host)."""
    started: dict[str, Sshd] = {}
    try:
        for name, address in (("h2", "127.0.0.2"), ("h3", "127.0.0.3")):
            started[name] = start_sshd(tmp_path_factory.mktemp(name), address, keys / "client_key.pub",
                                       sftp=request.param)
        yield started
    finally:
        for server in started.values():
            server.stop()


class Lab:
    """A lab config in tmp naming the servers; hosts it opened are closed at the end."""

    def __init__(self, tmp: Path, keys: Path, servers: dict[str, Sshd]) -> None:
        self.tmp, self.servers, self.opened = tmp, servers, []
        for suffix in ("", ".pub"):
            (tmp / f"client_key{suffix}").write_bytes((keys / f"client_key{suffix}").read_bytes())
        os.chmod(tmp / "client_key", 0o600)
        self.config = tmp / "labtui.toml"
        self.write()

    def write(self, **extra: dict[str, object]) -> None:
        self.config.write_text(
            "".join(host_table(n, s, self.tmp, **extra.get(n, {})) for n, s in self.servers.items())
        )

    def trust_all(self) -> None:
        lines = [
            f"[{s.address}]:{s.port} {s.host_key.export_public_key('openssh').decode().split()[0]} "
            f"{s.host_key.export_public_key('openssh').decode().split()[1]}\n"
            for s in self.servers.values()
        ]
        (self.tmp / "known_hosts").write_text("".join(lines))

    def host(self, name: str = "h2") -> SSHHost:
        host = get_host(name)
        assert isinstance(host, SSHHost)
        self.opened.append(host)
        return host

    def env(self) -> dict[str, str]:
        return {**os.environ, "LABTUI_CONFIG": str(self.config), "LABTUI_RUNTIME_DIR": str(self.tmp / "rt"),
                "COLUMNS": "200"}


@pytest.fixture
async def ssh_lab(tmp_path: Path, keys: Path, servers: dict[str, Sshd], monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Lab]:
    monkeypatch.setenv("LABTUI_CONFIG", str(tmp_path / "labtui.toml"))
    ssh_lab = Lab(tmp_path, keys, servers)
    ssh_lab.trust_all()
    try:
        yield ssh_lab
    finally:
        for host in ssh_lab.opened:
            await host.close()


@pytest.fixture
def own_sshd(tmp_path: Path, keys: Path) -> Iterator[list[Sshd]]:
    """Servers a test may kill or freeze; stopped at the end whatever happened."""
    started: list[Sshd] = []
    yield started
    for server in started:
        server.stop()


#: Seconds a test waits for a condition before it fails: generous, since how fast is not what these tests check
#: (tests/perf measures speed).  A condition that can also come true by itself (a sleep ending) is given longer.
WAIT_S = 60.0


async def wait_until(condition, what: str, timeout: float = WAIT_S) -> None:
    """Poll condition() until it is true; fail naming what after timeout seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"still waiting after {timeout:g} s for {what}")
        await asyncio.sleep(0.05)


def processes_matching(text: str) -> list[int]:
    """PIDs whose command line contains text."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and text.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            pass
    return [pid for pid in found if pid != os.getpid()]


# -- commands -----------------------------------------------------------------


async def test_run_collects_output_exit_code_and_stderr(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    result = await host.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    with pytest.raises(HostError, match="exited 3: err"):
        result.check()
    seen = (await host.run(["sh", "-c", "echo $SSH_CONNECTION"])).stdout.split()
    assert seen[2:] == ["127.0.0.2", str(ssh_lab.servers["h2"].port)]  # really over SSH to h2


async def test_argv_arrives_intact_and_nothing_is_injected(ssh_lab: Lab) -> None:
    marker = ssh_lab.tmp / "injected"
    nasty = ["a b", "it's", '"q"', "$(touch " + str(marker) + ")", "`touch " + str(marker) + "`",
             "; touch " + str(marker), "x\ny", "", "*", "$HOME", "\\", "--", "ü"]
    result = await ssh_lab.host().run(["printf", "%s\\0", *nasty])
    assert result.stdout.split("\0")[:-1] == nasty
    assert not marker.exists()


async def test_env_and_input(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    result = await host.run(["sh", "-c", 'printf "%s|" "$LAB_X"; cat'], input=b"from stdin", env={"LAB_X": "a b'c"})
    assert result.stdout == "a b'c|from stdin"
    assert (await host.run(["cat"])).stdout == ""  # no input: stdin is closed, not left open


async def test_commands_without_input_reuse_one_runner_not_a_login_shell_each(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    parents = [(await host.run(["sh", "-c", "echo $PPID"], env={"LAB_I": str(i)})).stdout for i in range(5)]
    assert len(set(parents)) == 1  # every command was started by the same long-lived runner
    runner = int(parents[0])
    assert Path(f"/proc/{runner}/cmdline").read_bytes().split(b"\0")[:2] == [b"sh", b"-c"]
    with_input = await host.run(["sh", "-c", "echo $PPID"], input=b"x")
    assert with_input.stdout != parents[0]  # a command with input gets its own session
    assert (await host.run(["sh", "-c", 'echo "$LAB_Y"'], env={"LAB_Y": "a b\nc"})).stdout == "a b\nc\n"
    await host.close()
    await wait_until(lambda: not Path(f"/proc/{runner}").exists(), "closing the host to end its runner")
    assert not list((ssh_lab.tmp / "runtime-h2").glob(".runner-*"))  # and they leave no files behind


async def test_timeout_kills_the_remote_process_group(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    # had the timeout not worked, run() would return when the sleeps end, long after WAIT_S
    with pytest.raises(CommandTimeout, match="timed out after 0.5 s on host h2"):
        await asyncio.wait_for(host.run(["sh", "-c", "sleep 937.25 & sleep 937.5; wait"], timeout=0.5), WAIT_S)
    await wait_until(lambda: not processes_matching("sleep\x00937."), "both sleeps to be killed")
    assert not list((ssh_lab.tmp / "runtime-h2").glob(".runner-*"))  # the killed runner's output files went too


async def test_missing_command_is_a_host_error(ssh_lab: Lab) -> None:
    with pytest.raises(HostError, match="labtui-no-such-command: command not found on host h2"):
        await ssh_lab.host().run(["labtui-no-such-command", "x"])


async def test_stream_yields_lines_and_stopping_early_ends_the_command(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    assert [line async for line in host.stream(["printf", "a\\nb b\\nc\\n"])] == ["a", "b b", "c"]
    async for line in host.stream(["sh", "-c", "echo first; exec sleep 938.5"]):
        assert line == "first"
        break
    await wait_until(lambda: not processes_matching("sleep\x00938.5"), "the abandoned stream's command to end")

    async def stream_all() -> None:
        async for _ in host.stream(["sleep", "938.75"], timeout=0.3):
            pass

    with pytest.raises(CommandTimeout):
        await asyncio.wait_for(stream_all(), WAIT_S)


async def test_file_round_trip_by_sftp_or_over_exec(ssh_lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    """SFTP where sshd offers it, else an exec channel: same result, same modes, nothing left behind."""
    sftp_opened = []
    real_start = asyncssh.SSHClientConnection.start_sftp_client

    def counting(self, *args, **kwargs):
        sftp_opened.append(1)
        return real_start(self, *args, **kwargs)

    monkeypatch.setattr(asyncssh.SSHClientConnection, "start_sftp_client", counting)
    host = ssh_lab.host()
    data = os.urandom(3_000_000)  # many channel windows
    (ssh_lab.tmp / "src.bin").write_bytes(data)
    remote_dir = ssh_lab.tmp / "remote dir" / "-sub"
    remote = str(remote_dir / "copy.bin")
    await host.put_file(str(ssh_lab.tmp / "src.bin"), remote, mode=0o750)
    assert (await host.run(["stat", "-c", "%a %s", remote])).stdout.split() == ["750", str(len(data))]
    assert ssh._TRANSFER[host._transfer_key] == ("sftp" if ssh_lab.servers["h2"].sftp else "exec")
    (ssh_lab.tmp / "small.txt").write_text("second version")
    await host.put_file(str(ssh_lab.tmp / "small.txt"), remote, mode=0o600)  # replaces the file
    assert (await host.run(["stat", "-c", "%a %s", remote])).stdout.split() == ["600", "14"]
    await host.put_file(str(ssh_lab.tmp / "src.bin"), remote, mode=0o755)
    await host.get_file(remote, str(ssh_lab.tmp / "back" / "copy.bin"))
    assert (ssh_lab.tmp / "back" / "copy.bin").read_bytes() == data
    assert sorted(p.name for p in remote_dir.iterdir()) == ["copy.bin"]  # no temporary name left
    # the same file to the same path four times at once (two builds of one program), and back four times
    await asyncio.gather(*(host.put_file(str(ssh_lab.tmp / "src.bin"), remote, mode=0o755) for _ in range(4)))
    await asyncio.gather(*(host.get_file(remote, str(ssh_lab.tmp / "back" / "copy.bin")) for _ in range(4)))
    assert (ssh_lab.tmp / "back" / "copy.bin").read_bytes() == data
    assert sorted(p.name for p in remote_dir.iterdir()) == ["copy.bin"]
    assert sorted(p.name for p in (ssh_lab.tmp / "back").iterdir()) == ["copy.bin"]
    with pytest.raises(HostError, match="host h2: .*(No such file|nope)"):
        await host.get_file(str(ssh_lab.tmp / "nope"), str(ssh_lab.tmp / "nope2"))
    assert not (ssh_lab.tmp / "nope2").exists() and not list(ssh_lab.tmp.glob("nope2*"))
    with pytest.raises(HostError, match="host h2"):
        await host.put_file(str(ssh_lab.tmp / "src.bin"), str(ssh_lab.tmp / "src.bin" / "under-a-file"))
    fresh = ssh_lab.host()  # another host object for the same host: the first one's finding is reused
    before = len(sftp_opened)
    await fresh.put_file(str(ssh_lab.tmp / "small.txt"), str(remote_dir / "again.txt"))
    assert (remote_dir / "again.txt").read_text() == "second version"
    assert (remote_dir / "again.txt").stat().st_mode & 0o777 == 0o644
    # a refusing host is asked for SFTP once, then never again; an offering one once per transfer
    assert len(sftp_opened) - before == (1 if ssh_lab.servers["h2"].sftp else 0)


@pytest.mark.parametrize("size, digest, why", [(5, "0" * 64, "size check failed"), (4, "0" * 64, "SHA-256 check failed")])
async def test_exec_transfer_checks_size_and_hash(ssh_lab: Lab, size: int, digest: str, why: str) -> None:
    """A put over exec whose bytes do not match what was announced leaves neither file nor temporary name."""
    dest, tmp = ssh_lab.tmp / "checked" / "dest.bin", ssh_lab.tmp / "checked" / "dest.bin.partial"
    result = await ssh_lab.host().run(["sh", "-c", ssh_transfer.PUT_SCRIPT, "sh", str(dest), str(tmp), str(size),
                                   digest, "644"], input=b"abcd")
    assert result.returncode == 1 and why in result.stderr
    assert list((ssh_lab.tmp / "checked").iterdir()) == []


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """A unix-socket server's handler that answers one line with it, prefixed ``echo:``."""
    writer.write(b"echo:" + await reader.readline())
    await writer.drain()
    writer.close()


async def test_unix_socket_is_forwarded(ssh_lab: Lab) -> None:
    remote_socket = str(ssh_lab.tmp / "echo.sock")
    server = await asyncio.start_unix_server(echo, remote_socket)
    try:
        local = await ssh_lab.host().unix_socket_path(remote_socket)
        assert local != remote_socket and (os.stat(os.path.dirname(local)).st_mode & 0o777) == 0o700
        reader, writer = await asyncio.open_unix_connection(local)
        writer.write(b"ping\n")
        assert await reader.readline() == b"echo:ping\n"
        writer.close()
    finally:
        server.close()


async def test_a_lost_forward_is_replaced_under_a_new_name(ssh_lab: Lab) -> None:
    remote_socket = str(ssh_lab.tmp / "echo2.sock")
    server = await asyncio.start_unix_server(echo, remote_socket)
    host = ssh_lab.host()
    try:
        first = await host.unix_socket_path(remote_socket)
        for conn in host._conns:  # the connection carrying the forward drops
            conn.conn.abort()
        await wait_until(lambda: not any(conn.alive for conn in host._conns), "the aborted connection to count as lost")
        second = await host.unix_socket_path(remote_socket)
        assert second != first and not os.path.exists(first)  # the stale listener and its socket are gone
        reader, writer = await asyncio.open_unix_connection(second)
        writer.write(b"again\n")
        assert await reader.readline() == b"echo:again\n"
        writer.close()
    finally:
        server.close()


# -- resources ----------------------------------------------------------------


async def test_samples_come_from_one_long_lived_channel(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    sshd = ssh_lab.servers["h2"]

    def loops() -> set[int]:  # sampler loops below this test's sshd: tests on other workers start their own
        return set(processes_matching("stat meminfo loadavg")) & set(sshd.descendants())

    earlier = loops()  # loops of hosts closed by earlier tests, still ending

    def ours() -> set[int]:
        return loops() - earlier

    readings = []
    async for sample in host.samples(0.2):
        readings.append(sample)
        assert len(ours()) == 1  # one sampler loop on the host, however many samples
        if len(readings) == 3:
            break
    await asyncio.sleep(0.1)  # let CPU time pass: a window shorter than one clock tick has no CPU figure
    extra = await host.sample()  # an on-demand reading shares the channel
    assert len(ours()) == 1
    for sample in [*readings, extra]:
        assert sample.host == "h2" and sample.cpu_avail is not None and 0 <= sample.cpu_avail <= 1
        assert 0 < sample.mem_avail <= 1 and sample.mem_used_bytes > 0 and sample.load1 >= 0
    await host.close()
    await wait_until(lambda: not ours(), "closing the host to end the remote sampler loop")


async def test_facts_match_the_machine(ssh_lab: Lab) -> None:
    remote, local = await ssh_lab.host().facts(), await LocalHost().facts()
    assert (remote.os, remote.kernel, remote.arch, remote.cores, remote.mem_total_bytes) == (
        "Linux", local.kernel, local.arch, local.cores, local.mem_total_bytes)
    assert remote.cpu_model == local.cpu_model


async def test_runtime_dir_is_private_on_the_host(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    await host.run(["true"])
    assert host.runtime_dir == str(ssh_lab.tmp / "runtime-h2")
    assert os.stat(host.runtime_dir).st_mode & 0o777 == 0o700


async def test_a_runtime_dir_that_is_a_symlink_is_refused(ssh_lab: Lab) -> None:
    target = ssh_lab.tmp / "elsewhere"
    target.mkdir(mode=0o755)
    (ssh_lab.tmp / "runtime-h2").symlink_to(target)
    host = ssh_lab.host()
    with pytest.raises(HostError, match="cannot prepare private runtime dir .*runtime-h2"):
        await host.run(["touch", str(ssh_lab.tmp / "ran")])
    assert not (ssh_lab.tmp / "ran").exists()  # the command never ran
    with pytest.raises(HostError, match="cannot prepare private runtime dir"):  # and no file goes there either
        await host.put_file(__file__, f"{host.runtime_dir}/copy.py")
    assert os.stat(target).st_mode & 0o777 == 0o755 and not list(target.iterdir())
    await host.close()
    fresh = ssh_lab.host()  # first commands at once on a new connection: none slips past the check
    outcomes = await asyncio.gather(fresh.put_file(__file__, f"{fresh.runtime_dir}/copy.py"),
                                    fresh.run(["touch", str(ssh_lab.tmp / "ran")]), return_exceptions=True)
    assert all(isinstance(o, HostError) and "private runtime dir" in str(o) for o in outcomes), outcomes
    assert not list(target.iterdir()) and not (ssh_lab.tmp / "ran").exists()


# -- pool ---------------------------------------------------------------------


async def test_more_concurrent_commands_than_sessions_per_connection(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    results = await asyncio.gather(*(host.run(["sh", "-c", f"sleep 0.3; echo {i}"]) for i in range(30)))
    assert [r.stdout.strip() for r in results] == [str(i) for i in range(30)]
    # sshd refuses an 11th session on a connection (MaxSessions 10), so 30 at once needed more connections
    assert 2 <= len(host._conns) <= 4 and MAX_CHANNELS < 10


async def test_two_hosts_are_separate_machines(ssh_lab: Lab) -> None:
    h2, h3 = ssh_lab.host("h2"), ssh_lab.host("h3")
    seen = await asyncio.gather(*(h.run(["sh", "-c", "echo $SSH_CONNECTION"]) for h in (h2, h3)))
    assert [r.stdout.split()[2] for r in seen] == ["127.0.0.2", "127.0.0.3"]
    assert known_hosts() == ["local", "h2", "h3"]


async def test_jump_host(ssh_lab: Lab) -> None:
    ssh_lab.write(h3={"jump": "h2"})
    result = await ssh_lab.host("h3").run(["sh", "-c", "echo $SSH_CONNECTION"])
    client_port, server = int(result.stdout.split()[1]), result.stdout.split()[2]
    assert server == "127.0.0.3"
    # the TCP connection h3 serves was opened by h2's sshd, not by this process
    assert tcp_socket_owner(client_port) in ssh_lab.servers["h2"].descendants()


def tcp_socket_owner(local_port: int) -> int | None:
    """PID holding the IPv4 TCP socket bound to local_port."""
    inodes = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == local_port:
            inodes.add(fields[9])
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for fd in (entry / "fd").iterdir():
                link = os.readlink(fd)
                if link.startswith("socket:[") and link[8:-1] in inodes:
                    return int(entry.name)
        except OSError:
            continue
    return None


# -- host keys and authentication ----------------------------------------------


async def test_unknown_key_is_refused_until_trusted(ssh_lab: Lab) -> None:
    (ssh_lab.tmp / "known_hosts").unlink()
    with pytest.raises(hostkeys.HostKeyRefused) as refused:
        await ssh_lab.host().run(["true"])
    message = str(refused.value)
    assert ssh_lab.servers["h2"].fingerprint in message and "labtui hosts trust h2" in message
    out = labtui("hosts", "trust", "h2", env=ssh_lab.env())
    assert out.returncode == 0, out.stderr
    assert ssh_lab.servers["h2"].fingerprint in out.stdout and "recorded" in out.stdout
    assert (await ssh_lab.host().run(["true"])).ok
    again = labtui("hosts", "trust", "h2", env=ssh_lab.env())
    assert again.returncode == 0 and "already trusted" in again.stdout


async def test_changed_key_is_refused(ssh_lab: Lab) -> None:
    other = write_key(ssh_lab.tmp / "other_host_key")
    alg, blob = other.export_public_key("openssh").decode().split()[:2]
    server = ssh_lab.servers["h2"]
    (ssh_lab.tmp / "known_hosts").write_text(f"[{server.address}]:{server.port} {alg} {blob}\n")
    with pytest.raises(hostkeys.HostKeyRefused, match="HOST KEY CHANGED") as refused:
        await ssh_lab.host().run(["true"])
    assert server.fingerprint in str(refused.value) and other.get_fingerprint("sha256") in str(refused.value)
    plain = labtui("hosts", "trust", "h2", env=ssh_lab.env())
    assert plain.returncode == 1 and "--replace" in plain.stderr
    replaced = labtui("hosts", "trust", "h2", "--replace", env=ssh_lab.env())
    assert replaced.returncode == 0 and "replaced" in replaced.stdout
    assert (await ssh_lab.host().run(["true"])).ok


async def test_wrong_client_key_is_refused_at_once(ssh_lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    write_key(ssh_lab.tmp / "stranger_key")
    ssh_lab.write(h2={"identity": str(ssh_lab.tmp / "stranger_key")})
    attempts = []
    real = SSHHost._connect_once

    async def counted(self, *args):
        attempts.append(1)
        return await real(self, *args)

    monkeypatch.setattr(SSHHost, "_connect_once", counted)
    with pytest.raises(HostError, match="refused authentication with .*stranger_key") as refused:
        await ssh_lab.host().run(["true"])
    assert attempts == [1] and "gave up" not in str(refused.value)  # not retried with backoff


# -- failures -------------------------------------------------------------------


async def test_sshd_killed_mid_command_is_a_host_error(ssh_lab: Lab, own_sshd: list[Sshd], keys: Path) -> None:
    server = start_sshd(ssh_lab.tmp / "dying", "127.0.0.4", keys / "client_key.pub")
    own_sshd.append(server)
    ssh_lab.servers = {"h4": server}
    ssh_lab.write()
    ssh_lab.trust_all()
    host = ssh_lab.host("h4")
    task = asyncio.create_task(host.run(["sleep", "939.5"], timeout=900))
    await wait_until(lambda: processes_matching("sleep\x00939.5"), "the command to start on h4")
    server.signal_all(signal.SIGKILL)
    with pytest.raises(HostError, match="h4"):
        await asyncio.wait_for(task, WAIT_S)
    with pytest.raises(HostError, match="cannot connect"):
        await asyncio.wait_for(host.run(["true"]), 2 * WAIT_S)


async def test_frozen_host_is_lost_within_the_keepalive_timeout(ssh_lab: Lab, own_sshd: list[Sshd], keys: Path) -> None:
    server = start_sshd(ssh_lab.tmp / "frozen", "127.0.0.5", keys / "client_key.pub")
    own_sshd.append(server)
    ssh_lab.servers = {"h5": server}
    ssh_lab.write(h5={"keepalive_s": 0.5, "connect_timeout_s": 2})
    ssh_lab.trust_all()
    host = ssh_lab.host("h5")
    assert (await host.run(["true"])).ok
    task = asyncio.create_task(host.run(["sleep", "939.75"], timeout=900))
    await wait_until(lambda: processes_matching("sleep\x00939.75"), "the command to start on h5")
    server.signal_all(signal.SIGSTOP)
    # a frozen host never answers nor closes the socket, and the frozen command never ends by itself:
    # only the unanswered keepalives can end this call
    with pytest.raises(HostError, match="host h5: connection lost"):
        await asyncio.wait_for(task, WAIT_S)


# -- backends over SSH ------------------------------------------------------------


async def test_process_backend_runs_over_ssh(ssh_lab: Lab) -> None:
    host = ssh_lab.host()
    backend = open_backend("process", host)
    availability = await backend.check()
    assert availability.usable, availability.reason
    assert list((ssh_lab.tmp / "runtime-h2" / "src").glob("labtui-agent-*.c"))  # built on the host by its cc
    session = f"ssh-{os.getpid()}-{time.monotonic_ns()}"
    specs = [InstanceSpec(Labels(session, "background", f"s{i}"), program="sleeper") for i in range(5)]
    created = await backend.create_many(specs)
    try:
        assert all(i.host == "h2" and i.state == "running" for i in created)
        listed = await backend.list(session)
        assert sorted(i.labels.instance for i in listed) == [f"s{i}" for i in range(5)]
    finally:
        await backend.destroy_many(created, force=True)
    assert await backend.list(session) == []


def test_cli_run_and_hosts_check_on_an_ssh_host(ssh_lab: Lab) -> None:
    db = ssh_lab.tmp / "lab.duckdb"
    env = ssh_lab.env()
    out = labtui("run", "boot-scaling", "--host", "h2", "--set", "scale.steps=2", "--set", "scale.per_step=3",
                 "--set", "suite.repetitions=1", "--config", str(ssh_lab.config), "--db", str(db), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        hosts = {r[0] for r in con.execute("select distinct host from results").fetchall()}
        assert hosts == {"h2"}
        assert con.execute("select count(*) from resources where host = 'h2'").fetchone()[0] > 0
    finally:
        con.close()
    check = labtui("hosts", "check", env=env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "h2" in check.stdout and "h3" in check.stdout and "Linux" in check.stdout
    listing = labtui("hosts", env=env)
    assert listing.returncode == 0 and "127.0.0.3" in listing.stdout


def test_cli_runs_one_suite_on_several_hosts_at_once(ssh_lab: Lab) -> None:
    db = ssh_lab.tmp / "lab.duckdb"
    out = labtui("run", "boot-scaling", "--host", "h2", "--host", "h3", "--set", "scale.steps=2",
                 "--set", "scale.per_step=2", "--set", "suite.repetitions=1", "--db", str(db), env=ssh_lab.env())
    assert out.returncode == 0, out.stdout + out.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        sessions = con.execute(
            "select host, session_id, status, epoch(started_at), epoch(ended_at) from sessions order by host").fetchall()
        assert [(h, status) for h, _, status, _, _ in sessions] == [("h2", "completed"), ("h3", "completed")]
        (_, _, _, start2, end2), (_, _, _, start3, end3) = sessions
        assert start2 < end3 and start3 < end2  # the two sessions ran at the same time
        per_host = con.execute(
            "select s.host, r.host, count(distinct r.step) from results r join sessions s using (session_id) "
            "group by all order by 1").fetchall()
        assert per_host == [("h2", "h2", 3), ("h3", "h3", 3)]  # baseline and two steps, tagged by host
        left = con.execute("select count(*) from instances where destroyed_at is null").fetchone()[0]
        assert left == 0
    finally:
        con.close()
    for session_id in (row[1] for row in sessions):
        assert session_id in out.stderr  # each session is reported with its host
    assert "on h2" in out.stderr and "on h3" in out.stderr


# -- pure parts ----------------------------------------------------------------------


def test_remote_command_quotes_every_word() -> None:
    command = remote_command(["echo", "a b", "$(x)"], {"K": "v w"})
    assert command == "printf '%s\\n' $$; exec env 'K=v w' echo 'a b' '$(x)'"


def test_config_errors_name_file_line_and_host(tmp_path: Path) -> None:
    path = tmp_path / "lab.toml"
    path.write_text('[hosts.a]\naddress = "127.0.0.2"\n\n[hosts.b]\naddress = "127.0.0.3"\nprot = 22\n')
    with pytest.raises(ConfigError, match=r"lab.toml:6: host 'b': prot: unknown key"):
        load_lab_config(path)
    path.write_text('[hosts.a]\nport = 22\n')
    with pytest.raises(ConfigError, match=r"lab.toml:1: host 'a': 'address' is required"):
        load_lab_config(path)
    path.write_text('[hosts.a]\naddress = "x"\nport = 70000\n')
    with pytest.raises(ConfigError, match=r"lab.toml:3: host 'a': port: must be an integer 1-65535"):
        load_lab_config(path)
    path.write_text('[hosts.a]\naddress = "x"\njump = "b"\n[hosts.b]\naddress = "y"\njump = "a"\n')
    with pytest.raises(ConfigError, match=r"lab.toml:3: host 'a': jump: loop a -> b -> a"):
        load_lab_config(path)
    path.write_text('[hosts.local]\naddress = "x"\n')
    with pytest.raises(ConfigError, match="'local' is reserved"):
        load_lab_config(path)
    path.write_text('[hosts.a\naddress = "x"\n')
    with pytest.raises(ConfigError, match=r"lab.toml: .*line 1"):
        load_lab_config(path)
    path.write_text('[hosts.a]\naddress = "10.0.0.1"\ntags = ["lab", "x86"]\n')
    (host,) = load_lab_config(path).hosts.values()
    assert (host.address, host.port, host.tags, host.known_hosts_pattern) == ("10.0.0.1", 22, ("lab", "x86"), "10.0.0.1")


def test_missing_named_config_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABTUI_CONFIG", str(tmp_path / "none.toml"))
    with pytest.raises(ConfigError, match="none.toml: lab config not found"):
        get_host("h2")


# `kstat -p` format (module:instance:name:statistic TAB value).  The system_pages values are from the
# `kstat -n system_pages` example in McDougall et al., Solaris Performance and Tools, section 6.12; the
# swap -s line is a published Solaris example; the cpu_nsec values are made up in the same format.
KSTAT_SAMPLE = """cpu:0:sys:cpu_nsec_dtrace\t0
cpu:0:sys:cpu_nsec_idle\t912387654321
cpu:0:sys:cpu_nsec_intr\t1234567890
cpu:0:sys:cpu_nsec_kernel\t23456789012
cpu:0:sys:cpu_nsec_user\t34567890123
cpu:0:sys:crtime\t0
cpu:1:sys:cpu_nsec_idle\t920000000000
cpu:1:sys:cpu_nsec_kernel\t20000000000
cpu:1:sys:cpu_nsec_user\t30000000000
unix:0:system_pages:availrmem\t343567
unix:0:system_pages:freemem\t248309
unix:0:system_pages:physmem\t522272
unix:0:system_pages:pagestotal\t512136
unix:0:system_misc:avenrun_1min\t384
"""
SWAP_S = "total: 276788k bytes allocated + 103884k reserved = 380672k used, 4552520k available\n"


def test_kstat_and_swap_parsing() -> None:
    kstats = illumos.parse_kstat(KSTAT_SAMPLE)
    cpu = illumos.cpu_times(kstats)
    assert cpu.idle == 912387654321 + 920000000000
    assert cpu.total == cpu.idle + 23456789012 + 34567890123 + 20000000000 + 30000000000
    pages = illumos.page_figures(kstats, 4096)
    assert pages.mem_total_bytes == 522272 * 4096 and pages.mem_avail == pytest.approx(248309 / 522272)
    assert illumos.load1(kstats) == 1.5
    swap = illumos.parse_swap_s(SWAP_S)
    assert (swap.used_bytes, swap.available_bytes) == (380672 * 1024, 4552520 * 1024)
    assert swap.avail == pytest.approx(4552520 / (380672 + 4552520))
    with pytest.raises(ValueError, match="unexpected swap -s output"):
        illumos.parse_swap_s("swap: command not found")


def test_sunos_sample_from_sections() -> None:
    lines = ["@kstat", *KSTAT_SAMPLE.splitlines(), "@swap", SWAP_S.strip(), "@pagesize", "4096"]
    sections = remote_sampler.split_sections(lines)
    first, before = remote_sampler.build_sample("omni", "SunOS", sections, None)
    assert first.cpu_avail is None and first.load1 == 1.5 and first.mem_used_bytes == (522272 - 248309) * 4096
    later = KSTAT_SAMPLE.replace("912387654321", "913387654321").replace("34567890123", "35567890123")
    sections["kstat"] = later
    second, _ = remote_sampler.build_sample("omni", "SunOS", sections, before)
    assert second.cpu_avail == pytest.approx(0.5)
    with pytest.raises(ValueError, match="Linux and SunOS"):
        remote_sampler.sampler_script("Darwin")


# -- terminal sessions (the Instances view's shell) ---------------------------------


async def test_terminal_argv_runs_through_openssh_with_the_configs_key_path_and_jump(ssh_lab: Lab) -> None:
    """OpenSSH's ssh, with only the options terminal_argv gives it, reaches h2 under its PATH, and h3 through h2."""
    ssh_lab.write(h2={"path": "/opt/labtui-test/bin:/usr/bin:/bin"}, h3={"jump": "h2"})
    for name, server in (("h2", ssh_lab.servers["h2"]), ("h3", ssh_lab.servers["h3"])):
        argv = ssh_lab.host(name).terminal_argv(["sh", "-c", 'echo "term-$((6*7)) $PATH" $SSH_CONNECTION'])
        assert argv[0] == "ssh" and "-t" in argv
        jumps = [a for a in argv if a.startswith("ProxyCommand=")]
        assert jumps == ([f"ProxyCommand={shlex.join(['ssh', *ssh_lab.host('h2').ssh_options(), '-W', '%h:%p', '127.0.0.2'])}"]
                         if name == "h3" else [])
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "SSH_AUTH_SOCK": ""})
        assert done.returncode == 0, done.stderr
        words = done.stdout.split()
        assert words[0] == "term-42" and words[-2:] == [server.address, str(server.port)], done.stdout
        assert (words[1] == "/opt/labtui-test/bin:/usr/bin:/bin") == (name == "h2")
