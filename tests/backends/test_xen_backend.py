"""The Xen backend against a simulated Domain-0 reached over real SSH.

The host is a real OpenSSH sshd on 127.0.0.22 whose PATH (the lab config's per-host
``path``) starts with the simulators in tests/simulators (xl and xm), which follow Xen's
formats and messages and run each domain's "kernel" as a process.  No real Xen is touched.
CI needs openssh-server and a C compiler (the probes are built on the host).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import duckdb
import pytest
from cli_run import labtui
from simulators.fakehost import FakeHost, start_fake_host, write_lab
from sshd_fixture import sshd_available, write_key

from labtui.backends.base import Backend, BackendError, InstanceSpec, Labels, open_backend
from labtui.hosts import get_host
from labtui.hosts.ssh import SSHHost
from plugins.xen.domconfig import DomainConfig, domain_name, labels_from_name, render
from plugins.xen.listing import XL_HEADER, parse_info, parse_list, parse_long

ADDRESS = "127.0.0.22"
needs_sshd = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")

# xl list on Xen 4.17 (tabs in the header; the state column is six letters rbpscd or '-').
XL_SAMPLE = (
    "Name                                        ID   Mem VCPUs\tState\tTime(s)\n"
    "Domain-0                                     0  1024     2     r-----     101.3\n"
    "labtui.s1.background.ba1                     7   128     1     -b----       0.4\n"
    "a-guest-name-that-is-longer-than-forty-characters 12   512     4     --p---       3.0\n"
    "dying                                        9     0     1     ---scd       7.7\n"
)
XM_SAMPLE = (
    "Name                                        ID   Mem VCPUs      State   Time(s)\n"
    "Domain-0                                     0   512     1     r-----   5421.5\n"
    "guest1                                       3   150     1     -b----     12.0\n"
)


def test_xl_and_xm_list_parse_exactly() -> None:
    assert XL_SAMPLE.splitlines()[0] == XL_HEADER
    domains = parse_list(XL_SAMPLE)
    assert [(d.name, d.domid, d.mem_mib, d.vcpus, d.state) for d in domains] == [
        ("Domain-0", 0, 1024, 2, "r-----"), ("labtui.s1.background.ba1", 7, 128, 1, "-b----"),
        ("a-guest-name-that-is-longer-than-forty-characters", 12, 512, 4, "--p---"), ("dying", 9, 0, 1, "---scd")]
    assert domains[3].flags == {"s", "c", "d"} and domains[0].cpu_time_s == 101.3
    assert [d.name for d in parse_list(XM_SAMPLE)] == ["Domain-0", "guest1"]
    with pytest.raises(ValueError, match="line 2: cannot read"):
        parse_list(XL_HEADER + "\nbroken line\n")
    with pytest.raises(ValueError, match="no header"):
        parse_list("Domain-0 0 1024 2 r----- 1.0\n")


def test_list_long_json_and_info() -> None:
    entries = parse_long('[{"domid": 0, "config": {"c_info": {"name": "Domain-0"}}}]')
    assert entries[0]["domid"] == 0
    with pytest.raises(ValueError, match="not JSON"):
        parse_long("(domain (name x))")
    info = parse_info("total_memory           : 8191\nfree_memory            : 6000\nxen_version            : 4.17.3\n")
    assert info["total_memory"] == "8191" and info["xen_version"] == "4.17.3"


def test_domain_names_carry_labels_and_config_renders() -> None:
    labels = Labels("20240101-120000-abcdef", "worker", "wo1")
    name = domain_name(labels)
    assert labels_from_name(name) == labels and labels_from_name("guest1") is None
    assert labels_from_name("labtui.only-two.parts") is None
    with pytest.raises(BackendError, match="label session"):
        domain_name(Labels("a.b", "worker", "wo1"))
    text = render(DomainConfig(name, labels, "/boot/vmlinuz", memory_mb=150, vcpus=2, ramdisk="/boot/initrd",
                               extra="console=hvc0", disks=("file:/x/root.img,xvda,w",), vifs=("bridge=xenbr0",)))
    assert 'name = "labtui.20240101-120000-abcdef.worker.wo1"' in text and "memory = 150" in text
    assert "vif = [\"bridge=xenbr0\"]" in text and 'ramdisk = "/boot/initrd"' in text and "# labtui-role=worker" in text
    with pytest.raises(BackendError, match="kernel value"):
        render(DomainConfig(name, labels, '/boot/x"y'))


# -- over SSH ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("xkeys")
    write_key(tmp / "client_key")
    return tmp


@pytest.fixture(scope="module")
def dom0(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> Iterator[FakeHost]:
    if not sshd_available():
        pytest.skip("needs OpenSSH sshd (apt install openssh-server)")
    host = start_fake_host(tmp_path_factory.mktemp("dom0"), "xhost", ADDRESS, "xen", keys / "client_key.pub")
    try:
        yield host
    finally:
        host.tool("sh", "-c", "for n in $(xl list | tail -n +3 | cut -c1-40); do xl destroy $n; done")
        host.server.stop()


@pytest.fixture
def seeded(dom0: FakeHost, tmp_path: Path) -> Iterator[FakeHost]:
    """Fresh state with a domain that is not labtui's (it must always survive)."""
    dom0.tool("sh", "-c", "for n in $(xl list | tail -n +3 | cut -c1-40); do xl destroy $n; done")
    for path in dom0.state.glob("*.json"):
        path.unlink()
    dom0.knobs()
    cfg = tmp_path / "guest1.cfg"
    cfg.write_text('name = "guest1"\nmemory = "150"\nkernel = "/bin/sleep"\nextra = "600"\nvif = [\'bridge=xenbr0\']\n')
    assert dom0.tool("xl", "create", str(cfg)).returncode == 0
    yield dom0
    dom0.tool("xl", "destroy", "guest1")


