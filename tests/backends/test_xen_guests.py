"""Guests labtui logs into: the Xen backend boots ``image = "guest"`` and runs commands in the domain.

Domain-0 is the xl simulator behind a real sshd on 127.0.0.24; each guest is the simulated
guest image of tests/simulators/guest.py, a real sshd on its own address of 127.0.9.0/29,
which labtui reaches over SSH tunnelled through Domain-0's connection.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import duckdb
import pytest
from cli_run import labtui
from simulators.fakehost import FakeHost, start_fake_host, write_lab
from simulators.guest import GuestImage, make_guest_image
from sshd_fixture import free_port, sshd_available, write_key

from labtui.backends.base import EXEC, Backend, BackendError, InstanceSpec, Labels, open_backend
from labtui.hosts import get_host
from labtui.hosts.config import ConfigError, GuestLogin, load_lab_config
from labtui.hosts.local import LocalHost
from labtui.hosts.ssh import SSHHost
from plugins.xen.guests import Guests, guest_addresses

ADDRESS = "127.0.0.24"
POOL = "127.0.9.0/29"
PATTERN = "127.0.9.*"


def test_guests_table_errors_name_file_line_and_key(tmp_path: Path) -> None:
    config = tmp_path / "labtui.toml"
    config.write_text('[hosts.d0]\naddress = "127.0.0.24"\n\n[hosts.d0.guests]\nkernel = "/boot/k"\n'
                      'addresses = "10.0.0.300/28"\n')
    with pytest.raises(ConfigError, match=r"labtui.toml:6: host 'd0': guests.addresses: must be an IPv4 range"):
        load_lab_config(config)
    config.write_text('[hosts.d0]\naddress = "127.0.0.24"\n\n[hosts.d0.guests]\nkernel = "/boot/k"\n')
    with pytest.raises(ConfigError, match=r"labtui.toml:4: host 'd0': guests: 'addresses' is required"):
        load_lab_config(config)
    config.write_text('[hosts.d0]\naddress = "127.0.0.24"\n[hosts.d0.guests]\nkernel = "/k"\naddresses = "10.0.0.0/24"\n'
                      'bridge = "xenbr0,script=/tmp/x"\n')
    with pytest.raises(ConfigError, match=r"labtui.toml:6: host 'd0': guests.bridge: must be a network interface name"):
        load_lab_config(config)  # no extra vif keys smuggled in (a vif script runs as root on Domain-0)
    config.write_text('[hosts.d0]\naddress = "127.0.0.24"\n[hosts.d0.guests]\nkernel = "/k"\naddresses = "10.0.0.0/24"\n'
                      'gateway = "10.0.0.1"\nbridge = "br1"\n')
    guests = load_lab_config(config).hosts["d0"].guests
    assert guests is not None and guests.guest_netmask == "255.255.255.0" and guests.bridge == "br1"


async def test_addresses_are_claimed_once_skip_the_gateway_and_come_back_when_released() -> None:
    guests = Guests(LocalHost(), GuestLogin(kernel="/k", addresses="10.0.0.0/29", gateway="10.0.0.1"))
    first = await guests.claim(taken=["10.0.0.2"])  # a domain holds .2
    assert first == "10.0.0.3" and guests.kernel_args(first) == "ip=10.0.0.3::10.0.0.1:255.255.255.248::eth0:off"
    assert [await guests.claim([]) for _ in range(3)] == ["10.0.0.2", "10.0.0.4", "10.0.0.5"]
    assert await guests.claim([]) == "10.0.0.6"
    with pytest.raises(BackendError, match=r"no free guest address in 10.0.0.0/29 \(all 6 in use\)"):
        await guests.claim([])
    guests.release("10.0.0.4")
    assert await guests.claim([]) == "10.0.0.4"


def test_vif_addresses_are_read_from_xl_list_long() -> None:
    listing = [{"domid": 0, "config": {"c_info": {"name": "Domain-0"}}},
               {"domid": 3, "config": {"c_info": {"name": "web"}, "nics": [{"devid": 0, "ip": "10.0.0.5 10.0.0.6"}]}},
               {"domid": 4, "config": {"c_info": {"name": "nonet"}, "nics": [{"devid": 0, "bridge": "xenbr0"}]}}]
    assert guest_addresses(listing) == {"web": "10.0.0.5"}


# -- over SSH -------------------------------------------------------------------------

needs_sshd = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("gkeys")
    write_key(tmp / "client_key")
    return tmp


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> GuestImage:
    return make_guest_image(tmp_path_factory.mktemp("guest-image"), keys / "client_key.pub", free_port("127.0.9.1"))


@pytest.fixture(scope="module")
def dom0(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> Iterator[FakeHost]:
    if not sshd_available():
        pytest.skip("needs OpenSSH sshd (apt install openssh-server)")
    host = start_fake_host(tmp_path_factory.mktemp("gdom0"), "gdom0", ADDRESS, "xen", keys / "client_key.pub")
    try:
        yield host
    finally:
        host.server.stop()


@pytest.fixture
def guest_config(dom0: FakeHost, image: GuestImage, tmp_path: Path, keys: Path) -> Iterator[Path]:
    """A lab config whose dom0 boots the guest image on 127.0.9.0/29; every domain destroyed afterwards."""
    config = write_lab(tmp_path, [dom0], keys)
    (tmp_path / "guest_known_hosts").write_text(image.known_hosts_line(PATTERN))
    config.write_text(config.read_text() + f'\n[hosts.gdom0.guests]\nkernel = "{image.kernel}"\naddresses = "{POOL}"\n'
                      f'port = {image.port}\nidentity = "{tmp_path / "client_key"}"\n'
                      f'known_hosts = "{tmp_path / "guest_known_hosts"}"\n')
    yield config
    dom0.tool("sh", "-c", "for n in $(xl list | tail -n +3 | cut -c1-40); do xl destroy $n; done")


@pytest.fixture
async def xen(guest_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Backend]:
    monkeypatch.setenv("LABTUI_CONFIG", str(guest_config))
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "rt"))
    host = get_host("gdom0")
    assert isinstance(host, SSHHost)
    try:
        yield open_backend("xen", host)
    finally:
        await host.close()


def answers(address: str, port: int) -> bool:
    try:
        socket.create_connection((address, port), timeout=1).close()
        return True
    except OSError:
        return False


@needs_sshd
async def test_guests_boot_with_their_own_address_exec_and_stage(xen: Backend, dom0: FakeHost, image: GuestImage,
                                                                 tmp_path: Path) -> None:
    assert EXEC in xen.capabilities
    specs = [InstanceSpec(Labels("sg1", "background", f"b{i}"), image="guest", timeout_s=30) for i in (1, 2)]
    first, second = await xen.create_many(specs)
    try:
        addresses = [first.details["guest_address"], second.details["guest_address"]]
        assert sorted(addresses) == ["127.0.9.1", "127.0.9.2"]
        long = json.loads(dom0.tool("xl", "list", "-l").stdout)
        assert guest_addresses(long) == {first.handle: addresses[0], second.handle: addresses[1]}
        assert first.boot_s is not None and first.boot_s >= first.details["login_s"] > 0
        # The command runs behind the guest's own sshd: SSH_CONNECTION names the guest's address.
        result = await xen.exec(first, ["sh", "-c", 'echo "$SSH_CONNECTION"'])
        assert result.ok and result.stdout.split()[2] == addresses[0]
        script = tmp_path / "hello"
        script.write_text("#!/bin/sh\necho staged \"$@\"\n")
        script.chmod(0o755)
        (staged,) = await xen.stage(second, [str(script)])
        assert staged != str(script) and staged.endswith("/bin/hello")
        assert (await xen.exec(second, [staged, "ok"])).stdout == "staged ok\n"
        # The simulated guests share Domain-0's clock: the measured offset is about 0, and recorded.
        offset = await xen.clock_offset_ns(first)
        assert abs(offset) < 20_000_000 and first.details["clock_offset_ns"] == offset
        # An instance read back from xl (not the one create returned) carries its vif address.
        (listed,) = [i for i in await xen.list("sg1") if i.handle == second.handle]
        assert listed.details["guest_address"] == addresses[1]  # what `labtui instances` shows
        assert (await xen.exec(listed, ["sh", "-c", 'echo "$SSH_CONNECTION"'])).stdout.split()[2] == addresses[1]
    finally:
        await xen.destroy_many([first, second], force=True)
    assert not answers(addresses[0], image.port) and not answers(addresses[1], image.port)
    (again,) = await xen.create_many([InstanceSpec(Labels("sg1", "background", "b3"), image="guest", timeout_s=30)])
    try:
        assert again.details["guest_address"] == "127.0.9.1"  # freed addresses are handed out again
    finally:
        await xen.destroy(again, force=True)


@needs_sshd
async def test_a_guest_that_never_answers_fails_by_its_timeout_and_leaves_nothing(xen: Backend, dom0: FakeHost,
                                                                                   tmp_path: Path) -> None:
    silent = tmp_path / "silent-kernel"
    silent.write_text("#!/bin/sh\nexec sleep 600\n")
    silent.chmod(0o755)
    assert xen.guests is not None
    xen.guests.login = dataclasses.replace(xen.guests.login, kernel=str(silent))
    with pytest.raises(BackendError, match=r"guest labtui\.sg2\.background\.b1 at 127\.0\.9\.1:\d+ did not answer SSH"):
        await xen.create(InstanceSpec(Labels("sg2", "background", "b1"), image="guest", timeout_s=1.5))
    assert "labtui.sg2" not in dom0.tool("xl", "list").stdout


@needs_sshd
async def test_without_a_guests_table_image_guest_is_refused(dom0: FakeHost, tmp_path: Path, keys: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABTUI_CONFIG", str(write_lab(tmp_path, [dom0], keys)))
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "rt"))
    host = get_host("gdom0")
    try:
        xen = open_backend("xen", host)
        assert EXEC not in xen.capabilities
        with pytest.raises(BackendError, match=r"no \[hosts.gdom0.guests\] in the lab config"):
            await xen.create(InstanceSpec(Labels("sg3", "background", "b1"), image="guest", timeout_s=10))
    finally:
        await host.close()
    assert "labtui.sg3" not in dom0.tool("xl", "list").stdout


@needs_sshd
@pytest.mark.parametrize("suite", ["xen-domu", "xen-concurrent"])
def test_domu_suites_run_inside_user_domains(suite: str, guest_config: Path, dom0: FakeHost, tmp_path: Path) -> None:
    env = {**os.environ, "LABTUI_CONFIG": str(guest_config), "LABTUI_RUNTIME_DIR": str(tmp_path / "rt"), "COLUMNS": "200"}
    db = tmp_path / "lab.duckdb"
    run = labtui("run", suite, "--host", "gdom0", "--profile", "quick", "--db", str(db), env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("select benchmark, metric, instance_id from results order by ts").fetchall()
    finally:
        con.close()
    tcreate = [inst for bench, metric, inst in rows if metric == "tcreate_s"]
    assert len(tcreate) == 2 and len(set(tcreate)) == 2  # one creation time per user domain
    probe = [(metric, inst) for bench, metric, inst in rows if bench not in ("creation", "memory") and inst]
    if suite == "xen-domu":
        assert {inst for _, inst in probe} == {tcreate[0]}  # R'n: always in the first domain
        assert len([m for m, _ in probe if m == "fork_us"]) == 2
    else:
        assert {inst for _, inst in probe} == set(tcreate)  # R_in: in every domain
        assert len([m for _, m, _ in rows if m == "start_spread_ms"]) == 2
        assert any(m.endswith("_sum") for _, m, _ in rows)
    assert "labtui." not in dom0.tool("xl", "list").stdout
