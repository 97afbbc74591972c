"""The unikraft backend with real QEMU processes booting labtui's test kernels."""

from __future__ import annotations

import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
from backend_lab import Lab, open_lab
from cli_run import labtui

from labtui.backends.base import BackendError, InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost
from labtui.programs.kernels import FLAGS, ensure_kernel, kernel_names, kernels_dir
from labtui.suites.loader import load_suite

BACKEND = "unikraft"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "uk"

SIMULATORS = Path(__file__).resolve().parents[1] / "simulators"

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None, reason="qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
)


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    except OSError:
        return []


def alive(pid: int) -> bool:
    """Running and not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def started(pid: int) -> str | None:
    """The start time of pid (field 22 of /proc/PID/stat), None when there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except OSError:
        return None


def listening(pid: int) -> set[tuple[str, int]]:
    """The (address, port) pairs of the TCP sockets pid listens on, from /proc/net/tcp{,6}."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                address, port = fields[1].split(":")
                ip = ".".join(str(b) for b in reversed(bytes.fromhex(address))) if table == "tcp" else f"[{address}]"
                found.add((ip, int(port, 16)))
    return found


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.02)
    return False


async def test_kernels_build_as_32bit_multiboot_elf(runtime_dir: Path) -> None:
    assert kernel_names() == ["hello", "sleeper", "spinner"]
    kernel = Path(await ensure_kernel(LocalHost(), "hello"))
    data = kernel.read_bytes()
    assert data[:5] == b"\x7fELF\x01"  # ELF, 32-bit: what QEMU's multiboot loader takes
    header = data.find((0x1BADB002).to_bytes(4, "little"))
    assert 0 <= header < 8192  # the multiboot header sits in the first 8 KiB
    assert await ensure_kernel(LocalHost(), "hello") == str(kernel)  # cached


async def test_hello_boots_and_exits_through_debug_exit(lab: Lab) -> None:
    session = lab.session()
    began = time.monotonic()
    hello = await lab.backend.create(
        InstanceSpec(Labels(session, "worker", "w1"), program="hello", wait="exit", capture_output=True)
    )
    took = time.monotonic() - began
    assert hello.state == "exited" and hello.exit_code == 0
    assert "labtui-kernel hello: ready" in hello.output  # the serial console is the guest's stdout
    assert 0 < hello.boot_s <= took + 0.001  # measured inside the create call
    assert hello.details["accel"] in ("kvm", "tcg") and hello.details["machine"] == "microvm"
    assert not Path(hello.handle).exists()  # the state directory went with it
    assert not Path(hello.handle).parent.exists()  # and the session's, once empty
    assert await lab.backend.list(session) == []
    assert await lab.backend.isolation() in ("hvm-kvm", "tcg-emulation")


async def test_hello_boots_under_tcg(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABTUI_UNIKRAFT_ACCEL", "tcg")
    backend = open_backend("unikraft", LocalHost())
    hello = await backend.create(InstanceSpec(Labels(lab.session(), "worker", "w1"), program="hello", wait="exit"))
    assert hello.exit_code == 0 and hello.details["accel"] == "tcg"
    assert await backend.isolation() == "tcg-emulation"


async def test_sleepers_are_listed_with_labels_memory_and_console(lab: Lab) -> None:
    session, other = lab.session(), lab.session()
    created = await lab.sleepers(session, 5)
    await lab.sleepers(other, 1)
    for instance in created:
        pid = instance.details["pid"]
        argv = cmdline(pid)
        assert argv[argv.index("-name") + 1] == (f"labtui,,session={session},,role={instance.labels.role},,"
                                                 f"instance={instance.labels.instance}")
        assert "labtui-kernel sleeper: ready" in Path(instance.details["console"]).read_text()
        assert instance.boot_s > 0 and instance.state == "running"
    found = await lab.backend.list(session)
    assert {i.labels for i in found} == {i.labels for i in created}
    assert {i.details["pid"] for i in found} == {i.details["pid"] for i in created}
    assert all(i.state == "running" for i in found)
    memory = await lab.backend.memory_many(found)
    assert all(m is not None and m > 1_000_000 for m in memory)
    assert {i.labels.session for i in await lab.backend.list()} >= {session, other}


async def test_destroy_returns_once_the_qemu_is_gone(lab: Lab) -> None:
    """QMP quit (or SIGKILL with force), and destroy returns only when the process no longer exists."""
    session = lab.session()
    first, second = await lab.sleepers(session, 2)
    births = {i.details["pid"]: started(i.details["pid"]) for i in (first, second)}
    lab.backend.stop_grace_s = 3600.0  # only QMP quit can end the first one before the test gives up
    async with asyncio.timeout(120):
        await lab.backend.destroy(first)
    # no waiting here: not running, not a zombie, the pid names no process (or a new one)
    assert started(first.details["pid"]) != births[first.details["pid"]]
    assert not Path(first.handle).exists()
    # force skips QMP: the helper kills the process at once, and waits for it too
    await lab.backend.destroy(second, force=True)
    assert started(second.details["pid"]) != births[second.details["pid"]]
    assert await lab.backend.list(session) == []
    await lab.backend.destroy(second)  # already gone: not an error


async def test_ports_are_forwarded_from_distinct_loopback_ports(lab: Lab) -> None:
    """Instances started together each get their own free 127.0.0.1 ports, bound by their own QEMU."""
    session = lab.session()
    created = await lab.sleepers(session, 3, ports=(80, 6379))
    host_ports: list[int] = []
    for instance in created:
        pid, ports = instance.details["pid"], instance.details["ports"]
        assert set(ports) == {80, 6379}
        # QEMU listens on exactly these, on loopback only
        assert listening(pid) == {("127.0.0.1", ports[80]), ("127.0.0.1", ports[6379])}
        argv = cmdline(pid)
        netdev = "user,id=net0,hostfwd=tcp:127.0.0.1:0-:80,hostfwd=tcp:127.0.0.1:0-:6379"
        assert argv[argv.index("-netdev") + 1] == netdev
        for port in ports.values():
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass  # QEMU's user network accepted it
        host_ports += ports.values()
    assert len(set(host_ports)) == 6
    await lab.backend.destroy_many(created)
    assert all(started(i.details["pid"]) is None or not listening(i.details["pid"]) for i in created)


async def test_orphans_are_found_by_a_fresh_backend(lab: Lab, runtime_dir: Path) -> None:
    session = lab.session()
    created = await lab.sleepers(session, 2, program="spinner")
    fresh = open_backend("unikraft", LocalHost())  # no memory of the creates
    found = await fresh.list(session)
    assert sorted(i.details["pid"] for i in found) == sorted(i.details["pid"] for i in created)
    await fresh.destroy_many(found)
    assert all(wait_gone(i.details["pid"]) for i in created)


async def test_a_reused_pid_is_refused(lab: Lab, runtime_dir: Path) -> None:
    """A state directory whose pidfile names someone else's process must not harm it."""
    session = lab.session()
    (victim,) = await lab.sleepers(session, 1)
    decoy = subprocess.Popen(["sleep", "60"])
    try:
        Path(victim.handle, "qemu.pid").write_text(f"{decoy.pid}\n")
        with pytest.raises(BackendError, match="refused"):
            await lab.backend.destroy(victim, force=True)
        assert decoy.poll() is None
    finally:
        Path(victim.handle, "qemu.pid").write_text(f"{victim.details['pid']}\n")
        decoy.kill()
        decoy.wait()


