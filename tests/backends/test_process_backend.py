"""The process backend and its agent, with real processes on this machine."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from backend_lab import Lab

from labtui.backends.base import BackendError, Instance, InstanceSpec, Labels, builtin_plugins_dir, open_backend
from labtui.hosts.local import LocalHost
from labtui.programs.native import ProgramUnavailable, ensure_program, probe_source

BACKEND = "process"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "test"

AGENT_SOURCE = builtin_plugins_dir() / "process" / "agent.c"


def labelled_pids(session: str, instance: str) -> list[int]:
    """Live processes whose environment carries LABTUI_SESSION=session and LABTUI_INSTANCE=instance
    (the instance name alone is not enough: another worker's test may run an 's0' of its own)."""
    wanted = {f"LABTUI_SESSION={session}".encode(), f"LABTUI_INSTANCE={instance}".encode()}
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted <= set((entry / "environ").read_bytes().split(b"\0")):
                found.append(int(entry.name))
        except OSError:
            pass  # gone, or a zombie without an environment
    return found


def wait_for(predicate, timeout: float = 60.0) -> bool:
    """True once predicate holds; the timeout only catches a condition that never comes."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


async def test_check_reports_linux_and_kernel(lab: Lab) -> None:
    availability = await lab.backend.check()
    assert availability.usable, availability.reason
    assert availability.version == os.uname().release


async def test_hello_runs_to_exit_with_a_boot_time(lab: Lab) -> None:
    session = lab.session()
    before, began = time.time(), time.monotonic()
    hello = await lab.backend.create(InstanceSpec(Labels(session, "probe", "h0"), program="hello", wait="exit"))
    took, after = time.monotonic() - began, time.time()
    assert hello.state == "exited" and hello.exit_code == 0
    # measured inside the create call: within the time the call took, however long that was
    assert hello.boot_s is not None and 0 < hello.boot_s <= took + 0.001
    assert hello.created_at is not None and before - 0.001 <= hello.created_at <= after + 0.001
    assert hello.details["exit_code"] == 0 and hello.details["isolation"]
    assert await lab.backend.list(session) == []


async def test_a_batch_is_listed_with_its_labels_and_nothing_else(lab: Lab) -> None:
    session, other = lab.session(), lab.session()
    roles = ["server"] * 5 + ["client"] * 15
    specs = [InstanceSpec(Labels(session, role, f"i{i}"), program="sleeper") for i, role in enumerate(roles)]
    created = await lab.backend.create_many(specs)
    await lab.sleepers(other, 2)
    assert [i.labels for i in created] == [s.labels for s in specs]
    assert all(i.state == "running" and i.boot_s is not None and i.boot_s > 0 for i in created)

    listed = await lab.backend.list(session)
    assert {i.labels for i in listed} == {s.labels for s in specs}
    assert {i.handle for i in listed} == {i.handle for i in created}
    assert all(i.state == "running" and i.backend == "process" and i.host == "local" for i in listed)
    everything = {i.labels.session for i in await lab.backend.list()}
    assert {session, other} <= everything


async def test_instances_are_found_after_the_python_side_forgets_them(lab: Lab) -> None:
    session = lab.session()
    await lab.sleepers(session, 3)
    fresh = open_backend("process", LocalHost())  # as after a crash: no memory of the create
    found = await fresh.list(session)
    assert sorted(i.labels.instance for i in found) == ["s0", "s1", "s2"]
    await fresh.destroy_many(found)
    assert await fresh.list(session) == []
    assert not any(labelled_pids(session, i.labels.instance) for i in found)


@pytest.mark.parametrize("isolate", ["auto", "none"])
async def test_destroy_ends_the_whole_tree(lab: Lab, isolate: str) -> None:
    host = LocalHost()
    agent = await ensure_program(host, AGENT_SOURCE, "labtui-agent")
    session, instance = lab.session(), f"tree-{secrets.token_hex(4)}"
    argv = [agent, "spawn", "--session", session, "--role", "tree", "--instance", instance, "--isolate", isolate]
    result = await host.run([*argv, "--", "/bin/sh", "-c", "sleep 1000 & sleep 1000"])
    assert result.ok, result.stderr
    assert wait_for(lambda: len(labelled_pids(session, instance)) == 3)  # sh and two sleeps

    (root,) = await lab.backend.list(session)
    assert root.details["comm"] == "sh" and root.labels == Labels(session, "tree", instance)
    await lab.backend.destroy(root)
    # the root is gone when destroy returns; its children, signalled with it, within moments
    assert wait_for(lambda: labelled_pids(session, instance) == [])
    assert await lab.backend.list(session) == []


async def test_exec_failure_is_an_error_line(lab: Lab) -> None:
    host = LocalHost()
    agent = await ensure_program(host, AGENT_SOURCE, "labtui-agent")
    argv = [agent, "spawn", "--session", lab.session(), "--role", "r", "--instance", "x", "--", "/nonexistent/prog"]
    result = await host.run(argv)
    assert result.returncode == 1
    assert result.stdout == "error\tx\tcannot run /nonexistent/prog: No such file or directory\n"


async def test_destroy_refuses_a_process_without_the_label(lab: Lab) -> None:
    session = lab.session()
    stranger = subprocess.Popen(["sleep", "1000"])
    try:
        labels = Labels(session, "r", "fake")
        fake = Instance(labels, "fake", "process", "local", "running", handle=f"{stranger.pid}:fake")
        with pytest.raises(BackendError, match=f"pid {stranger.pid} does not carry LABTUI_INSTANCE=fake"):
            await lab.backend.destroy(fake, force=True)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


async def test_destroy_refuses_another_instances_pid(lab: Lab) -> None:
    session = lab.session()
    (real,) = await lab.sleepers(session, 1)
    pid = real.details["pid"]
    other = Instance(Labels(session, "idle", "s9"), "other", "process", "local", "running", handle=f"{pid}:s9")
    with pytest.raises(BackendError, match="does not carry"):
        await lab.backend.destroy(other)
    assert [i.handle for i in await lab.backend.list(session)] == [real.handle]


async def test_destroying_twice_is_harmless(lab: Lab) -> None:
    session = lab.session()
    sleeper, neighbour = await lab.sleepers(session, 2)
    await lab.backend.destroy(sleeper)
    assert [i.labels.instance for i in await lab.backend.list(session)] == [neighbour.labels.instance]
    await lab.backend.destroy(sleeper)  # gone already: no error ...
    await lab.backend.destroy(sleeper, force=True)
    # ... and nothing else ended: the neighbour still runs and is still listed
    assert [i.labels.instance for i in await lab.backend.list(session)] == [neighbour.labels.instance]
    assert await lab.backend.memory_bytes(neighbour) is not None
    assert await lab.backend.memory_bytes(sleeper) is None


async def test_memory_of_a_sleeper_is_small(lab: Lab) -> None:
    first, second = await lab.sleepers(lab.session(), 2)
    used = await lab.backend.memory_bytes(first)
    assert used is not None and 0 < used < 16 * 2**20
    await lab.backend.destroy(first)
    assert await lab.backend.memory_bytes(first) is None
    gone, alive = await lab.backend.memory_many([first, second])
    assert gone is None and alive is not None and alive > 0


async def test_isolation_is_recorded_and_true(lab: Lab) -> None:
    isolation = await lab.backend.isolation()
    assert re.fullmatch(r"none|pidns\+ipcns\+utsns(,cgroup-v\S+)?|cgroup-v\S+", isolation), isolation
    (sleeper,) = await lab.sleepers(lab.session(), 1)
    assert sleeper.details["isolation"] == isolation
    pid = sleeper.details["pid"]
    if "pidns" in isolation:
        assert os.readlink(f"/proc/{pid}/ns/pid") != os.readlink("/proc/self/ns/pid")
    if "cgroup" in isolation:
        assert "/labtui/" in Path(f"/proc/{pid}/cgroup").read_text()


async def test_pinning_sets_the_cpu_affinity(lab: Lab) -> None:
    spec = InstanceSpec(Labels(lab.session(), "pinned", "p0"), program="sleeper", cpus="0")
    pinned = await lab.backend.create(spec)
    assert os.sched_getaffinity(pinned.details["pid"]) == {0}


async def test_wait_exit_times_out_and_leaves_nothing(lab: Lab) -> None:
    session = lab.session()
    spec = InstanceSpec(Labels(session, "stuck", "w0"), program="sleeper", wait="exit", timeout_s=0.3)
    with pytest.raises(BackendError, match="did not exit within 0.3 s"):
        await lab.backend.create(spec)
    assert await lab.backend.list(session) == []


async def test_a_tool_runs_as_the_child_of_a_reaping_pid_1_with_its_stderr_captured(lab: Lab) -> None:
    """A real tool is never PID 1 of its instance (lmbench's harness misbehaves there), and its stderr is
    captured with its stdout when asked."""
    session = lab.session()
    spec = InstanceSpec(Labels(session, "worker", "t0"), tool="/bin/sh", args=("-c", "echo pid=$$; echo err >&2"),
                        wait="exit", capture_output=True, capture_stderr=True)
    instance = await lab.backend.create(spec)
    assert instance.exit_code == 0
    lines = (instance.output or "").splitlines()
    assert lines[1] == "err", lines
    assert lines[0].startswith("pid=") and lines[0] != "pid=1", lines
    if "pidns" in await lab.backend.isolation():
        assert lines[0] == "pid=2", lines  # the reaping PID 1, then the tool
    quiet = await lab.backend.create(replace(spec, labels=Labels(session, "worker", "t1"), capture_stderr=False))
    assert (quiet.output or "").splitlines() == lines[:1]


async def test_a_running_tool_carries_its_labels_and_is_destroyed(lab: Lab) -> None:
    """The reaping PID 1 a tool runs under carries the labels, so `kill` ends it: a wrk or redis-benchmark cut
    short by a signal, or a tool that serves, is torn down and cleaned up like any instance."""
    session = lab.session()
    spec = InstanceSpec(Labels(session, "worker", "serving"), tool="/bin/sh", args=("-c", "while :; do sleep 1; done"))
    instance = await lab.backend.create(spec)
    assert instance.details["pid"] in labelled_pids(session, "serving")
    assert [i.labels.instance for i in await lab.backend.list(session)] == ["serving"]
    await lab.backend.destroy(instance)  # raised "pid N does not carry LABTUI_INSTANCE=serving" before
    assert await lab.backend.list(session) == []
    assert labelled_pids(session, "serving") == []


async def test_specs_the_backend_cannot_serve_are_refused(lab: Lab) -> None:
    labels = Labels(lab.session(), "r", "i0")
    with pytest.raises(BackendError, match="runs probes, not images: got image 'alpine'"):
        await lab.backend.create(InstanceSpec(labels, image="alpine"))
    with pytest.raises(BackendError, match="needs one of spec.program"):
        await lab.backend.create(InstanceSpec(labels))
    with pytest.raises(BackendError, match="needs one of spec.program"):
        await lab.backend.create(InstanceSpec(labels, program="hello", tool="/bin/true"))
    with pytest.raises(BackendError, match="must be an absolute path"):
        await lab.backend.create(InstanceSpec(labels, tool="true"))
    with pytest.raises(BackendError, match="capture_stderr goes with capture_output"):
        await lab.backend.create(InstanceSpec(labels, tool="/bin/true", wait="exit", capture_stderr=True))
    with pytest.raises(ProgramUnavailable, match="unknown probe 'nosuch'"):
        await lab.backend.create(InstanceSpec(labels, program="nosuch"))


async def test_a_thousand_sleepers_start_and_stop(lab: Lab) -> None:
    """How fast is for tests/perf; here, that a thousand at once all start, are told apart, and all end."""
    session = lab.session()
    created = await lab.sleepers(session, 1000)
    assert len({i.handle for i in created}) == 1000
    assert len(await lab.backend.list(session)) == 1000
    await lab.backend.destroy_many(created)
    assert await lab.backend.list(session) == []


def v2_hierarchy() -> Path | None:
    """Where this host mounts cgroup v2: /sys/fs/cgroup (v2 host), /sys/fs/cgroup/unified (hybrid), or None."""
    for root in (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified")):
        if (root / "cgroup.controllers").exists():
            return root
    return None


needs_v2_as_root = pytest.mark.skipif(
    v2_hierarchy() is None or os.geteuid() != 0, reason="needs a cgroup v2 hierarchy (v2 or hybrid host) and root"
)


def unlabelled_instance(session: str, instance: str) -> int | None:
    """The pid of the instance in its v2 cgroup once it has a session of its own (it left the agent's
    process group) but before its exec (no labels in /proc/PID/environ yet); None when there is none."""
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or f"0::/labtui/{session}.{instance}\n" not in (entry / "cgroup").read_text():
                continue
            session_id = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[3])
        except (OSError, IndexError, ValueError):
            continue
        if session_id == int(entry.name) and not labelled_pids(session, instance):
            return session_id
    return None


@needs_v2_as_root
async def test_a_create_cancelled_before_its_instance_execs_leaves_nothing(lab: Lab) -> None:
    """An interrupt cancels a batch create while the agent waits for an instance's exec.  That instance
    has left the agent's process group (the agent's SIGKILL misses it) and carries no labels until its
    exec (no list finds it): seen under load in test_session_service, a sleeper left running.
    --start-at holds it in that window here; its cgroup is how it is found."""
    session = lab.session()
    await lab.backend.prepare(["sleeper"])  # built before the clock starts
    start_at = time.time() + 2.0
    specs = [InstanceSpec(Labels(session, "idle", f"s{i}"), program="sleeper", start_at=start_at) for i in range(2)]
    create = asyncio.create_task(lab.backend.create_many(specs))
    deadline = time.monotonic() + 30
    while unlabelled_instance(session, "s0") is None:
        assert time.monotonic() < deadline and not create.done(), "s0 never reached the window before its exec"
        await asyncio.sleep(0.01)
    create.cancel()
    with pytest.raises(asyncio.CancelledError):
        await create
    await asyncio.sleep(max(0.0, start_at - time.time()) + 0.5)  # past the moment it would exec
    assert labelled_pids(session, "s0") == [] and unlabelled_instance(session, "s0") is None
    assert await lab.backend.list(session) == []
    assert not (v2_hierarchy() / "labtui" / f"{session}.s0").exists()  # type: ignore[operator]


@needs_v2_as_root
async def test_an_instance_lives_in_a_v2_cgroup_where_the_host_mounts_one(lab: Lab) -> None:
    """Also on a hybrid host (v2 at /sys/fs/cgroup/unified): only there can it be created inside its cgroup."""
    (sleeper,) = await lab.sleepers(lab.session(), 1)
    assert sleeper.details["isolation"].endswith("cgroup-v2")
    unified = [line for line in Path(f"/proc/{sleeper.details['pid']}/cgroup").read_text().splitlines()
               if line.startswith("0::")]
    assert unified == [f"0::/labtui/{sleeper.labels.session}.{sleeper.labels.instance}"]
    directory = v2_hierarchy() / "labtui" / f"{sleeper.labels.session}.{sleeper.labels.instance}"  # type: ignore[operator]
    assert str(sleeper.details["pid"]) in (directory / "cgroup.procs").read_text().split()
    await lab.backend.destroy(sleeper)
    assert wait_for(lambda: not directory.exists())


@needs_v2_as_root
@pytest.mark.skipif(not shutil.which("strace"), reason="needs strace")
async def test_spawn_creates_the_instance_in_its_cgroup_and_never_moves_it(lab: Lab) -> None:
    """The cause of issue 23's bimodal boot times: a write to cgroup.procs waits for an RCU grace
    period (5-20 ms) unless another cgroup move just happened.  clone3(CLONE_INTO_CGROUP) does not."""
    host = LocalHost()
    agent = await ensure_program(host, AGENT_SOURCE, "labtui-agent")
    hello = await ensure_program(host, probe_source("hello"), "hello")
    argv = [agent, "spawn", "--session", lab.session(), "--role", "probe", "--instance", "h0", "--wait", "exit",
            "--", hello]
    traced = subprocess.run(["strace", "-f", "-qq", "-e", "trace=clone3,openat", *argv], capture_output=True,
                            text=True, timeout=60)
    assert traced.returncode == 0, traced.stderr
    assert traced.stdout.startswith("exit\th0\t") and traced.stdout.rstrip().endswith("cgroup-v2")
    assert re.search(r"clone3\(\{flags=[^}]*CLONE_INTO_CGROUP", traced.stderr), traced.stderr
    moves = [line for line in traced.stderr.splitlines() if "cgroup.procs" in line and "O_WRONLY" in line]
    assert moves == []


async def test_an_agent_without_a_v2_hierarchy_joins_a_v1_cgroup_by_writing(lab: Lab, tmp_path: Path) -> None:
    """The fallback (v1-only hosts, kernels before 5.7): fork, then write the pid to cgroup.procs."""
    agent = tmp_path / "labtui-agent-v1"
    missing = '"/nonexistent-cgroup"'
    subprocess.run(["cc", "-O1", f"-DCGROUP_V2_ROOT={missing}", "-o", str(agent), str(AGENT_SOURCE)], check=True)
    hello = await ensure_program(LocalHost(), probe_source("hello"), "hello")
    session = lab.session()
    run = subprocess.run([str(agent), "spawn", "--session", session, "--role", "probe", "--instance", "h0",
                          "--wait", "exit", "--", hello], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    kind, instance, _pid, _wall, boot_ns, code, isolation = run.stdout.rstrip("\n").split("\t")
    assert (kind, instance, code) == ("exit", "h0", "0") and int(boot_ns) > 0
    v1_pids = Path("/sys/fs/cgroup/pids/cgroup.procs").exists() and os.geteuid() == 0
    assert isolation.endswith("cgroup-v1-pids") if v1_pids else "cgroup-v2" not in isolation
    assert not list(Path("/sys/fs/cgroup/pids/labtui").glob(f"{session}.*"))
