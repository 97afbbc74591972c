"""The zones backend against a simulated illumos host reached over real SSH.

The host is a real OpenSSH sshd on 127.0.0.21 whose PATH (the lab config's per-host
``path``) starts with the simulators in tests/simulators (zonecfg, zoneadm, zlogin, kstat),
which follow illumos' formats and messages.  These tests do not touch a real illumos host.
CI needs openssh-server and a C compiler (the probes are built on the host).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import types
from collections.abc import AsyncIterator
from pathlib import Path

import duckdb
import pytest
from cli_run import labtui
from simulators.fakehost import FakeHost, write_lab
from zones_host import foreign_intact, needs_sshd

from labtui.backends.base import Backend, BackendError, InstanceSpec, Labels, open_backend
from labtui.engine.hostclock import host_clock_ns
from labtui.hosts import get_host
from labtui.hosts.ssh import SSHHost
from labtui.programs.runat import NAME as RUNAT_NAME
from plugins.zones.listing import parse_zoneadm_list, rss_by_zoneid, split_fields
from plugins.zones.names import check_name, name_problem, zone_name
from plugins.zones.zonecfg import (
    Fs,
    Net,
    ZoneConfig,
    command_file,
    labels_from_attrs,
    parse_attrs,
)

# -- pure parts: exact output samples -------------------------------------------------

# zoneadm list -cp on OmniOS (7 fields): the global zone, a running zone, an installed one,
# a configured one whose zonepath holds a ':' (written '\:').
SAMPLE_7 = """\
0:global:running:/::ipkg:shared
3:web1:running:/zones/web1:5c4d0ef4-1a7c-c3ab-b8f9-e3a5a4c8b1a2:lipkg:excl
-:db1:installed:/zones/db1:0b7c6e62-0c29-4e25-9f1f-7b3c4f8fd6a1:ipkg:shared
-:odd:configured:/zones/a\\:b::ipkg:shared
"""
# SmartOS appends a debug id (8 fields).
SAMPLE_8 = "0:global:running:/::joyent:shared:0\n-:f00d:incomplete:/zones/f00d:9a1e-77:joyent-minimal:excl:12\n"


def test_zoneadm_list_parses_seven_and_eight_fields_ids_and_escaped_colons() -> None:
    entries = parse_zoneadm_list(SAMPLE_7)
    assert [(e.zoneid, e.name, e.state) for e in entries] == [
        (0, "global", "running"), (3, "web1", "running"), (None, "db1", "installed"), (None, "odd", "configured")]
    assert entries[3].zonepath == "/zones/a:b" and entries[3].uuid == "" and entries[1].ip_type == "excl"
    eight = parse_zoneadm_list(SAMPLE_8)
    assert eight[1].state == "incomplete" and eight[1].brand == "joyent-minimal" and eight[1].extra == ("12",)
    assert split_fields("a\\:b:c") == ["a:b", "c"]


@pytest.mark.parametrize("line, problem", [
    ("0:global:running:/", "expected at least 7"),
    ("0:z:booting:/z::ipkg:shared", "unknown zone state 'booting'"),
    ("x:z:running:/z::ipkg:shared", "neither a number nor '-'"),
])
def test_zoneadm_list_rejects_malformed_lines(line: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_zoneadm_list(line)


def test_zone_names_follow_libzonecfg() -> None:
    assert name_problem("a" * 63) is None and name_problem("9z._-x") is None
    assert "1 to 63" in name_problem("a" * 64)
    assert "global zone" in name_problem("global")
    assert "SUNW" in name_problem("SUNWzone")
    assert "letter or digit" in name_problem("-z") and "letter or digit" in name_problem("z!")
    with pytest.raises(BackendError, match="bad zone name"):
        check_name("a b")
    with pytest.raises(BackendError, match="1 to 63"):
        zone_name(Labels("s" * 60, "worker", "wo1"))
    assert zone_name(Labels("20240101-120000-abcdef", "worker", "wo1")) == "labtui-20240101-120000-abcdef-wo1"


def test_command_file_and_attr_round_trip() -> None:
    labels = Labels("s1", "worker", "wo1")
    text = command_file(ZoneConfig("/zones/z1", labels, fss=(Fs("/opt/p", "/opt/p"),), nets=(Net("e1000g0", "10.0.0.2/24"),)))
    lines = text.splitlines()
    assert lines[:3] == ["create -b", "set zonepath=/zones/z1", "set autoboot=false"]
    assert lines[3:9] == ["add fs", "set dir=/opt/p", "set special=/opt/p", "set type=lofs", "add options ro", "end"]
    assert ["add net", "set physical=e1000g0", "set address=10.0.0.2/24", "end"] == lines[9:13]
    assert "set name=labtui-session" in lines and lines[-1] == "commit"
    info = "attr:\n\tname: labtui-session\n\ttype: string\n\tvalue: s1\nattr:\n\tname: labtui-role\n\ttype: string\n" \
           "\tvalue: worker\nattr:\n\tname: labtui-instance\n\ttype: string\n\tvalue: wo1\n"
    assert labels_from_attrs(parse_attrs(info)) == labels
    assert labels_from_attrs(parse_attrs(info.split("attr:\n\tname: labtui-instance")[0])) is None
    with pytest.raises(BackendError, match="zonepath value"):
        command_file(ZoneConfig("/zones/a;b", labels))


def test_command_file_carries_the_resource_controls() -> None:
    text = command_file(ZoneConfig("/zones/z1", Labels("s1", "worker", "wo1"), cpu_shares=233, capped_cpus=0.25,
                                   capped_memory_mib=512))
    lines = text.splitlines()
    assert lines[3:10] == ["set cpu-shares=233", "add capped-cpu", "set ncpus=0.25", "end",
                           "add capped-memory", "set physical=512m", "end"]


def test_memory_cap_kstats_by_zone_id() -> None:
    text = "memory_cap:0:global:rss\t536870912\nmemory_cap:4:labtui-s-wo1:rss\t41947136\nmemory_cap:4:labtui-s-wo1:swap\t1\n"
    assert rss_by_zoneid(text) == {0: 536870912, 4: 41947136}


# -- over SSH ------------------------------------------------------------------------


def zone_processes(host: FakeHost, zone: str) -> list[int]:
    """PIDs the simulated zone runs (zlogin marks them in their environment)."""
    out = host.tool(sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); import _zonesim; "
                    "print(*_zonesim.zone_pids(sys.argv[2]))", str(Path(__file__).parents[1] / "simulators"), zone)
    assert out.returncode == 0, out.stderr
    return [int(p) for p in out.stdout.split()]


@pytest.fixture
async def zones(seeded: FakeHost, tmp_path: Path, keys: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Backend]:
    monkeypatch.setenv("LABTUI_CONFIG", str(write_lab(tmp_path, [seeded], keys)))
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "rt"))
    host = get_host("zhost")
    assert isinstance(host, SSHHost)
    try:
        yield open_backend("zones", host)
    finally:
        await host.close()


@needs_sshd
async def test_create_list_exec_memory_destroy_over_ssh(zones: Backend, seeded: FakeHost) -> None:
    assert (await zones.check()).usable
    labels = Labels("zs1", "background", "ba1")
    instance = await zones.create(InstanceSpec(labels, program="sleeper"))
    try:
        assert instance.state == "running" and instance.name == "labtui-zs1-ba1"
        for phase in ("configure_s", "install_s", "boot_s", "creation_s"):
            assert instance.details[phase] > 0
        assert instance.boot_s == pytest.approx(instance.details["creation_s"])
        listed = await zones.list()
        assert [(i.labels, i.state) for i in listed] == [(labels, "running")]
        assert await zones.list("other-session") == []
        result = await zones.exec(instance, ["sh", "-c", "echo in $ZONENAME", "x y"])
        assert result.ok and result.stdout.strip() == "in labtui-zs1-ba1"
        used = await zones.memory_bytes(instance)
        assert used is not None and used >= 40 << 20
        assert zone_processes(seeded, instance.name), "the sleeper runs in the zone"
    finally:
        await zones.destroy(instance)
    assert await zones.list() == []
    assert await zones.memory_bytes(instance) is None
    assert zone_processes(seeded, instance.name) == []  # halt ended everything the zone ran
    foreign_intact(seeded)


@needs_sshd
async def test_cpu_and_memory_controls_reach_zonecfg_and_pinning_is_refused(zones: Backend, seeded: FakeHost) -> None:
    labels = Labels("zs3", "background", "ba1")
    spec = InstanceSpec(labels, program="sleeper", cpu_weight=300, cpu_cap=0.5, mem_limit_bytes=256 << 20)
    instance = await zones.create(spec)
    try:
        zone = json.loads((seeded.state / "zones.json").read_text())["zones"][instance.name]
        assert zone["cpu-shares"] == "300"
        assert zone["capped-cpus"] == [{"ncpus": "0.50"}] and zone["capped-memorys"] == [{"physical": "256m"}]
    finally:
        await zones.destroy(instance)
    with pytest.raises(BackendError, match="no pinning"):
        await zones.create(InstanceSpec(Labels("zs3", "worker", "wo1"), program="hello", wait="exit", cpus="0"))
    assert await zones.list() == []


@needs_sshd
async def test_worker_runs_a_probe_in_the_zone_and_times_phases(zones: Backend, seeded: FakeHost) -> None:
    seeded.knobs(install_s=0.3, boot_s=0.2)
    spec = InstanceSpec(Labels("zs2", "worker", "wo1"), program="hello", wait="exit", capture_output=True)
    instance = await zones.create(spec)
    try:
        assert instance.state == "exited" and instance.exit_code == 0 and "hello" in (instance.output or "")
        assert instance.details["install_s"] >= 0.3 and instance.details["boot_s"] >= 0.2
        assert instance.boot_s >= instance.details["creation_s"] >= 0.5
    finally:
        await zones.destroy(instance)
    assert await zones.list("zs2") == []


@needs_sshd
async def test_failed_install_is_a_clear_error_and_leaves_nothing(zones: Backend, seeded: FakeHost) -> None:
    seeded.knobs(fail_install=["labtui-zs3-*"])
    with pytest.raises(BackendError, match=r"zoneadm -z labtui-zs3-wo1 install exited 1: ERROR: simulated failure"):
        await zones.create(InstanceSpec(Labels("zs3", "worker", "wo1"), program="hello", wait="exit"))
    names = {e.name for e in parse_zoneadm_list(seeded.tool("zoneadm", "list", "-cp").stdout)}
    assert "labtui-zs3-wo1" not in names
    foreign_intact(seeded)


@needs_sshd
async def test_hanging_boot_times_out_and_is_undone(zones: Backend, seeded: FakeHost) -> None:
    seeded.knobs(hang=["boot"])
    with pytest.raises(BackendError, match="timed out"):
        await zones.create(InstanceSpec(Labels("zs4", "background", "ba1"), timeout_s=3.0))
    seeded.knobs()
    assert await zones.list("zs4") == []


@needs_sshd
async def test_clone_from_template_and_real_error_messages(zones: Backend, seeded: FakeHost) -> None:
    instance = await zones.create(InstanceSpec(Labels("zs5", "background", "ba1"), image="labtui-imposter"))
    try:
        assert instance.details["template"] == "labtui-imposter" and instance.state == "running"
    finally:
        await zones.destroy(instance)
    with pytest.raises(BackendError, match=r"zoneadm: webzone: No such zone configured|must be installed before clone"):
        await zones.create(InstanceSpec(Labels("zs5", "background", "ba2"), image="webzone"))
    host = zones.host
    unknown = await host.run(["zoneadm", "-z", "z9", "boot"])
    assert unknown.returncode == 1 and unknown.stderr == "zoneadm: z9: No such zone configured\n"
    early = await host.run(["zoneadm", "-z", "labtui-imposter", "halt"])
    assert early.returncode == 1 and early.stderr.startswith("zoneadm: zone 'labtui-imposter': ")
    with pytest.raises(BackendError, match="bad zone name"):
        await zones.create(InstanceSpec(Labels("bad;session", "background", "ba1")))
    foreign_intact(seeded)


@needs_sshd
async def test_destroy_refuses_a_zone_without_our_labels(zones: Backend, seeded: FakeHost) -> None:
    (impostor,) = [i for i in await zones.list() if i.name == "labtui-imposter"] or [None]
    assert impostor is None  # not listed at all
    fake = (await zones.create(InstanceSpec(Labels("zs6", "background", "ba1"))))
    try:
        fake.handle = "labtui-imposter"
        with pytest.raises(BackendError, match="refusing to destroy zone labtui-imposter"):
            await zones.destroy(fake)
    finally:
        fake.handle = fake.name
        await zones.destroy(fake)
    foreign_intact(seeded)


def zone_commands(host: FakeHost, zone: str) -> list[str]:
    """The command lines of the processes the simulated zone runs."""
    found = []
    for pid in zone_processes(host, zone):
        try:
            found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return found


@needs_sshd
async def test_a_common_start_is_held_on_the_hosts_clock_and_exited_zones_are_ready_at_their_exit(
        zones: Backend, seeded: FakeHost) -> None:
    # the simulator runs zlogin's command as a real process here, so labtui-runat really sleeps
    start_at = await host_clock_ns(zones.host) / 1e9 + 3.0
    specs = [InstanceSpec(Labels("zs7", "worker", f"wo{n}"), program="hello", wait="exit", capture_output=True,
                          start_at=start_at) for n in range(3)]
    instances = await zones.create_many(specs)
    returned = time.time()
    try:
        for instance in instances:
            assert instance.state == "exited" and instance.exit_code == 0
            assert instance.output == "hello from labtui\n"  # the probe's stdout alone: runat reports on stderr
            booted = instance.created_at + instance.details["creation_s"]
            assert booted < start_at, "the zone was booted before the common start, so the start was held"
            # ready_at is the exit: after the held start (this host's clock is the controller's)
            assert instance.ready_at == pytest.approx(instance.created_at + instance.boot_s, abs=1e-6)
            assert start_at <= instance.ready_at <= returned
            assert round(start_at * 1e9) <= instance.details["start_ns"] <= instance.details["end_ns"]
        starts = [i.details["start_ns"] for i in instances]
        assert (max(starts) - min(starts)) / 1e9 < 0.5  # together (generous: 2 shared cores)
    finally:
        await zones.destroy_many(instances)
    assert await zones.list("zs7") == []


@needs_sshd
async def test_a_controller_clock_ahead_of_the_host_neither_starts_early_nor_matters(
        zones: Backend, seeded: FakeHost, monkeypatch: pytest.MonkeyPatch) -> None:
    # the controller's view of time 5 s ahead of the host: a hold computed there would not hold at all
    real_time = time.time
    skewed = types.SimpleNamespace(time=lambda: real_time() + 5.0, monotonic=time.monotonic)
    monkeypatch.setattr(sys.modules[type(zones).__module__], "time", skewed)
    start_at = await host_clock_ns(zones.host) / 1e9 + 2.0
    instance = await zones.create(InstanceSpec(Labels("zs8", "worker", "wo1"), program="hello", wait="exit",
                                               start_at=start_at))
    returned = real_time()
    try:
        assert returned >= start_at, "create returned before the common start: the probe started early"
        assert instance.details["start_ns"] >= round(start_at * 1e9) and instance.exit_code == 0
    finally:
        await zones.destroy(instance)


@needs_sshd
async def test_a_detached_program_is_held_by_runat_in_the_zone(zones: Backend, seeded: FakeHost) -> None:
    start_at = await host_clock_ns(zones.host) / 1e9 + 60.0
    instance = await zones.create(InstanceSpec(Labels("zs9", "background", "ba1"), program="sleeper",
                                               start_at=start_at))
    try:
        for _ in range(200):  # the detached subshell execs labtui-runat a moment after create returns
            commands = zone_commands(seeded, instance.name)
            held = [c for c in commands if c and f"/{RUNAT_NAME}-" in c.split()[0]]
            if held:
                break
            await asyncio.sleep(0.025)
        assert held and f" {round(start_at * 1e9)} -- " in held[0] and "/sleeper-" in held[0], commands
    finally:
        await zones.destroy(instance)
    assert zone_processes(seeded, instance.name) == []
    with pytest.raises(BackendError, match="start_at needs spec.program"):
        await zones.create(InstanceSpec(Labels("zs9", "background", "ba2"), image="labtui-imposter",
                                        start_at=start_at))


@needs_sshd
def test_cli_run_instances_and_cleanup_on_the_simulated_host(seeded: FakeHost, tmp_path: Path, keys: Path) -> None:
    config = write_lab(tmp_path, [seeded], keys)
    env = {**os.environ, "LABTUI_CONFIG": str(config), "LABTUI_RUNTIME_DIR": str(tmp_path / "rt"), "COLUMNS": "200"}
    db = tmp_path / "lab.duckdb"
    seeded.knobs(install_s=0.2)
    run = labtui("run", "zone-creation", "--backend", "zones", "--host", "zhost", "--set", "scale.steps=3",
                 "--set", 'worker.args=["fork", "0.1"]', "--db", str(db), env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("select value from results where metric = 'tcreate_s' order by step").fetchall()
    finally:
        con.close()
    assert len(rows) == 3 and all(r[0] >= 0.2 for r in rows)  # one creation time per zone, install included
    # leave labelled zones behind (as a crashed run would), then list and clean them up
    async def orphan() -> None:
        host = get_host("zhost")
        try:
            backend = open_backend("zones", host)
            await backend.create(InstanceSpec(Labels("orphan1", "background", "ba1")))
        finally:
            await host.close()
    env_backup = dict(os.environ)
    os.environ.update(env)
    try:
        asyncio.run(orphan())
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    listing = labtui("instances", "--backend", "zones", "--host", "zhost", "--format", "json", env=env)
    assert listing.returncode == 0 and "labtui-orphan1-ba1" in listing.stdout and "webzone" not in listing.stdout
    cleanup = labtui("cleanup", "--all", "--backend", "zones", "--host", "zhost", "--db", str(db), env=env)
    assert cleanup.returncode == 0, cleanup.stdout + cleanup.stderr
    names = {e.name for e in parse_zoneadm_list(seeded.tool("zoneadm", "list", "-cp").stdout)}
    assert names == {"global", "webzone", "labtui-imposter"}
    foreign_intact(seeded)


def test_lab_config_path_key(tmp_path: Path) -> None:
    from labtui.hosts.config import ConfigError, load_lab_config

    config = tmp_path / "lab.toml"
    config.write_text('[hosts.z]\naddress = "127.0.0.21"\npath = "/opt/sim/bin:/usr/bin"\n')
    assert load_lab_config(config).hosts["z"].path == "/opt/sim/bin:/usr/bin"
    config.write_text('[hosts.z]\naddress = "127.0.0.21"\npath = 3\n')
    with pytest.raises(ConfigError, match=r"lab.toml:3: host 'z': path: must be a non-empty string"):
        load_lab_config(config)