async def test_bad_specs_and_missing_images_are_refused(lab: Lab, tmp_path: Path) -> None:
    labels = Labels(lab.session(), "worker", "w1")
    with pytest.raises(BackendError, match="program nope: unknown program 'nope': neither a test kernel \\(hello, "):
        await lab.backend.create(InstanceSpec(labels, program="nope"))
    with pytest.raises(BackendError, match="not found on host"):
        await lab.backend.create(InstanceSpec(labels, image=str(tmp_path / "nginx_qemu-x86_64")))
    description = tmp_path / "nginx.toml"
    description.write_text('kernel = "nginx_qemu-x86_64"\nmemroy = "64M"\n')
    with pytest.raises(BackendError, match=r"nginx.toml: memroy: unknown key"):
        await lab.backend.create(InstanceSpec(labels, image=str(description)))
    with pytest.raises(BackendError, match="label session="):
        await lab.backend.create(InstanceSpec(Labels("a,b", "r", "i"), program="sleeper"))
    with pytest.raises(BackendError, match="mem_limit"):
        await lab.backend.create(InstanceSpec(labels, program="sleeper", mem_limit_bytes=1 << 20))
    with pytest.raises(BackendError, match="neither cpu_weight nor cpu_limit"):
        await lab.backend.create(InstanceSpec(labels, program="sleeper", cpu_cap=0.5))
    with pytest.raises(BackendError, match=r"cannot hold a unikernel's start .*start_at"):
        await lab.backend.create(InstanceSpec(labels, program="sleeper", start_at=1e9))
    assert await lab.backend.list(labels.session) == []


