"""CPU topology of a host, and where an isolation run pins worker and attackers.

The topology is read from ``/sys/devices/system/cpu/cpu*/topology`` through
the host (one ``grep``), so it works locally and over SSH.  Placements follow
the Docker/Unikraft study (chapter 5): the attacker on the worker's own
hardware thread, on the sibling thread of the same core, on another core, and
one attacker on every thread outside the worker's core.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labtui.hosts.base import Host, HostError

_TOPOLOGY_LINE = re.compile(r"/cpu(\d+)/topology/(core_id|physical_package_id):(-?\d+)$")


class TopologyError(Exception):
    """The host's CPU topology could not be read."""


@dataclass(frozen=True, slots=True, order=True)
class Cpu:
    """One hardware thread: its CPU number, package (socket) and core."""

    package: int
    core: int
    cpu: int


@dataclass(frozen=True, slots=True)
class Plan:
    """Where the worker runs, and the attacker CPUs of each placement the host can offer."""

    worker_cpu: int
    attackers: dict[str, tuple[int, ...]]
    skipped: dict[str, str]


def parse_topology(text: str) -> list[Cpu]:
    """CPUs from ``grep -r`` lines ``.../cpuN/topology/core_id:V`` (and physical_package_id)."""
    fields: dict[int, dict[str, int]] = {}
    for line in text.splitlines():
        if m := _TOPOLOGY_LINE.search(line.strip()):
            fields.setdefault(int(m[1]), {})[m[2]] = int(m[3])
    cpus = [Cpu(f.get("physical_package_id", 0), f["core_id"], n) for n, f in fields.items() if "core_id" in f]
    return sorted(cpus, key=lambda c: c.cpu)


async def read_topology(host: Host) -> list[Cpu]:
    """The online CPUs of host with their core and package."""
    argv = ["grep", "-r", "--include=core_id", "--include=physical_package_id", ".", "/sys/devices/system/cpu"]
    try:
        result = await host.run(argv, timeout=30.0)
    except HostError as exc:
        raise TopologyError(f"cannot read the CPU topology of host {host.name}: {exc}") from exc
    cpus = parse_topology(result.stdout)
    if not cpus:
        raise TopologyError(f"host {host.name} shows no CPU topology under /sys/devices/system/cpu")
    return cpus


def plan_placements(cpus: list[Cpu], placements: tuple[str, ...]) -> Plan:
    """Pin the worker on a thread of the first core (one with an SMT sibling if any has),
    and give each placement its attacker CPUs; a placement the host cannot offer is skipped
    with the reason."""
    by_core: dict[tuple[int, int], list[Cpu]] = {}
    for c in sorted(cpus, key=lambda c: c.cpu):
        by_core.setdefault((c.package, c.core), []).append(c)
    cores = list(by_core.values())
    home = next((threads for threads in cores if len(threads) > 1), cores[0])
    worker = home[0]
    siblings = [c.cpu for c in home[1:]]
    others = [c for c in sorted(cpus, key=lambda c: c.cpu) if (c.package, c.core) != (worker.package, worker.core)]
    same_package = [c for c in others if c.package == worker.package]
    choices: dict[str, tuple[int, ...]] = {
        "alone": (),
        "same-thread": (worker.cpu,),
        "sibling-thread": tuple(siblings[:1]),
        "other-core": ((same_package or others)[0].cpu,) if others else (),
        "all-other-cores": tuple(c.cpu for c in others),
    }
    reasons = {
        "sibling-thread": f"CPU {worker.cpu} has no SMT sibling thread on this host",
        "other-core": "the host has a single core",
        "all-other-cores": "the host has a single core",
    }
    attackers, skipped = {}, {}
    for name in placements:
        if name != "alone" and not choices[name]:
            skipped[name] = reasons[name]
        else:
            attackers[name] = choices[name]
    return Plan(worker.cpu, attackers, skipped)
