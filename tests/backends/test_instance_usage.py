"""usage_many: memory and CPU time of process and docker instances, read together (issue 42 item 5).

A busy instance's CPU time grows while an idle one's barely does; the comparison is between the two
instances over the same stretch, however long the machine takes to give the busy one a second of CPU.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from backend_lab import Lab

from labtui.backends.base import Instance, InstanceSpec, Labels, Usage, builtin_plugins_dir
from labtui.hosts.local import LocalHost
from labtui.programs.native import ensure_program

SOCKET = Path("/var/run/docker.sock")
#: CPU time the busy instance must gain before the two are compared (ns).
BUSY_NS = 500_000_000
#: The most the idle instance may gain meanwhile, as a share of what the busy one gained.
IDLE_SHARE = 0.05
#: Seconds before a busy instance that gains no CPU time fails the test (a hang guard, not a timing check).
GIVE_UP_S = 120.0


async def grown(lab: Lab, busy: Instance, idle: Instance) -> tuple[Usage, Usage, Usage, Usage]:
    """Readings of both at the start and once the busy one gained BUSY_NS: (busy0, idle0, busy1, idle1)."""
    busy0, idle0 = await lab.backend.usage_many([busy, idle])
    assert busy0.cpu_ns is not None and idle0.cpu_ns is not None, (busy0, idle0)
    deadline = time.monotonic() + GIVE_UP_S
    while True:
        busy1, idle1 = await lab.backend.usage_many([busy, idle])
        assert busy1.cpu_ns is not None and idle1.cpu_ns is not None, (busy1, idle1)
        if busy1.cpu_ns - busy0.cpu_ns >= BUSY_NS:
            return busy0, idle0, busy1, idle1
        assert time.monotonic() < deadline, f"the busy instance gained no CPU time: {busy0} then {busy1}"
        await asyncio.sleep(0.2)


@pytest.mark.parametrize("lab", [
    "process",
    pytest.param("docker", marks=pytest.mark.skipif(not SOCKET.is_socket(), reason=f"no Docker engine at {SOCKET}")),
], indirect=True)
async def test_a_busy_instance_gains_cpu_time_and_an_idle_one_barely(lab: Lab) -> None:
    session = lab.session()
    busy, idle = await lab.backend.create_many([InstanceSpec(Labels(session, "worker", "busy"), program="attack-cpu"),
                                                InstanceSpec(Labels(session, "idle", "idle"), program="sleeper")])
    busy0, idle0, busy1, idle1 = await grown(lab, busy, idle)
    gained = busy1.cpu_ns - busy0.cpu_ns  # type: ignore[operator]
    assert 0 <= idle1.cpu_ns - idle0.cpu_ns <= IDLE_SHARE * gained, (idle0, idle1, gained)  # type: ignore[operator]
    assert all(u.memory_bytes and u.memory_bytes > 0 for u in (busy0, idle0, busy1, idle1))
    # memory_many is the same reading's memory
    assert all(m is not None and m > 0 for m in await lab.backend.memory_many([busy, idle]))

    await lab.backend.destroy(busy)
    gone, still = await lab.backend.usage_many([busy, idle])
    assert gone == Usage(None, None) and still.cpu_ns is not None and still.memory_bytes


@pytest.mark.parametrize("lab", ["process"], indirect=True)
@pytest.mark.parametrize("isolate", ["auto", "none"])
async def test_cpu_time_counts_the_children_an_instance_reaped(lab: Lab, isolate: str) -> None:
    """A shell that runs busy children one after another: their time counts once they are gone.

    With its own cgroup (auto, on a cgroup host) the cgroup's usage counts it; without one (none) the
    shell's cutime+cstime, what its reaped children used.
    """
    host = LocalHost()
    agent = await ensure_program(host, builtin_plugins_dir() / "process" / "agent.c", "labtui-agent")
    session = lab.session()
    child = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"
    for name, script in (("busy", f"while :; do sh -c '{child}'; done"), ("idle", "sleep 1000")):
        argv = [agent, "spawn", "--session", session, "--role", "r", "--instance", name, "--isolate", isolate]
        result = await host.run([*argv, "--", "/bin/sh", "-c", script])
        assert result.ok, result.stderr
    by_name = {i.labels.instance: i for i in await lab.backend.list(session)}
    busy0, idle0, busy1, idle1 = await grown(lab, by_name["busy"], by_name["idle"])
    gained = busy1.cpu_ns - busy0.cpu_ns  # type: ignore[operator]
    assert idle1.cpu_ns - idle0.cpu_ns <= IDLE_SHARE * gained  # type: ignore[operator]
    # the shell itself only forks and waits: most of what was gained is its children's
    stat = Path(f"/proc/{by_name['busy'].details['pid']}/stat").read_text().rsplit(")", 1)[1].split()
    own_ns = (int(stat[11]) + int(stat[12])) * 1e9 / os.sysconf("SC_CLK_TCK")  # utime + stime
    assert own_ns < busy1.cpu_ns / 2, (own_ns, busy1)  # type: ignore[operator]

