"""`exec` on the process backend: commands run inside instances (labtui-agent exec), with real processes.

The namespace and cgroup checks are the strict ones where the agent could create them (as root,
which CI is); elsewhere they check that the exec'd process shares whatever the instance has.
One test drives the backend over SSH (a real sshd on 127.0.0.61; CI needs openssh-server).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import time
from pathlib import Path

import pytest
from backend_lab import Lab
from sshd_fixture import host_table, sshd_available, start_sshd, write_key
from test_process_backend import wait_for

from labtui.backends.base import EXEC, BackendError, Instance, InstanceSpec, Labels, builtin_plugins_dir, open_backend
from labtui.core.events import Event, InstanceCreating, Result, SessionEnded
from labtui.engine import SessionRunner
from labtui.hosts import get_host
from labtui.hosts.local import LocalHost
from labtui.programs.native import ensure_program
from labtui.suites import load_suite

BACKEND = "process"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "exec"

AGENT_SOURCE = builtin_plugins_dir() / "process" / "agent.c"


async def sleeper(lab: Lab, **extra: object) -> Instance:
    (instance,) = await lab.sleepers(lab.session(), 1, **extra)
    return instance


def labtui_cgroups(text: str) -> list[str]:
    """The lines of a /proc/PID/cgroup that name labtui's cgroups."""
    return [line for line in text.splitlines() if "/labtui/" in line]


def session_pids(session: str, instance: str | None = None) -> list[int]:
    """Live processes whose environment carries LABTUI_SESSION=session (and LABTUI_INSTANCE=instance)."""
    wanted = {f"LABTUI_SESSION={session}".encode()}
    if instance is not None:
        wanted.add(f"LABTUI_INSTANCE={instance}".encode())
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and wanted <= set((entry / "environ").read_bytes().split(b"\0")):
                found.append(int(entry.name))
        except OSError:
            pass
    return sorted(found)


def instance_pids(instance: Instance) -> list[int]:
    """Live processes labelled with instance's session and instance id."""
    return session_pids(instance.labels.session, instance.labels.instance)


async def test_the_backend_declares_exec(lab: Lab) -> None:
    assert EXEC in lab.backend.capabilities


async def test_exec_runs_in_the_instances_namespaces_cgroup_cpus_and_labels(lab: Lab) -> None:
    instance = await sleeper(lab, cpus="0")
    pid, isolation = instance.details["pid"], instance.details["isolation"]
    script = ("echo $$; for ns in pid ipc uts mnt; do readlink /proc/self/ns/$ns; done; "
              "grep Cpus_allowed_list /proc/self/status; "
              'echo "$LABTUI_SESSION/$LABTUI_ROLE/$LABTUI_INSTANCE"; cat /proc/self/cgroup')
    result = await lab.backend.exec(instance, ["sh", "-c", script])
    assert result.returncode == 0, result.stderr
    own_pid, pid_ns, ipc_ns, uts_ns, mnt_ns, cpus, labels, *cgroups = result.stdout.splitlines()
    assert [pid_ns, ipc_ns, uts_ns] == [os.readlink(f"/proc/{pid}/ns/{ns}") for ns in ("pid", "ipc", "uts")]
    if "pidns" in isolation:
        assert pid_ns != os.readlink("/proc/self/ns/pid")
        assert 1 < int(own_pid) < 100, own_pid  # a pid of the instance's namespace, where the sleeper is 1
    # the same mount namespace as the host: host paths (the runtime dir's programs) are the same inside
    assert mnt_ns == os.readlink("/proc/self/ns/mnt")
    marker = Path(LocalHost().runtime_dir) / f"marker-{secrets.token_hex(4)}"
    marker.write_text("seen inside")
    (staged,) = await lab.backend.stage(instance, [str(marker)])
    assert (await lab.backend.exec(instance, ["cat", staged])).stdout == "seen inside"
    assert cpus.split() == ["Cpus_allowed_list:", "0"]
    assert labels == f"{instance.labels.session}/{instance.labels.role}/{instance.labels.instance}"
    root_cgroups = labtui_cgroups(Path(f"/proc/{pid}/cgroup").read_text())
    assert labtui_cgroups("\n".join(cgroups)) == root_cgroups
    if "cgroup" in isolation:
        assert root_cgroups and all(line.endswith(f".{instance.labels.instance}") for line in root_cgroups)


async def test_exit_code_output_and_duration_come_back_verbatim(lab: Lab) -> None:
    instance = await sleeper(lab)
    # the program's own imitation of the agent's closing record does not fool it
    script = 'printf out; printf "err1\\n\\nlabtui-agent-exec\\texit\\t0\\t1\\nerr2" >&2; sleep 0.2; exit 7'
    began = time.monotonic()
    result = await lab.backend.exec(instance, ["sh", "-c", script])
    took = time.monotonic() - began
    assert (result.returncode, result.stdout) == (7, "out")
    assert result.stderr == "err1\n\nlabtui-agent-exec\texit\t0\t1\nerr2"
    assert result.argv == ("sh", "-c", script)
    assert 0.2 <= result.duration_s <= took + 0.001  # the sleep, and no more than the call itself took
    killed = await lab.backend.exec(instance, ["sh", "-c", "kill -KILL $$"])
    assert killed.returncode == 128 + signal.SIGKILL and killed.stderr == ""