def foreign_intact(host: FakeHost) -> None:
    assert "guest1" in {d.name for d in parse_list(host.tool("xl", "list").stdout)}


@pytest.fixture
async def xen(seeded: FakeHost, tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Backend]:
    monkeypatch.setenv("LABTUI_CONFIG", str(write_lab(tmp_path, [seeded], keys)))
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "rt"))
    host = get_host("xhost")
    assert isinstance(host, SSHHost)
    try:
        yield open_backend("xen", host)
    finally:
        await host.close()


@needs_sshd
async def test_create_list_pin_credit_memory_destroy_over_ssh(xen: Backend, seeded: FakeHost) -> None:
    availability = await xen.check()
    assert availability.usable and availability.version == "4.17.3" and "xl" in availability.reason
    labels = Labels("xs1", "background", "ba1")
    instance = await xen.create(InstanceSpec(labels, program="sleeper", cpus="1", mem_limit_bytes=200 << 20))
    try:
        assert instance.state == "running" and instance.boot_s > 0 and instance.details["memory_mb"] == 200
        assert [(i.labels, i.details["mem_mib"]) for i in await xen.list()] == [(labels, 200)]
        assert await xen.memory_bytes(instance) == 200 << 20
        assert "all / all" not in seeded.tool("xl", "vcpu-list", instance.name).stdout  # pinned to CPU 1
        await xen.set_credit(instance, weight=64, cap=25)
        row = seeded.tool("xl", "sched-credit", "-d", instance.name).stdout.splitlines()[-1].split()
        assert row[-2:] == ["64", "25"]
        total, free = await xen.host_memory()
        assert total == 8192 << 20 and free == (8192 - 1024 - 150 - 200) << 20
        with pytest.raises(BackendError, match="Cpu weight out of range"):
            await xen.set_credit(instance, weight=0)
    finally:
        await xen.destroy(instance)
    assert await xen.list() == [] and await xen.memory_bytes(instance) is None
    foreign_intact(seeded)


