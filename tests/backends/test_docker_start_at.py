"""The docker backend holds a container's program until InstanceSpec.start_at (host clock).

Against a real Docker engine on this machine: containers created one after
another must start their programs together, at start_at and not before, as
the `concurrent` and `fairshare` kinds rely on.  Skipped, with the reason, only
when the engine's socket does not exist.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import secrets
import tarfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiodocker
import cli_run
import duckdb
import pytest

from labtui.backends.base import BackendError, InstanceSpec, Labels
from labtui.engine.hostclock import host_clock_ns
from labtui.hosts.local import LocalHost
from labtui.programs.runat import NAME as RUNAT_NAME

BACKEND = "docker"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "startat"

SOCKET = "/var/run/docker.sock"
#: Seconds from choosing start_at to it: room for the creates, as a suite's start_delay_s.
DELAY_S = 1.5
#: The largest spread of the programs' starts accepted (measured: under 1 ms on a local engine).
SPREAD_NS = 200_000_000

pytestmark = pytest.mark.skipif(
    not Path(SOCKET).is_socket(), reason=f"no Docker engine socket at {SOCKET}: start dockerd to run these tests"
)


async def start_at() -> float:
    """A start DELAY_S ahead on this host's clock, chosen as the engine chooses it."""
    return await host_clock_ns(LocalHost()) / 1e9 + DELAY_S


def build_context(dockerfile: str) -> bytes:
    """A tar build context holding only a Dockerfile."""
    data = dockerfile.encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
async def images(lab) -> AsyncIterator[dict[str, str]]:
    """Test images on top of labtui's probe images: with an Entrypoint, with only a Cmd, with neither."""
    await lab.backend.images.ensure_cached("arith")
    tag = secrets.token_hex(4)
    dockerfiles = {
        "entrypoint": 'FROM labtui/arith\nENTRYPOINT ["/bin/arith"]\nCMD ["int", "0.1"]\n',
        "cmd": 'FROM labtui/arith\nCMD ["/bin/hello"]\n',
        "none": 'FROM labtui/arith\nCMD []\n',
    }
    names = {kind: f"labtui-test-startat-{kind}:{tag}" for kind in dockerfiles}
    try:
        async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
            for kind, dockerfile in dockerfiles.items():
                await docker.images.build(fileobj=io.BytesIO(build_context(dockerfile)), encoding="identity",
                                          tag=names[kind], rm=True)
        yield names
    finally:
        async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
            for name in names.values():
                try:
                    await docker.images.delete(name, force=True)
                except aiodocker.DockerError:
                    pass


async def test_held_containers_start_together_at_start_at_past_the_create_gate(lab):
    """Four containers through a gate of two: without the hold the first two would start at once, the
    last two only after the first exits; with it all four start within SPREAD_NS, none before start_at."""
    session = lab.session()
    lab.backend.max_parallel_creates = 2
    await lab.backend.prepare(["hello"])  # a first build of the image must not eat the delay
    # Held programs start together only when all four creates end before start_at: on a machine too slow
    # for that, the attempt is repeated with twice the delay (no wall-clock threshold on creation).
    spreads = []
    for attempt in range(4):
        at = await start_at() + DELAY_S * (2 ** attempt - 1)
        specs = [InstanceSpec(Labels(session, "worker", f"w{attempt}-{n}"), program="hello", wait="exit",
                              capture_output=True, start_at=at) for n in range(4)]
        instances = await lab.backend.create_many(specs)
        at_ns = round(at * 1e9)
        started = [i.details["start_ns"] for i in instances]
        assert all(s >= at_ns for s in started), [(s - at_ns) / 1e6 for s in started]  # never before start_at
        spreads.append(((max(started) - min(started)) / 1e6, (max(started) - at_ns) / 1e6))
        print(f"\n4 held hello containers (gate 2), start {DELAY_S * 2 ** attempt:g} s ahead: start spread "
              f"{spreads[-1][0]:.3f} ms, last start {spreads[-1][1]:.3f} ms after start_at")
        if max(started) - min(started) < SPREAD_NS and max(started) - at_ns < SPREAD_NS:
            break  # instances that wait for their exit are removed once they exited
    else:
        pytest.fail(f"held containers never started together: (spread, last start after start_at) ms {spreads}")
    for instance in instances:
        assert instance.exit_code == 0 and instance.state == "exited"
        assert instance.output == "hello from labtui\n"  # labtui-runat's line went to stderr
        assert instance.details["start_at_ns"] == at_ns
        assert instance.details["start_ns"] <= instance.details["end_ns"]
        # The controller's clock is the host's here: the exit was seen after start_at.
        assert instance.ready_at >= at
        assert set(instance.details["phases"]) == {"create_s", "stage_s", "start_s", "run_s"}
        assert instance.boot_s == pytest.approx(sum(instance.details["phases"].values()), abs=1e-6)
    assert await lab.backend.list(session) == []


