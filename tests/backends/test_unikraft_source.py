"""Real Unikraft unikernels built from Unikraft's own source (../shared/vendor/unikraft) and booted by labtui.

The builds go to the user's cache directory on the host (build.py), so a CI
run builds each image once, whichever test module asks first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import cli_run
import duckdb
import pytest
from backend_lab import Lab
from unikraft_needs import needs_unikraft

from labtui.backends.base import BackendError, InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost
from labtui.programs.native import ProgramUnavailable
from plugins.unikraft import build, probe, rootfs, sources
from plugins.unikraft.qemu import command_line

BACKEND = "unikraft"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "uks"

#: Unikraft 0.16.3's codename, printed under its banner.
RELEASE = "Telesto 0.16.3"


pytestmark = needs_unikraft("Unikraft source tests")


#: The checkout: run from there, python -m labtui is this labtui even where CI also installed a wheel
#: (whose bundled files sit in site-packages, with no ../shared/vendor/unikraft beside them).
REPO = Path(__file__).resolve().parents[2]


def labtui(*args: str) -> subprocess.CompletedProcess[str]:
    return cli_run.labtui(*args, cwd=REPO, timeout=900)


def test_boot_scaling_boots_unikrafts_hello_world(runtime_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    run = labtui("run", "unikraft-boot-scaling", "--profile", "quick", "--db", str(db))
    assert run.returncode == 0, run.stderr + run.stdout
    with duckdb.connect(str(db), read_only=True) as store:
        (status,) = store.execute("SELECT status FROM sessions").fetchone()  # type: ignore[misc]
        assert status == "completed"
        version, isolation = store.execute("SELECT backend_version, isolation FROM hosts").fetchone()  # type: ignore[misc]
        accel = version.rsplit("; accel ", 1)[1]
        assert (accel, isolation) in (("kvm", "hvm-kvm"), ("tcg", "tcg-emulation"))
    said = " ".join((run.stdout + run.stderr).split())  # rich may wrap the line
    assert ("measured under QEMU's TCG emulation (no KVM)" in said) == (accel == "tcg")  # the table says so
    with duckdb.connect(str(db), read_only=True) as store:
        steps = store.execute("SELECT background, value FROM results WHERE metric = 'boot_time' ORDER BY background"
                              ).fetchall()
        assert {b for b, _ in steps} == {0, 5, 10} and all(v > 0 for _, v in steps)
        roles = dict(store.execute("SELECT role, count(*) FROM instances WHERE boot_s > 0 GROUP BY role").fetchall())
        assert roles["worker"] >= 3 and roles["background"] == 10


async def test_hello_world_prints_unikrafts_banner_and_version(lab: Lab) -> None:
    spec = InstanceSpec(Labels(lab.session(), "worker", "w1"), image="unikraft:helloworld", wait="exit",
                        capture_output=True, args=("from", "labtui"), timeout_s=120)
    hello = await lab.backend.create(spec)
    assert hello.exit_code == 0 and hello.state == "exited"
    console = hello.output or ""
    lines = console.splitlines()
    assert "Powered by" in lines and any(line.strip() == RELEASE for line in lines), console
    assert "Hello world!" in lines and '"from" "labtui"' in console  # app-helloworld's own lines
    assert hello.details["kernel"].endswith(f"/helloworld-{build.digest('helloworld')}")
    assert hello.details["accel"] == await lab.backend.accel()


async def test_sleeper_stays_up_ready_on_its_hello_line(lab: Lab) -> None:
    session = lab.session()
    (sleeper,) = await lab.sleepers(session, 1, image="unikraft:sleeper", program=None, timeout_s=120)
    assert sleeper.state == "running" and sleeper.boot_s is not None and sleeper.boot_s > 0
    console = Path(sleeper.details["console"]).read_text(errors="replace")
    assert RELEASE in console and "Hello world!" in console
    assert [i.labels.instance for i in await lab.backend.list(session)] == ["s0"]
    await lab.backend.destroy(sleeper)
    assert await lab.backend.list(session) == []


async def test_kvm_verdict_matches_a_real_boot_under_kvm(lab: Lab, monkeypatch: pytest.MonkeyPatch) -> None:
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        pytest.skip("no usable /dev/kvm: the probe has nothing to decide")
    host = LocalHost()
    hello = await build.ensure_image(host, "helloworld")
    verdict = await probe.probe(host, hello)
    monkeypatch.setenv("LABTUI_UNIKRAFT_ACCEL", "kvm")
    forced = open_backend("unikraft", host)
    spec = InstanceSpec(Labels(lab.session(), "worker", "w1"), image="unikraft:helloworld", wait="exit",
                        capture_output=True, timeout_s=15)
    if verdict.accel == "kvm":
        assert "Hello world!" in ((await forced.create(spec)).output or "")
    else:
        assert "KVM" in verdict.why
        with pytest.raises(BackendError):
            await forced.create(spec)


def test_a_changed_source_is_a_new_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for repo in ("unikraft", "app-helloworld"):
        with tarfile.open(sources.find(repo).path) as archive:
            archive.extractall(tmp_path / "unpacked", filter="data")
        (tmp_path / "unpacked" / repo).rename(tmp_path / repo)
    vendored = build.digest("helloworld")
    monkeypatch.setenv(sources.SOURCES_ENV, str(tmp_path))
    assert sources.find("app-helloworld").path == tmp_path / "app-helloworld"  # a checkout, not an archive
    assert sources.release() == "checkout"
    unchanged = build.digest("helloworld")
    main = tmp_path / "app-helloworld" / "main.c"
    main.write_text(main.read_text().replace("Hello world!", "Hello there!"))
    assert build.digest("helloworld") not in (unchanged, vendored)
    packed = sources.find("app-helloworld").pack(tmp_path)
    with tarfile.open(packed) as archive:
        assert "Hello there!" in archive.extractfile("app-helloworld/main.c").read().decode()  # type: ignore[union-attr]


def test_missing_sources_and_unknown_apps_are_one_line_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(sources.SOURCES_ENV, str(tmp_path))
    with pytest.raises(ProgramUnavailable, match=f"Unikraft source 'unikraft' in {tmp_path}: not found .*"
                                                 "LABTUI_UNIKRAFT_SOURCES"):
        build.digest("helloworld")
    with pytest.raises(ProgramUnavailable, match="unknown Unikraft app 'nginx'; labtui builds: helloworld, sleeper"):
        build.recipe("nginx")



def test_an_installed_labtui_finds_the_sources_beside_the_clone_it_runs_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Installed from a clone (pip install .), the bundled suites sit in site-packages; the vendored
    sources are found beside the clone the working directory is in."""
    monkeypatch.delenv(sources.SOURCES_ENV, raising=False)
    installed = tmp_path / "venv" / "site-packages" / "labtui" / "_bundled" / "suites"
    installed.mkdir(parents=True)
    monkeypatch.setattr(sources, "bundled_dir", lambda name: installed)
    clone = tmp_path / "work" / "labtui" / "docs"
    clone.mkdir(parents=True)
    vendored = tmp_path / "work" / "shared" / "vendor" / "unikraft"
    monkeypatch.chdir(clone)
    # none beside the clone yet: one further up (a machine whose /tmp/shared holds the sources), else named
    above = [p / "shared" / "vendor" / "unikraft" for p in tmp_path.parents]
    named = installed.parent.parent / "shared" / "vendor" / "unikraft"
    assert sources.default_dir() == next((p for p in above if p.is_dir()), named)
    vendored.mkdir(parents=True)
    assert sources.default_dir() == vendored