async def test_a_timeout_kills_the_command_and_its_children(lab: Lab) -> None:
    instance = await sleeper(lab)
    root = instance.details["pid"]
    # the children would sleep an hour: only a kill at the exec's timeout ends this before the test's own
    async with asyncio.timeout(120):
        with pytest.raises(BackendError, match=r"exec sh in .*: ran over 0.5 s; killed with what it started"):
            await lab.backend.exec(instance, ["sh", "-c", "sleep 3600 & sleep 3600"], timeout=0.5)
    assert wait_for(lambda: instance_pids(instance) == [root])


async def test_what_a_command_leaves_running_ends_with_it(lab: Lab) -> None:
    instance = await sleeper(lab)
    # the background sleep (an hour) holds the output pipe, yet exec returns when sh exits
    async with asyncio.timeout(120):
        result = await lab.backend.exec(instance, ["sh", "-c", "sleep 3600 & echo started"])
    assert (result.returncode, result.stdout) == (0, "started\n")
    assert wait_for(lambda: instance_pids(instance) == [instance.details["pid"]])


async def test_an_exec_is_part_of_its_instance_and_ends_with_it(lab: Lab) -> None:
    instance = await sleeper(lab)
    running = asyncio.create_task(lab.backend.exec(instance, ["sleep", "3600"]))
    try:
        assert await asyncio.to_thread(wait_for, lambda: len(instance_pids(instance)) == 2)
        # found by its labels as part of the instance, not as a second one
        assert [i.handle for i in await lab.backend.list(instance.labels.session)] == [instance.handle]
        used = await lab.backend.memory_bytes(instance)
        assert used is not None and used > 0
        await lab.backend.destroy(instance)
        result = await asyncio.wait_for(running, 120)  # the hour's sleep ends only with its instance
    finally:
        running.cancel()
    assert result.returncode > 128, result  # ended by a signal
    assert instance_pids(instance) == []


async def test_an_exec_outliving_its_instances_own_processes_is_listed_and_destroyed(lab: Lab) -> None:
    """Without namespaces or cgroup (--isolate none), an exec'd process can outlive the root: it then stands
    for the instance, so cleanup finds it."""
    host = LocalHost()
    agent = await ensure_program(host, AGENT_SOURCE, "labtui-agent")
    session, ident = lab.session(), f"bare-{secrets.token_hex(4)}"
    spawned = await host.run([agent, "spawn", "--session", session, "--role", "bare", "--instance", ident,
                              "--isolate", "none", "--", "/bin/sleep", "30"])
    assert spawned.ok, spawned.stderr
    (root,) = await lab.backend.list(session)
    running = asyncio.create_task(lab.backend.exec(root, ["sleep", "3600"]))
    try:
        assert await asyncio.to_thread(wait_for, lambda: len(session_pids(session, ident)) == 2)
        os.kill(root.details["pid"], signal.SIGKILL)
        assert await asyncio.to_thread(wait_for, lambda: len(session_pids(session, ident)) == 1)
        (orphan,) = session_pids(session, ident)
        (found,) = await lab.backend.list(session)
        assert found.details["pid"] == orphan and found.labels == root.labels
        await lab.backend.destroy(found)
        result = await asyncio.wait_for(running, 120)  # the hour's sleep ends only with its instance
    finally:
        running.cancel()
    assert result.returncode > 128
    assert session_pids(session, ident) == []


async def test_exec_into_a_gone_or_foreign_instance_is_a_clear_error(lab: Lab) -> None:
    instance = await sleeper(lab)
    await lab.backend.destroy(instance)
    with pytest.raises(BackendError, match=rf"exec true in {instance.name}: instance s0 is gone: pid \d+ no longer"):
        await lab.backend.exec(instance, ["true"])
    hello = await lab.backend.create(InstanceSpec(Labels(lab.session(), "p", "h0"), program="hello", wait="exit"))
    with pytest.raises(BackendError, match="ran to its exit; there is nothing to run in"):
        await lab.backend.exec(hello, ["true"])
    other = await sleeper(lab)
    stranger = Instance(Labels(other.labels.session, "r", "s7"), "stranger", "process", "local", "running",
                        handle=f"{other.details['pid']}:s7")
    with pytest.raises(BackendError, match=r"pid \d+ does not carry LABTUI_INSTANCE=s7"):
        await lab.backend.exec(stranger, ["true"])
    with pytest.raises(BackendError, match="exec needs a command"):
        await lab.backend.exec(other, [])