async def test_a_held_ready_container_runs_labtui_runat_until_start_at(lab):
    session = lab.session()
    await lab.backend.prepare(["sleeper"])
    # The listing must be taken before start_at: on a machine too slow to create and list within the delay,
    # that attempt shows nothing and is repeated with twice the delay (no wall-clock threshold on creation).
    for attempt in range(6):
        at = await start_at() + DELAY_S * (2 ** attempt - 1)
        (instance,) = await lab.backend.create_many(
            [InstanceSpec(Labels(session, "idle", f"r{attempt}"), program="sleeper", start_at=at)])
        before = await commands(instance.handle)
        if time.time() < at:
            break
        await lab.backend.destroy(instance, force=True)
    else:
        pytest.fail("creating and listing a held container never finished before a start up to 48 s ahead")
    try:
        assert instance.state == "running"
        assert len(before) == 1 and before[0].startswith(f"/labtui/bin/{RUNAT_NAME}-")
        assert before[0].endswith(f" {round(at * 1e9)} -- /bin/sleeper")
        await asyncio.sleep(max(0.0, at - time.time()) + 0.5)
        after = await commands(instance.handle)
        assert sorted(after) == sorted([before[0], "/bin/sleeper"])  # host pids may wrap: no order
    finally:
        await lab.backend.destroy(instance, force=True)


async def commands(container_id: str) -> list[str]:
    """The command lines of a container's processes, as the engine's top lists them."""
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        top = await docker._query_json(f"containers/{container_id}/top", params={"ps_args": "-o pid,args"})
    column = top["Titles"].index("COMMAND")
    return [row[column] for row in top["Processes"]]


async def test_other_images_hold_their_entrypoint_and_cmd(lab, images):
    session = lab.session()
    at = await start_at()
    specs = [
        InstanceSpec(Labels(session, "worker", "e0"), image=images["entrypoint"], wait="exit",
                     capture_output=True, start_at=at),
        InstanceSpec(Labels(session, "worker", "e1"), image=images["entrypoint"], args=("double", "0.1"),
                     wait="exit", capture_output=True, start_at=at),
        InstanceSpec(Labels(session, "worker", "c0"), image=images["cmd"], wait="exit", capture_output=True,
                     start_at=at),
    ]
    entry, entry_args, cmd = await lab.backend.create_many(specs)
    assert json.loads(entry.output)["metric"] == "int_mops"  # Entrypoint + the image's Cmd
    assert json.loads(entry_args.output)["metric"] == "double_mops"  # Entrypoint + args
    assert cmd.output == "hello from labtui\n"  # the image's Cmd alone
    assert all(i.details["start_ns"] >= round(at * 1e9) for i in (entry, entry_args, cmd))


async def test_an_image_without_a_command_or_a_missing_program_is_refused(lab, images):
    session = lab.session()
    at = await start_at()
    with pytest.raises(BackendError, match="has no Entrypoint or Cmd") as none:
        await lab.backend.create(InstanceSpec(Labels(session, "worker", "n0"), image=images["none"],
                                              wait="exit", start_at=at))
    assert images["none"] in str(none.value)
    with pytest.raises(BackendError, match=r"labtui-runat: cannot execute /bin/no-such-program"):
        await lab.backend.create(InstanceSpec(Labels(session, "worker", "m0"), image=images["cmd"],
                                              args=("/bin/no-such-program",), wait="exit", start_at=at))
    with pytest.raises(BackendError, match="start_at must be epoch seconds"):
        await lab.backend.create(InstanceSpec(Labels(session, "worker", "z0"), program="hello", start_at=-1.0))
    assert await lab.backend.list(session) == []


def test_a_concurrent_run_on_docker_starts_its_workers_together(runtime_dir, tmp_path):
    delay = 3.0  # well above what three unheld workers take on a busy machine (up to 1.7 s measured)
    db = tmp_path / "run.duckdb"
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(runtime_dir), "COLUMNS": "200"}
    out = cli_run.labtui(
        "run", "unixbench-syscall", "--backend", "docker", "--profile", "quick",
        "--set", "concurrent.instances=[3]", "--set", f"concurrent.start_delay_s={delay}",
        "--set", 'worker.args=["mix", "0.3"]', "--set", "sampling.quiet_timeout_s=0", "--db", str(db), env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert con.execute("select status, backend from sessions").fetchall() == [("completed", "docker")]
        workers = con.execute(
            "select epoch(created_at), epoch(ready_at), boot_s from instances where role = 'worker'"
        ).fetchall()
        metrics = sorted(m for (m,) in con.execute("select metric from results where benchmark = 'syscall'").fetchall())
    finally:
        con.close()
    assert len(workers) == 3 and metrics == ["mix_ns", "mix_ns", "mix_ns", "mix_ns_finish_rate", "mix_ns_rate_sum"]
    # Held to one start `delay` after it was chosen, then 0.3 s of probe: without the hold each
    # would take about the probe's run alone.
    assert all(boot >= delay - 0.2 for _, _, boot in workers), workers
    ends = [ready for _, ready, _ in workers]
    assert max(ends) - min(ends) < 0.5, workers