async def test_an_image_description_boots_a_kernel_with_its_marker(lab: Lab, tmp_path: Path) -> None:
    """The path real Unikraft images take: a .toml description, relative kernel path, ready regex."""
    kernel = await ensure_kernel(lab.backend.host, "sleeper")
    shutil.copy(kernel, tmp_path / "app_qemu-x86_64")
    (tmp_path / "app.toml").write_text(
        'kernel = "app_qemu-x86_64"\nmemory = "8M"\nmachine = "microvm"\nready = "^labtui-kernel [a-z]+: ready$"\n'
        'cmd = ["/usr/bin/app", "-c"]\nports = [8080]\n'
    )
    session = lab.session()
    spec = InstanceSpec(Labels(session, "app", "a1"), image=str(tmp_path / "app.toml"), args=("x",), ports=(80,))
    app = await lab.backend.create(spec)
    assert app.details["kernel"] == str(tmp_path / "app_qemu-x86_64") and alive(app.details["pid"])
    argv = cmdline(app.details["pid"])
    # no kernel args: the command alone (ukboot 0.16.3 keeps a leading "--", which would be the app's argv[1])
    assert argv[argv.index("-append") + 1] == "/usr/bin/app -c x"
    # the description's ports and the spec's, each from its own loopback port
    assert set(app.details["ports"]) == {8080, 80}
    assert listening(app.details["pid"]) == {("127.0.0.1", p) for p in app.details["ports"].values()}
    await lab.backend.destroy(app)
    assert wait_gone(app.details["pid"])


async def test_pinning_applies_affinity(lab: Lab) -> None:
    session = lab.session()
    (pinned,) = await lab.backend.create_many([InstanceSpec(Labels(session, "bg", "p1"), program="sleeper", cpus="0")])
    assert os.sched_getaffinity(pinned.details["pid"]) == {0}


