"""The docker backend against a real Docker engine on this machine.

The tests that need dockerd answering on /var/run/docker.sock (CI starts it) are
skipped, with the reason, only when that socket does not exist; which containers
the backend's listing keeps is also checked against canned engine answers, so
that part never skips.
"""

from __future__ import annotations

import secrets
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiodocker
import duckdb
import pytest
from cli_run import labtui

from labtui.backends.base import BackendError, Instance, InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost

#: `env` (tests/conftest.py) gives the CLI the module's runtime dir, which the in-process backend uses too.
SHARED_RUNTIME = True

BACKEND = "docker"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "test"

SOCKET = "/var/run/docker.sock"

#: The tests that talk to a real engine; the listing's label filter is also checked without one (CannedEngine).
needs_engine = pytest.mark.skipif(
    not Path(SOCKET).is_socket(), reason=f"no Docker engine socket at {SOCKET}: start dockerd to run these tests"
)


def container_spec():
    """The docker plugin's ContainerSpec (importable once the plugin is loaded)."""
    from plugins.docker import ContainerSpec

    return ContainerSpec


async def inspect(handle: str) -> dict:
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        return await docker.containers.container(handle).show()


# -- availability and images -------------------------------------------------


@needs_engine
async def test_check_reports_the_engine_version(lab):
    found = await lab.backend.check()
    assert found.usable, found.reason
    assert found.version.startswith("Docker ") and "API 1." in found.version


async def test_check_without_a_socket_says_why(runtime_dir, tmp_path):
    backend_cls = type(open_backend("docker", LocalHost()))
    found = await backend_cls(LocalHost(), socket_path=str(tmp_path / "absent.sock")).check()
    assert not found.usable
    assert "no docker socket" in found.reason and "absent.sock" in found.reason


@needs_engine
async def test_probe_image_is_built_from_scratch_with_static_binaries(lab):
    from plugins.docker.images import is_static_elf

    built = await lab.backend.images.ensure("hello", force=True)
    assert built.built and built.name == "labtui/hello"
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        image = await docker.images.inspect("labtui/hello")
    assert image["Id"] == built.image_id
    assert image["Config"]["Labels"]["labtui.managed"] == "1"
    assert image["Config"]["Cmd"] == ["/bin/hello"]
    assert len(image["RootFS"]["Layers"]) == 1  # FROM scratch: only the COPY of the probes
    again = await lab.backend.images.ensure("hello")
    assert not again.built and again.image_id == built.image_id  # current: not rebuilt
    assert not is_static_elf(Path(sys.executable).resolve().read_bytes())  # a dynamic binary is told apart


# -- create, list, memory, destroy -------------------------------------------


@needs_engine
async def test_hello_boot_is_create_to_exit_with_phases(lab):
    session = lab.session()
    instance = await lab.backend.create(InstanceSpec(Labels(session, "worker", "h1"), program="hello", wait="exit"))
    assert instance.state == "exited" and instance.exit_code == 0
    phases = instance.details["phases"]
    assert set(phases) == {"create_s", "start_s", "run_s"} and all(v > 0 for v in phases.values())
    assert instance.boot_s == pytest.approx(sum(phases.values()), abs=1e-6)
    assert instance.ready_at == pytest.approx(instance.created_at + instance.boot_s)
    assert await lab.backend.list(session) == []  # the exited container was removed


@needs_engine
async def test_image_spec_runs_the_named_image_with_args(lab):
    session = lab.session()
    spec = InstanceSpec(Labels(session, "worker", "e1"), image="labtui/hello", args=("ignored",), wait="exit")
    instance = await lab.backend.create(spec)
    assert instance.exit_code == 0 and instance.details["image"] == "labtui/hello"