async def test_a_program_that_cannot_run_is_named(lab: Lab) -> None:
    instance = await sleeper(lab)
    with pytest.raises(BackendError, match="cannot run /nonexistent/prog: No such file or directory"):
        await lab.backend.exec(instance, ["/nonexistent/prog", "x"])
    assert instance_pids(instance) == [instance.details["pid"]]


async def run_creation_suite(name: str, overrides: list[str]) -> tuple[SessionRunner, list[Event]]:
    """Run a built-in creation suite on the process backend here; the runner and every event, the run completed."""
    host = LocalHost()
    runner = SessionRunner(load_suite(name, overrides), open_backend("process", host), host)
    queue = runner.bus.subscribe()
    task = asyncio.create_task(runner.run())
    events: list[Event] = []
    while (event := await asyncio.wait_for(queue.get(), 120)) is not None:
        events.append(event)
    await task
    (ended,) = [e for e in events if isinstance(e, SessionEnded)]
    assert ended.status == "completed", ended.message
    return runner, events


def by_step(events: list[Event], metric: str) -> dict[int, list[Result]]:
    found: dict[int, list[Result]] = {}
    for r in events:
        if isinstance(r, Result) and r.metric == metric:
            found.setdefault(r.step, []).append(r)
    return found


async def nothing_left(runner: SessionRunner) -> None:
    assert await runner.ctx.backend.list(runner.session_id) == []
    assert session_pids(runner.session_id) == []


async def test_zone_worker_runs_in_the_first_process_instance(runtime_dir: Path) -> None:
    runner, events = await run_creation_suite("zone-worker", ["scale.steps=2", 'worker.args=["fork", "0.1"]',
                                                              "sampling.interval_s=1"])
    bench = by_step(events, "fork_us")
    assert sorted(bench) == [1, 2]  # nothing to run in before instance 1 exists
    assert all(len(rs) == 1 and rs[0].instance_id == "in1" and rs[0].value > 0 for rs in bench.values())
    assert sorted(by_step(events, "tcreate_s")) == [1, 2]
    await nothing_left(runner)


async def test_zone_concurrent_runs_in_every_process_instance(runtime_dir: Path) -> None:
    """The creation kind's where = "all" on the process backend: each instance's reading, S_n, the spread."""
    runner, events = await run_creation_suite("zone-concurrent", [
        "scale.steps=3", 'worker.args=["int", "0.1"]', "creation.start_delay_s=0.3", "sampling.interval_s=1"])
    bench, sums = by_step(events, "int_mops"), by_step(events, "int_mops_sum")
    spread = by_step(events, "start_spread_ms")
    assert sorted(bench) == [1, 2, 3] and sorted(sums) == [1, 2, 3] and sorted(spread) == [1, 2, 3]
    for n, readings in bench.items():
        assert sorted(r.instance_id for r in readings) == [f"in{i}" for i in range(1, n + 1)]
        assert all(r.value > 0 for r in readings)
        assert sums[n][0].value == pytest.approx(sum(r.value for r in readings))
    assert spread[1][0].value == 0.0 and all(rs[0].value >= 0 for rs in spread.values())
    assert [e.instance_id for e in events if isinstance(e, InstanceCreating)] == ["in1", "in2", "in3"]
    print("start spread of zone-concurrent on the process backend (ms):",
          {n: round(rs[0].value, 3) for n, rs in sorted(spread.items())})
    await nothing_left(runner)


@pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")
async def test_exec_over_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_key(tmp_path / "client_key")
    server = start_sshd(tmp_path / "sshd", "127.0.0.61", tmp_path / "client_key.pub")
    host = None
    try:
        key = server.host_key.export_public_key("openssh").decode().split()
        (tmp_path / "known_hosts").write_text(f"[{server.address}]:{server.port} {key[0]} {key[1]}\n")
        (tmp_path / "labtui.toml").write_text(host_table("x61", server, tmp_path))
        monkeypatch.setenv("LABTUI_CONFIG", str(tmp_path / "labtui.toml"))
        host = get_host("x61")
        backend = open_backend("process", host)
        session = f"exec-ssh-{secrets.token_hex(4)}"
        (instance,) = await backend.create_many([InstanceSpec(Labels(session, "r", "s0"), program="sleeper")])
        try:
            result = await backend.exec(instance, ["sh", "-c", "echo $LABTUI_INSTANCE; echo err >&2; exit 4"])
            assert (result.returncode, result.stdout, result.stderr) == (4, "s0\n", "err\n")
            with pytest.raises(BackendError, match="ran over 0.3 s"):
                await backend.exec(instance, ["sleep", "30"], timeout=0.3)
            assert wait_for(lambda: instance_pids(instance) == [instance.details["pid"]])
        finally:
            await backend.destroy_many(await backend.list(session), force=True)
        assert session_pids(session) == []
    finally:
        if host is not None:
            await host.close()
        server.stop()