def test_cleanup_never_touches_a_qemu_labtui_did_not_start(runtime_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(runtime_dir), "COLUMNS": "200"}
    kernel = asyncio.run(ensure_kernel(LocalHost(), "sleeper"))
    lab_session = f"uk-{secrets.token_hex(4)}"
    labelled = asyncio.run(
        open_backend("unikraft", LocalHost()).create(InstanceSpec(Labels(lab_session, "bg", "x1"), program="sleeper"))
    )
    plain = subprocess.Popen(
        ["qemu-system-x86_64", "-accel", "tcg", "-machine", "microvm", "-m", "8M", "-display", "none",
         "-nodefaults", "-kernel", kernel, "-name", "someone-else"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        # what --all would end (a dry run: other tests' unikernels on this machine live on) ...
        db = str(tmp_path / "x.duckdb")
        dry = labtui("cleanup", "--all", "--dry-run", "--backend", "unikraft", "--db", db, env=env)
        assert dry.returncode == 0 and labelled.name in dry.stdout, dry.stdout + dry.stderr
        assert "someone-else" not in dry.stdout
        # ... and the cleanup of the session ends its unikernel and nothing else
        out = labtui("cleanup", "--session", lab_session, "--backend", "unikraft", "--db", db, env=env)
        assert out.returncode == 0, out.stdout + out.stderr
        assert wait_gone(labelled.details["pid"])
        assert plain.poll() is None and alive(plain.pid)
    finally:
        plain.kill()
        plain.wait()


def test_run_boot_scaling_end_to_end(tmp_path: Path) -> None:
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "200"}
    db = tmp_path / "x.duckdb"
    small = ["--set", "scale.steps=2", "--set", "scale.per_step=2", "--set", "suite.repetitions=1"]
    out = labtui("run", "unikraft-boot-scaling", "--backend", "unikraft", *small, "--db", str(db), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    con = duckdb.connect(str(db), read_only=True)
    (sid, status), = con.execute("select session_id, status from sessions").fetchall()
    assert status == "completed"
    boots = con.execute("select step, value from results where metric = 'boot_time' order by step").fetchall()
    assert [step for step, _ in boots] == [s for s in range(3) for _ in range(5)]  # worker.runs = 5
    assert all(0 < value < 30 for _, value in boots)
    assert con.execute("select count(*) from instances where role = 'background'").fetchone()[0] == 4
    con.close()
    assert not any(f"session={sid}" in arg for pid in _qemu_pids() for arg in cmdline(pid))


def _qemu_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and alive(int(p.name))
            and cmdline(int(p.name))[:1] == ["qemu-system-x86_64"]]


# -- real-image suites ---------------------------------------------------------


async def test_prepare_images_says_which_image_is_missing_and_how_to_build_it(lab: Lab, tmp_path: Path) -> None:
    missing = tmp_path / "redis.toml"
    with pytest.raises(BackendError, match=rf"{re.escape(str(missing))} does not exist; build it with kraft: .*"
                                           r"catalog/library/redis/7\.2 && kraft build --plat qemu --arch x86_64"):
        await lab.backend.prepare_images([str(missing)])
    described = tmp_path / "nginx.toml"
    described.write_text('kernel = "nginx_qemu-x86_64"\ninitrd = "initramfs-x86_64.cpio"\nports = [80]\n')
    with pytest.raises(BackendError, match=rf"kernel {re.escape(str(tmp_path / 'nginx_qemu-x86_64'))} "
                                           r"\(from .*nginx\.toml\) not found on host local; build it with kraft"):
        await lab.backend.prepare_images([str(described)])
    kernel = await ensure_kernel(lab.backend.host, "sleeper")
    shutil.copy(kernel, tmp_path / "nginx_qemu-x86_64")
    with pytest.raises(BackendError, match=r"initrd .*initramfs-x86_64\.cpio .*not found on host local"):
        await lab.backend.prepare_images([str(described)])
    (tmp_path / "initramfs-x86_64.cpio").write_bytes(b"")
    await lab.backend.prepare_images([str(described)])  # everything there: no error


@pytest.mark.parametrize("app", ["nginx", "redis"])
def test_real_image_suites_stop_before_any_instance_when_the_image_is_missing(
    app: str, runtime_dir: Path, tmp_path: Path
) -> None:
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(runtime_dir), "COLUMNS": "400"}
    image = str(tmp_path / f"{app}.toml")
    db = tmp_path / "x.duckdb"
    args = [arg for table in ("worker", "background") for arg in ("--set", f"{table}.image={image}")]
    out = labtui("run", f"unikraft-{app}-scaling", *args, "--db", str(db), env=env, timeout=120)
    assert out.returncode != 0
    said = " ".join((out.stdout + out.stderr).split())
    assert f"unikraft image description {image} does not exist" in said and "kraft build" in said
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("select status from sessions").fetchall() == [("failed",)]
    assert con.execute("select count(*) from instances").fetchone() == (0,)  # none was even attempted
    con.close()