# -- the ELF loader running the host's own servers -------------------------------------------------


def test_nginx_scaling_serves_wrk_from_nginx_on_unikraft(runtime_dir: Path, tmp_path: Path) -> None:
    if shutil.which("wrk") is None or not Path("/usr/sbin/nginx").exists():
        pytest.skip("needs wrk and nginx-light on the host")
    db = tmp_path / "lab.duckdb"
    run = labtui("run", "unikraft-nginx-scaling", "--profile", "quick", "--db", str(db))
    assert run.returncode == 0, run.stderr + run.stdout
    with duckdb.connect(str(db), read_only=True) as store:
        rows = store.execute("SELECT background, value FROM results WHERE metric = 'requests_per_s' ORDER BY 1"
                             ).fetchall()
        assert [b for b, _ in rows] == [0, 2, 4] and all(v > 0 for _, v in rows)
        roles = dict(store.execute("SELECT role, count(*) FROM instances GROUP BY role").fetchall())
        assert roles == {"worker": 3, "background": 4}


async def test_redis_on_the_elf_loader_answers_on_its_forwarded_port(lab: Lab) -> None:
    if not Path("/usr/bin/redis-server").exists():
        pytest.skip("needs redis-server on the host")
    spec = InstanceSpec(Labels(lab.session(), "background", "r1"), image="unikraft:redis", timeout_s=180)
    redis = await lab.backend.create(spec)
    port = redis.details["ports"][6379]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"SET labtui unikraft\r\nGET labtui\r\n")
    answer = await asyncio.wait_for(reader.readuntil(b"unikraft\r\n"), 60)
    writer.close()
    assert answer == b"+OK\r\n$8\r\nunikraft\r\n"
    console = Path(redis.details["console"]).read_text(errors="replace")
    assert RELEASE in console and "Ready to accept connections" in console
    assert redis.details["kernel"].endswith(f"/elfloader-{build.digest('elfloader')}")
    await lab.backend.destroy(redis)


async def test_a_server_missing_on_the_host_is_one_line_before_anything_starts(
    lab: Lab, monkeypatch: pytest.MonkeyPatch
) -> None:
    absent = dataclasses.replace(rootfs.APPS["nginx"], binary="/nonexistent/nginx")
    monkeypatch.setitem(rootfs.APPS, "nginx", absent)
    with pytest.raises(BackendError) as raised:
        await lab.backend.prepare_images(["unikraft:nginx"])
    assert str(raised.value) == ("unikraft backend: image unikraft:nginx: Unikraft app 'nginx' runs the host's "
                                 "/nonexistent/nginx, which host local lacks: install nginx-light")


def test_app_arguments_reach_ukargparse_intact() -> None:
    assert command_line("", ["/usr/bin/redis-server", "--save", ""]) == "/usr/bin/redis-server --save ''"
    assert command_line("netdev.ip=10.0.2.15/24", ["/a", "b c"]) == "netdev.ip=10.0.2.15/24 -- /a 'b c'"
    with pytest.raises(BackendError, match="single quote"):
        command_line("", ["it's"])
