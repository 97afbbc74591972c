"""The unikraft backend with real QEMU processes booting labtui's test kernels."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import duckdb
import pytest

from labtui.backends import BackendError, InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost
from tests.backend_lab import Lab, open_lab
from labtui.kernels import ensure_kernel, kernel_names

pytestmark = pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None, reason="qemu-system-x86_64 not installed (apt-get install qemu-system-x86)"
)


@pytest.fixture
async def lab(runtime_dir: Path) -> AsyncIterator[Lab]:
    async for lab in open_lab("unikraft", "uk"):
        yield lab


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
    hello = await lab.backend.create(InstanceSpec(Labels(session, "worker", "w1"), program="hello", wait="exit"))
    assert hello.state == "exited" and hello.exit_code == 0
    assert 0 < hello.boot_s < 30
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
        assert argv[argv.index("-name") + 1] == f"labtui,,session={session},,role={instance.labels.role},,instance={instance.labels.instance}"
        assert "labtui-kernel sleeper: ready" in Path(instance.details["console"]).read_text()
        assert instance.boot_s > 0 and instance.state == "running"
    found = await lab.backend.list(session)
    assert {i.labels for i in found} == {i.labels for i in created}
    assert {i.details["pid"] for i in found} == {i.details["pid"] for i in created}
    assert all(i.state == "running" for i in found)
    memory = await lab.backend.memory_many(found)
    assert all(m is not None and m > 1_000_000 for m in memory)
    assert {i.labels.session for i in await lab.backend.list()} >= {session, other}


async def test_destroy_quits_through_qmp_and_force_kills(lab: Lab) -> None:
    session = lab.session()
    first, second = await lab.sleepers(session, 2)
    lab.backend.stop_grace_s = 20.0  # only QMP quit can end the first one quickly
    started = time.monotonic()
    await lab.backend.destroy(first)
    assert time.monotonic() - started < 10
    assert wait_gone(first.details["pid"]) and not Path(first.handle).exists()
    # force skips QMP: the helper kills the process at once
    await lab.backend.destroy(second, force=True)
    assert wait_gone(second.details["pid"])
    assert await lab.backend.list(session) == []
    await lab.backend.destroy(second)  # already gone: not an error


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
    with pytest.raises(BackendError, match="unknown test kernel 'nope'"):
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
    assert await lab.backend.list(labels.session) == []


async def test_an_image_description_boots_a_kernel_with_its_marker(lab: Lab, tmp_path: Path) -> None:
    """The path real Unikraft images take: a .toml description, relative kernel path, ready regex."""
    kernel = await ensure_kernel(lab.backend.host, "sleeper")
    shutil.copy(kernel, tmp_path / "app_qemu-x86_64")
    (tmp_path / "app.toml").write_text(
        'kernel = "app_qemu-x86_64"\nmemory = "8M"\nmachine = "microvm"\nready = "^labtui-kernel [a-z]+: ready$"\n'
    )
    session = lab.session()
    app = await lab.backend.create(InstanceSpec(Labels(session, "app", "a1"), image=str(tmp_path / "app.toml")))
    assert app.details["kernel"] == str(tmp_path / "app_qemu-x86_64") and alive(app.details["pid"])
    await lab.backend.destroy(app)
    assert wait_gone(app.details["pid"])


async def test_pinning_applies_affinity(lab: Lab) -> None:
    session = lab.session()
    (pinned,) = await lab.backend.create_many([InstanceSpec(Labels(session, "bg", "p1"), program="sleeper", cpus="0")])
    assert os.sched_getaffinity(pinned.details["pid"]) == {0}


def labtui(*args: str, env: dict[str, str], timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "labtui", *args], env=env, capture_output=True, text=True, timeout=timeout)


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
        out = labtui("cleanup", "--all", "--backend", "unikraft", "--db", str(tmp_path / "x.duckdb"), env=env)
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
    assert [step for step, _ in boots] == [0, 1, 2] and all(0 < value < 30 for _, value in boots)
    assert con.execute("select count(*) from instances where role = 'background'").fetchone()[0] == 4
    con.close()
    assert not any(f"session={sid}" in arg for pid in _qemu_pids() for arg in cmdline(pid))


def _qemu_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and alive(int(p.name))
            and cmdline(int(p.name))[:1] == ["qemu-system-x86_64"]]