@pytest.mark.parametrize("app", ["nginx", "redis", "sqlite"])
def test_real_image_suites_mirror_their_docker_suites(app: str) -> None:
    unikraft, docker = load_suite(f"unikraft-{app}-scaling"), load_suite(f"docker-{app}-scaling")
    assert unikraft.backend == "unikraft" and unikraft.kind == docker.kind == "scaling"
    assert (unikraft.scale, unikraft.repetitions, unikraft.load) == (docker.scale, docker.repetitions, docker.load)
    assert (unikraft.worker.measure, unikraft.worker.runs) == (docker.worker.measure, docker.worker.runs)
    # all three are built from Unikraft's source (tests/backends/test_unikraft_source.py): nginx and redis as images of the
    # host's servers, sqlite as labtui's probe under the ELF loader
    if app == "sqlite":
        assert (unikraft.worker.program, unikraft.worker.args[0]) == ("sqlite", docker.worker.args[0])
    else:
        assert unikraft.worker.image == f"unikraft:{app}"
    header = Path(unikraft.source).read_text().split("\n[suite]")[0]
    assert "seed 001" in header and f"uk_{ {'nginx': 'ng', 'redis': 're', 'sqlite': 'sql'}[app]}_s" in header


# -- kraft mode (against tests/simulators/kraft) --------------------------------


@dataclass
class KraftSim:
    """The simulated kraft on PATH: its state (knobs) and KRAFTKIT_RUNTIME_DIR."""

    state: Path
    runtime: Path

    def knobs(self, **values: object) -> None:
        (self.state / "sim.json").write_text(json.dumps(values))

    def kraft(self, *args: str) -> subprocess.CompletedProcess:
        """Run the simulated kraft directly (whatever PATH is)."""
        env = {**os.environ, "LABTUI_SIM_STATE": str(self.state), "KRAFTKIT_RUNTIME_DIR": str(self.runtime)}
        return subprocess.run([str(SIMULATORS / "kraft"), *args], env=env, capture_output=True, text=True,
                              timeout=60, check=False)

    def ps(self) -> list[dict[str, str]]:
        out = self.kraft("ps", "--long", "--all", "-o", "json")
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout) or []