@needs_sshd
async def test_worker_domain_runs_to_poweroff(xen: Backend, seeded: FakeHost) -> None:
    seeded.knobs(create_s=0.2)
    instance = await xen.create(InstanceSpec(Labels("xs2", "worker", "wo1"), program="hello", wait="exit"))
    assert instance.state == "exited" and instance.boot_s >= 0.2
    assert await xen.list("xs2") == []
    await xen.destroy(instance)  # already gone: not an error


@needs_sshd
async def test_errors_are_surfaced_and_foreign_domains_refused(xen: Backend, seeded: FakeHost) -> None:
    seeded.knobs(host_mem_mb=1200)
    with pytest.raises(BackendError, match=r"xl create .* exited 1: libxl: error: .*cannot \(re-\)build domain"):
        await xen.create(InstanceSpec(Labels("xs3", "background", "ba1"), program="sleeper", mem_limit_bytes=512 << 20))
    seeded.knobs()
    assert await xen.list("xs3") == []
    unknown = await xen.host.run(["xl", "destroy", "nope"])
    assert unknown.returncode == 1 and unknown.stderr == "nope is an invalid domain identifier (rc=-6)\n"
    instance = await xen.create(InstanceSpec(Labels("xs3", "background", "ba2"), program="sleeper"))
    instance.handle = "guest1"
    with pytest.raises(BackendError, match="refusing to destroy domain 'guest1'"):
        await xen.destroy(instance)
    instance.handle = instance.name
    await xen.destroy(instance, force=True)
    foreign_intact(seeded)


@needs_sshd
async def test_xm_is_used_where_xl_is_missing(tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = start_fake_host(tmp_path / "old", "oldxen", "127.0.0.23", "xen", keys / "client_key.pub", tools=("xm",))
    try:
        monkeypatch.setenv("LABTUI_CONFIG", str(write_lab(tmp_path, [old], keys)))
        monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "rt"))
        host = get_host("oldxen")
        try:
            backend = open_backend("xen", host)
            availability = await backend.check()
            assert availability.usable and "xm" in availability.reason
            instance = await backend.create(InstanceSpec(Labels("xs4", "background", "ba1"), program="sleeper"))
            assert [i.name for i in await backend.list()] == [instance.name]
            await backend.destroy(instance)
            assert await backend.list() == []
        finally:
            await host.close()
    finally:
        old.tool("sh", "-c", "for n in $(xm list | tail -n +3 | cut -c1-40); do xm destroy $n; done")
        old.server.stop()


@needs_sshd
def test_cli_run_instances_and_cleanup_on_the_simulated_dom0(seeded: FakeHost, tmp_path: Path, keys: Path) -> None:
    config = write_lab(tmp_path, [seeded], keys)
    env = {**os.environ, "LABTUI_CONFIG": str(config), "LABTUI_RUNTIME_DIR": str(tmp_path / "rt"), "COLUMNS": "200"}
    db = tmp_path / "lab.duckdb"
    run = labtui("run", "xen-dom0", "--backend", "xen", "--host", "xhost", "--set", "scale.steps=2",
                 "--set", 'worker.args=["fork", "0.1"]', "--db", str(db), env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        in_dom0 = con.execute("select count(*) from results where metric = 'fork_us'").fetchone()[0]
    finally:
        con.close()
    assert in_dom0 == 3  # the benchmark in Domain-0: R0, R1, R2
    orphan = tmp_path / "orphan.cfg"
    orphan.write_text('name = "labtui.orphan1.background.ba1"\nmemory = 64\nkernel = "/bin/sleep"\nextra = "600"\n')
    assert seeded.tool("xl", "create", str(orphan)).returncode == 0
    listing = labtui("instances", "--backend", "xen", "--host", "xhost", "--format", "json", env=env)
    assert listing.returncode == 0 and "labtui.orphan1.background.ba1" in listing.stdout and "guest1" not in listing.stdout
    cleanup = labtui("cleanup", "--all", "--backend", "xen", "--host", "xhost", "--db", str(db), env=env)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    assert {d.name for d in parse_list(seeded.tool("xl", "list").stdout)} == {"Domain-0", "guest1"}