@needs_engine
async def test_ten_sleepers_are_listed_by_session_measured_and_destroyed(lab):
    session, other = lab.session(), lab.session()
    created = await lab.sleepers(session, 10)
    (stranger,) = await lab.sleepers(other, 1)
    found = await lab.backend.list(session)
    assert sorted(i.handle for i in found) == sorted(i.handle for i in created)
    assert {i.labels for i in found} == {Labels(session, "idle", f"s{n}") for n in range(10)}
    assert all(i.state == "running" and i.name.startswith("labtui-") for i in found)
    assert stranger.handle in {i.handle for i in await lab.backend.list()}
    labels = (await inspect(created[0].handle))["Config"]["Labels"]
    assert labels["labtui.session"] == session and labels["labtui.role"] == "idle"
    assert labels["labtui.instance"] == created[0].labels.instance

    used = await lab.backend.memory_many(created)
    assert all(u is not None and 0 < u < 64 * 2**20 for u in used), used

    await lab.backend.destroy_many(created)
    assert await lab.backend.list(session) == []
    assert await lab.backend.memory_bytes(created[0]) is None  # gone
    await lab.backend.destroy(created[0])  # destroying what is gone is not an error
    assert [i.handle for i in await lab.backend.list(other)] == [stranger.handle]


@needs_engine
async def test_destroy_refuses_a_container_without_the_instance_labels(lab):
    session = lab.session()
    (real,) = await lab.sleepers(session, 1)
    impostor = Instance(Labels(session, "idle", "someone-else"), "x", "docker", "local", "running", handle=real.handle)
    with pytest.raises(BackendError, match="refusing"):
        await lab.backend.destroy(impostor, force=True)
    assert [i.handle for i in await lab.backend.list(session)] == [real.handle]


@needs_engine
async def test_exec_runs_a_probe_inside(lab):
    (sleeper,) = await lab.sleepers(lab.session(), 1)
    result = await lab.backend.exec(sleeper, ["/bin/hello"])
    assert result.ok and result.stdout == "hello from labtui\n"
    missing = await lab.backend.exec(sleeper, ["/bin/no-such-program"])
    assert missing.returncode == 126 and "no such file" in missing.stdout  # the runtime's own error


@needs_engine
async def test_pinning_limits_tmpfs_and_ports_reach_the_kernel(lab):
    ContainerSpec = container_spec()
    session = lab.session()
    spec = ContainerSpec(
        Labels(session, "idle", "lim"), program="sleeper", cpus="0", mem_limit_bytes=64 * 2**20,
        cpu_limit=0.5, tmpfs=(("/scratch", "size=8m"),), ports=(8080,),
    )
    instance = await lab.backend.create(spec)
    pid = (await inspect(instance.handle))["State"]["Pid"]
    status = Path(f"/proc/{pid}/status").read_text()
    assert "Cpus_allowed_list:\t0\n" in status
    mounts = [line.split() for line in Path(f"/proc/{pid}/mounts").read_text().splitlines()]
    assert any(m[1] == "/scratch" and m[2] == "tmpfs" and "size=8192k" in m[3] for m in mounts)
    assert cgroup_value(pid, "memory", "memory.limit_in_bytes", "memory.max") == str(64 * 2**20)
    cpu = cgroup_value(pid, "cpu", "cpu.cfs_quota_us", "cpu.max")
    assert cpu in ("50000", "50000 100000")
    host_port = instance.details["ports"][8080]
    with socket.create_connection(("127.0.0.1", host_port), timeout=5):
        pass  # published on 127.0.0.1 ...
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.2", host_port), timeout=2).close()  # ... and only there