@pytest.fixture
def kraft_sim(runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[KraftSim]:
    """kraft mode, with the simulator first on PATH; every machine and QEMU of it is gone afterwards."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "kraft").symlink_to(SIMULATORS / "kraft")
    (tmp_path / "state").mkdir()
    # kraft keeps QMP sockets in its runtime dir: keep it short (108-byte unix socket paths)
    runtime = Path(tempfile.mkdtemp(prefix="kr", dir="/tmp"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("LABTUI_SIM_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("KRAFTKIT_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("LABTUI_UNIKRAFT_MODE", "kraft")
    # kraft under KVM asks for -cpu host, which nested KVM may refuse; TCG runs anywhere
    monkeypatch.setenv("LABTUI_UNIKRAFT_ACCEL", "tcg")
    sim = KraftSim(tmp_path / "state", runtime)
    try:
        yield sim
    finally:
        try:
            sim.knobs()
            sim.kraft("rm", "--all")
        finally:
            for pid in _qemu_pids():
                if any(str(runtime) in arg for arg in cmdline(pid)):
                    os.kill(pid, signal.SIGKILL)
            shutil.rmtree(runtime, ignore_errors=True)


@pytest.fixture
async def kraft_lab(kraft_sim: KraftSim) -> AsyncIterator[Lab]:
    async for lab in open_lab("unikraft", "ukk"):
        yield lab


def machine(labels: Labels) -> str:
    return f"labtui,session={labels.session},role={labels.role},instance={labels.instance}"


async def test_kraft_mode_runs_lists_and_removes_labelled_machines(kraft_lab: Lab, kraft_sim: KraftSim) -> None:
    backend = kraft_lab.backend
    availability = await backend.check()
    assert availability.usable and "started by kraft" in availability.reason and "kraft" in availability.version
    session = kraft_lab.session()
    began = time.monotonic()
    created = await kraft_lab.sleepers(session, 2)
    took = time.monotonic() - began
    for instance in created:
        pid, machine_id = instance.details["pid"], instance.details["machine_id"]
        assert instance.handle == f"kraft:{machine_id}:{pid}" and instance.state == "running"
        assert instance.details["kraft_name"] == machine(instance.labels)
        argv = cmdline(pid)  # the QEMU kraft started: kraft's machine id as -name, its state directory
        assert argv[argv.index("-name") + 1] == machine_id
        assert argv[argv.index("-pidfile") + 1] == f"{kraft_sim.runtime}/{machine_id}/machine.pid"
        assert "labtui-kernel sleeper: ready" in Path(instance.details["console"]).read_text()
        assert 0 < instance.boot_s <= took + 0.001  # measured inside the create call
    # a machine someone else runs with kraft
    other = kraft_sim.kraft("run", "--detach", "--disable-acceleration", "--name", "someone-else", "-M", "8Mi",
                            created[0].details["kernel"])
    assert other.returncode == 0, other.stderr
    listed = {row["name"]: row for row in kraft_sim.ps()}
    assert set(listed) == {machine(i.labels) for i in created} | {"someone-else"}
    fresh = open_backend("unikraft", LocalHost())  # no memory of the creates: kraft ps is the source
    found = await fresh.list(session)
    assert {(i.labels, i.handle) for i in found} == {(i.labels, i.handle) for i in created}
    assert all(i.state == "running" for i in found)
    assert all(m is not None and m > 1_000_000 for m in await fresh.memory_many(found))
    assert "someone-else" not in {i.details["kraft_name"] for i in await fresh.list()}
    births = {i.details["pid"]: started(i.details["pid"]) for i in created}
    await fresh.destroy_many(found)
    assert all(started(pid) != birth for pid, birth in births.items())  # gone when destroy returned
    left = {row["name"]: row for row in kraft_sim.ps()}
    assert set(left) == {"someone-else"} and alive(int(left["someone-else"]["pid"]))


async def test_kraft_rm_that_leaves_qemu_running_is_caught(kraft_lab: Lab, kraft_sim: KraftSim) -> None:
    """kraft only logs a failed stop and deletes the machine: labtui finds its QEMU and ends it."""
    session = kraft_lab.session()
    victim, bystander, forgotten = await kraft_lab.sleepers(session, 3)
    kraft_sim.knobs(fail_stop=[f"*instance={victim.labels.instance}", f"*instance={forgotten.labels.instance}"])
    # what kraft does on its own: the machine is gone from kraft, its QEMU is not
    out = kraft_sim.kraft("rm", machine(forgotten.labels))
    assert out.returncode == 0 and "could not stop machine" in out.stderr
    assert machine(forgotten.labels) not in {row["name"] for row in kraft_sim.ps()}
    assert alive(forgotten.details["pid"])
    births = {i.details["pid"]: started(i.details["pid"]) for i in (victim, bystander, forgotten)}
    await kraft_lab.backend.destroy_many([victim, bystander, forgotten])
    assert all(started(pid) != birth for pid, birth in births.items())
    assert not [row for row in kraft_sim.ps() if session in row["name"]]


@pytest.fixture
def crash_kernel(tmp_path: Path) -> Path:
    """A multiboot kernel that prints a reading line and triple-faults, marked as Unikraft for kraft."""
    source = tmp_path / "crash.c"
    source.write_text(
        '#include "kernel.h"\n'
        "void kmain(void)\n{\n"
        "\tstatic const struct { unsigned short limit; unsigned int base; } __attribute__((packed)) none = {0, 0};\n"
        "\tserial_init();\n"
        '\tserial_puts("{\\"benchmark\\":\\"crash\\",\\"metric\\":\\"ran\\",\\"value\\":1,\\"unit\\":\\"n\\",'
        '\\"better\\":\\"higher\\"}\\n");\n'
        '\t__asm__ volatile("lidt %0; int3" : : "m"(none));\n}\n'
    )
    kernel = tmp_path / "crash_qemu-x86_64"
    subprocess.run(["gcc", *FLAGS, f"-Wl,-T,{kernels_dir() / 'kernel.ld'}", f"-I{kernels_dir()}", "-o", str(kernel),
                    str(kernels_dir() / "boot.S"), str(source)], check=True, capture_output=True)
    # kraft runs only files with a Unikraft section
    subprocess.run(["objcopy", "--add-section", ".uk_inittab=/dev/null", str(kernel)], check=True)
    return kernel


async def test_kraft_mode_boots_an_image_to_its_exit(kraft_lab: Lab, kraft_sim: KraftSim, crash_kernel: Path,
                                                     tmp_path: Path) -> None:
    """A unikernel that ends its own QEMU (here by a triple fault; -no-reboot): exit, output, nothing left."""
    (tmp_path / "crash.toml").write_text('kernel = "crash_qemu-x86_64"\nmemory = "8M"\n')
    session = kraft_lab.session()
    spec = InstanceSpec(Labels(session, "worker", "w1"), image=str(tmp_path / "crash.toml"), wait="exit",
                        capture_output=True)
    began = time.monotonic()
    ran = await kraft_lab.backend.create(spec)
    took = time.monotonic() - began
    assert ran.state == "exited" and ran.exit_code == 0 and 0 < ran.boot_s <= took + 0.001
    assert '{"benchmark":"crash"' in ran.output
    assert not alive(ran.details["pid"]) and kraft_sim.ps() == []


async def test_kraft_mode_refuses_what_kraft_cannot_do(kraft_lab: Lab, kraft_sim: KraftSim, tmp_path: Path) -> None:
    labels = Labels(kraft_lab.session(), "worker", "w1")
    with pytest.raises(BackendError, match="every interface"):
        await kraft_lab.backend.create(InstanceSpec(labels, program="sleeper", ports=(80,)))
    with pytest.raises(BackendError, match="isa-debug-exit"):
        await kraft_lab.backend.create(InstanceSpec(labels, program="hello", wait="exit"))
    shutil.copy(await ensure_kernel(kraft_lab.backend.host, "sleeper"), tmp_path / "k")
    (tmp_path / "k.toml").write_text('kernel = "k"\nappend = "vfs.fstab=a,b netdev.ip=10.0.2.15/24"\n')
    with pytest.raises(BackendError, match="comma"):
        await kraft_lab.backend.create(InstanceSpec(labels, image=str(tmp_path / "k.toml")))
    assert kraft_sim.ps() == []
    # the same labels twice: kraft refuses the name, and the running machine is left alone
    (first,) = await kraft_lab.sleepers(labels.session, 1)
    with pytest.raises(BackendError, match="name already in use"):
        await kraft_lab.sleepers(labels.session, 1)
    assert alive(first.details["pid"]) and [row["name"] for row in kraft_sim.ps()] == [machine(first.labels)]
    with pytest.MonkeyPatch.context() as patch:  # the fixtures' cleanup needs kraft back
        patch.setenv("PATH", "/usr/bin:/bin")  # no kraft
        gone = await open_backend("unikraft", LocalHost()).check()
        assert not gone.usable and "kraft" in gone.reason
        patch.setenv("LABTUI_UNIKRAFT_MODE", "firecracker")
        with pytest.raises(BackendError, match="LABTUI_UNIKRAFT_MODE='firecracker'"):
            open_backend("unikraft", LocalHost())
