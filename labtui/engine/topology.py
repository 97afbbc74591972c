"""CPU topology of a host, and where an isolation run pins worker and attackers.

The topology is read from ``/sys/devices/system/cpu/cpu*/topology`` through
the host (one ``grep``), so it works locally and over SSH: each CPU's package
and core, and the hardware threads that share its core
(``thread_siblings_list``, which stays right where core ids repeat across dies).
Placements follow the Docker/Unikraft study (study 001, chapter 5):

- ``same-thread``: the attacker on the worker's own hardware thread (Table 5.1's
  "thread" slowdown);
- ``sibling-thread``: "on the other hyper thread belonging to the same core"
  (5.2.1; Table 5.1's "core" slowdown);
- ``other-core``: one attacker on another core of the same processor;
- ``all-other-cores``: "an attacker on every hyper thread the processor has, apart
  from one core that we use for the application benchmark" (5.3, Figure 5.5).

A host with one thread per core (no SMT, or SMT turned off) has no sibling
thread: that placement is skipped, and the reason says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labtui.hosts.base import Host, HostError

_TOPOLOGY_LINE = re.compile(r"/cpu(\d+)/topology/(core_id|physical_package_id):(-?\d+)$")
_SIBLINGS_LINE = re.compile(r"/cpu(\d+)/topology/thread_siblings_list:([0-9,\-]+)$")
_SMT_CONTROL_LINE = re.compile(r"/cpu/smt/control:(\S+)$")


class TopologyError(Exception):
    """The host's CPU topology could not be read."""


@dataclass(frozen=True, slots=True, order=True)
class Cpu:
    """One hardware thread: its CPU number, package (socket) and core, and the threads of its core
    (itself included; empty when the host did not say)."""

    package: int
    core: int
    cpu: int
    siblings: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """Where the worker runs, and the attacker CPUs of each placement the host can offer."""

    worker_cpu: int
    attackers: dict[str, tuple[int, ...]]
    skipped: dict[str, str]


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """A sysfs CPU list such as ``0-3,8`` as CPU numbers."""
    out: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(sorted(set(out)))


def parse_topology(text: str) -> list[Cpu]:
    """CPUs from ``grep -r`` lines ``.../cpuN/topology/core_id:V`` (and physical_package_id,
    thread_siblings_list)."""
    fields: dict[int, dict[str, int]] = {}
    siblings: dict[int, tuple[int, ...]] = {}
    for line in text.splitlines():
        line = line.strip()
        if m := _TOPOLOGY_LINE.search(line):
            fields.setdefault(int(m[1]), {})[m[2]] = int(m[3])
        elif m := _SIBLINGS_LINE.search(line):
            siblings[int(m[1])] = parse_cpu_list(m[2])
    cpus = [Cpu(f.get("physical_package_id", 0), f["core_id"], n, siblings.get(n, ()))
            for n, f in fields.items() if "core_id" in f]
    return sorted(cpus, key=lambda c: c.cpu)


def parse_smt_control(text: str) -> str | None:
    """The host's ``/sys/devices/system/cpu/smt/control`` (on, off, forceoff, notsupported, notimplemented)."""
    for line in text.splitlines():
        if m := _SMT_CONTROL_LINE.search(line.strip()):
            return m[1]
    return None


async def read_topology(host: Host) -> list[Cpu]:
    """The online CPUs of host with their core, package and core siblings."""
    cpus, _ = await read_topology_and_smt(host)
    return cpus


async def read_topology_and_smt(host: Host) -> tuple[list[Cpu], str | None]:
    """The online CPUs of host, and its SMT control state (None where the kernel has none)."""
    argv = ["grep", "-r", "--include=core_id", "--include=physical_package_id", "--include=thread_siblings_list",
            "--include=control", ".", "/sys/devices/system/cpu"]
    try:
        result = await host.run(argv, timeout=30.0)
    except HostError as exc:
        raise TopologyError(f"cannot read the CPU topology of host {host.name}: {exc}") from exc
    cpus = parse_topology(result.stdout)
    if not cpus:
        raise TopologyError(f"host {host.name} shows no CPU topology under /sys/devices/system/cpu")
    return cpus, parse_smt_control(result.stdout)


def _cores(cpus: list[Cpu]) -> list[list[Cpu]]:
    """The hardware threads grouped by core, in CPU order: by thread_siblings_list where every CPU
    has one, else by (package, core id)."""
    online = {c.cpu for c in cpus}
    by_core: dict[object, list[Cpu]] = {}
    use_siblings = all(c.siblings for c in cpus)
    for c in sorted(cpus, key=lambda c: c.cpu):
        key = tuple(s for s in c.siblings if s in online) if use_siblings else (c.package, c.core)
        by_core.setdefault(key, []).append(c)
    return list(by_core.values())


def plan_placements(cpus: list[Cpu], placements: tuple[str, ...], smt: str | None = None) -> Plan:
    """Pin the worker on a thread of the first core (one with an SMT sibling if any has),
    and give each placement its attacker CPUs; a placement the host cannot offer is skipped
    with the reason.  `smt` is the host's SMT control state, named in the reason when useful."""
    cores = _cores(cpus)
    home = next((threads for threads in cores if len(threads) > 1), cores[0])
    worker = home[0]
    siblings = [c.cpu for c in home[1:]]
    home_cpus = {c.cpu for c in home}
    others = [c for c in sorted(cpus, key=lambda c: c.cpu) if c.cpu not in home_cpus]
    same_package = [c for c in others if c.package == worker.package]
    choices: dict[str, tuple[int, ...]] = {
        "alone": (),
        "same-thread": (worker.cpu,),
        "sibling-thread": tuple(siblings[:1]),
        "other-core": ((same_package or others)[0].cpu,) if others else (),
        # the study: every thread of the processor apart from the worker's core
        "all-other-cores": tuple(c.cpu for c in (same_package or others)),
    }
    why_no_smt = {
        "off": "SMT is turned off (/sys/devices/system/cpu/smt/control is off)",
        "forceoff": "SMT is forced off (/sys/devices/system/cpu/smt/control is forceoff)",
        "notsupported": "the CPUs this host sees have no SMT (smt/control is notsupported, as in most virtual machines)",
    }.get(smt or "", "no core has a second hardware thread")
    reasons = {
        "sibling-thread": f"the host has no SMT sibling thread: {why_no_smt}, so the worker's core "
                          f"(CPU {worker.cpu}) has no other hyper thread for the attacker (study 001's "
                          "Table 5.1 \"core\" slowdown cannot be measured here)",
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