def cgroup_value(pid: int, controller: str, v1_file: str, v2_file: str) -> str:
    """Read a cgroup limit of pid, on the v1 hierarchy of controller or on v2."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return Path(f"/sys/fs/cgroup/{controller}{path}/{v1_file}").read_text().strip()
    v2 = [line.split(":", 2)[2] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.startswith("0::")]
    return Path(f"/sys/fs/cgroup{v2[0]}/{v2_file}").read_text().strip()


# -- bad input and failures --------------------------------------------------


@needs_engine
async def test_a_missing_image_is_a_clear_error(lab):
    session = lab.session()
    spec = InstanceSpec(Labels(session, "worker", "m1"), image=f"labtui-test-absent/{secrets.token_hex(4)}:none")
    with pytest.raises(BackendError, match="is not on the engine"):
        await lab.backend.create(spec)
    assert await lab.backend.list(session) == []


@needs_engine
async def test_a_failed_start_leaves_nothing_behind(lab):
    session = lab.session()
    spec = InstanceSpec(Labels(session, "idle", "bad"), program="sleeper", cpus="4095")  # no such CPU
    with pytest.raises(BackendError, match="docker on host local"):
        await lab.backend.create(spec)
    assert await lab.backend.list(session) == []


@needs_engine
async def test_a_failed_create_in_a_batch_removes_the_others(lab):
    session = lab.session()
    specs = [InstanceSpec(Labels(session, "idle", f"ok{i}"), program="sleeper") for i in range(3)]
    specs.append(InstanceSpec(Labels(session, "idle", "bad"), program="sleeper", cpus="4095"))
    with pytest.raises(BackendError):
        await lab.backend.create_many(specs)
    assert await lab.backend.list(session) == []


# -- through the CLI ---------------------------------------------------------


@pytest.fixture
async def stranger(lab) -> AsyncIterator[str]:
    """A running container labtui did not create (no lab labels); removed after the test."""
    await lab.backend.images.ensure_cached("sleeper")
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        container = await docker.containers.create(
            {"Image": "labtui/sleeper", "Labels": {"purpose": "labtui-test-stranger"}},
            name=f"stranger-{secrets.token_hex(4)}",
        )
        try:
            await container.start()
            yield container.id
        finally:
            await container.delete(force=True)


@needs_engine
async def test_cleanup_all_spares_an_unlabelled_container(lab, stranger, env, tmp_path):
    """What --all would end never includes a container without lab labels (a dry run: other tests' containers live)."""
    session = lab.session()
    created = await lab.sleepers(session, 2)
    db = str(tmp_path / "c.duckdb")
    dry = labtui("cleanup", "--all", "--dry-run", "--backend", "docker", "--db", db, env=env)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert all(i.name in dry.stdout for i in created), dry.stdout
    assert stranger[:12] not in dry.stdout and "stranger-" not in dry.stdout
    assert stranger not in {i.handle for i in await lab.backend.list()}
    out = labtui("cleanup", "--session", session, "--backend", "docker", "--db", db, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert await lab.backend.list(session) == []
    assert (await inspect(stranger))["State"]["Running"]


@needs_engine
async def test_a_container_with_only_some_lab_labels_is_not_listed(lab):
    """The engine finds it by its labtui.session label; the listing still leaves it out (no role, no instance)."""
    session = lab.session()
    await lab.backend.images.ensure_cached("sleeper")
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        partial = await docker.containers.create(
            {"Image": "labtui/sleeper", "Labels": {"labtui.session": session}}, name=f"partial-{session}")
        try:
            (real,) = await lab.sleepers(session, 1)
            assert [i.handle for i in await lab.backend.list(session)] == [real.handle]
            assert partial.id not in {i.handle for i in await lab.backend.list()}
        finally:
            await partial.delete(force=True)


# -- the listing's label filter, against canned engine answers (no daemon needed) -------------------------


class CannedEngine:
    """Answers every call with the same containers, as an engine that ignored the filter would; records each query."""

    def __init__(self, entries: list[dict]) -> None:
        self.entries = entries
        self.queries: list[tuple[str, str, dict]] = []

    async def call(self, what: str, method: str, path: str, **kwargs) -> list[dict]:
        self.queries.append((method, path, kwargs.get("params")))
        return self.entries


def listed_entry(cid: str, labels: dict[str, str] | None, name: str | None = None) -> dict:
    entry = {"Id": cid * 16, "Labels": labels, "State": "running", "Created": 1700000000,
             "Image": "labtui/sleeper", "Status": "Up 1 second"}
    if name:
        entry["Names"] = [f"/{name}"]
    return entry


def lab_labelled(session: str, instance: str) -> dict[str, str]:
    return {"labtui.session": session, "labtui.role": "idle", "labtui.instance": instance, "other": "x"}


async def test_the_listing_asks_the_engine_for_lab_labels_and_keeps_only_fully_labelled_containers():
    backend = open_backend("docker", LocalHost())
    canned = CannedEngine([
        {**listed_entry("a", lab_labelled("sa", "s0"), name="labtui-sa-s0"),
         "Names": ["/labtui-sa-s0", "/linked/alias"]},                              # a link's alias comes second
        {k: v for k, v in listed_entry("b", lab_labelled("sb", "s0")).items() if k != "Created"},  # no name, no time
        listed_entry("c", {"labtui.session": "sa"}),                                # only some lab labels
        listed_entry("d", {"labtui.session": "sa", "labtui.role": "idle"}),
        listed_entry("e", {"purpose": "stranger"}),                                 # no lab labels
        listed_entry("f", None),                                                    # no labels at all
    ])
    backend.engine = canned

    found = await backend.list("sa")
    assert canned.queries == [("GET", "containers/json", {"all": True, "filters": {"label": ["labtui.session=sa"]}})]
    assert [(i.labels, i.name, i.handle) for i in found] == [(Labels("sa", "idle", "s0"), "labtui-sa-s0", "a" * 16)]
    (one,) = found
    assert (one.backend, one.host, one.state, one.created_at) == ("docker", "local", "running", 1700000000.0)
    assert one.details == {"container_id": "a" * 16, "image": "labtui/sleeper", "status": "Up 1 second"}

    everything = await backend.list()
    assert canned.queries[-1] == ("GET", "containers/json", {"all": True, "filters": {"label": ["labtui.session"]}})
    assert [(i.labels, i.name, i.created_at) for i in everything] == [
        (Labels("sa", "idle", "s0"), "labtui-sa-s0", 1700000000.0), (Labels("sb", "idle", "s0"), "b" * 12, None)]


@needs_engine
async def test_small_docker_boot_scaling_run_records_results(lab, env, tmp_path):
    db = tmp_path / "run.duckdb"
    out = labtui(
        "run", "docker-boot-scaling", "--set", "scale.steps=2", "--set", "scale.per_step=3",
        "--set", "suite.repetitions=1", "--set", "sampling.quiet_timeout_s=0", "--db", str(db), env=env,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    con = duckdb.connect(str(db), read_only=True)
    (session, status, backend), = con.execute("select session_id, status, backend from sessions").fetchall()
    lab.sessions.append(session)
    assert status == "completed" and backend == "docker"
    rows = con.execute(
        "select step, background, value from results where metric = 'boot_time' order by step, run"
    ).fetchall()
    assert [(step, background) for step, background, _ in rows] == [(s, 3 * s) for s in range(3) for _ in range(5)]
    assert all(value > 0 for _, _, value in rows)
    (version,) = con.execute("select backend_version from hosts").fetchone()
    assert version.startswith("Docker ")
    assert await lab.backend.list(session) == []  # torn down


@needs_engine
def test_a_suite_naming_a_missing_image_fails_before_any_instance_starts(env, tmp_path):
    suite = tmp_path / "missing.toml"
    suite.write_text(
        '[suite]\nname = "missing"\nkind = "scaling"\nbackend = "docker"\n[scale]\nsteps = 1\nper_step = 2\n'
        '[worker]\nprogram = "hello"\nmeasure = "boot"\n[background]\nimage = "labtui-test/no-such-image:1"\n'
    )
    db = tmp_path / "run.duckdb"
    out = labtui("run", str(suite), "--db", str(db), env=env)
    assert out.returncode == 1 and "no-such-image" in out.stdout + out.stderr
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("select count(*) from instances").fetchone() == (0,)
    assert con.execute("select status from sessions").fetchone() == ("failed",)
    con.close()
