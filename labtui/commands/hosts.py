"""`labtui hosts`, `hosts check`, `hosts trust NAME` and `hosts disconnect`: the lab's machines."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass, field

from rich.table import Table
from rich.text import Text

from labtui.backends.base import BackendUnavailable, list_backends, open_backend
from labtui.commands.listing import Column, PipeConsole, write_rows
from labtui.core.errors import UsageError
from labtui.hosts import Host, HostError, get_host
from labtui.hosts.config import LabConfig, load_lab_config
from labtui.hosts.fanout import select_hosts
from labtui.hosts.mux_client import ask, mux_socket

#: Seconds one host's whole check may take (connect, facts, every backend).
CHECK_TIMEOUT_S = 120.0


def cmd_hosts(args) -> int:
    lab = load_lab_config()
    tags = getattr(args, "tags", None) or []
    names = select_hosts(lab, tags=tags) if tags else ["local", *lab.hosts]
    if args.hosts_command == "check":
        return _check(names)
    if args.hosts_command == "trust":
        return _trust(args)
    if args.hosts_command == "disconnect":
        return _disconnect(lab)
    rows: list[tuple] = [("local", None, None, [], None, None)] if "local" in names else []
    rows += [(h.name, f"{h.address}:{h.port}", h.user, list(h.tags), h.jump, str(h.known_hosts))
             for h in (lab.hosts[n] for n in names if n != "local")]
    write_rows(args.format, [Column("host", key=True), "address", "user", "tags", "jump", "known_hosts"], rows,
               title=f"hosts in {lab.path or 'no lab config (only local)'}")
    return 0


@dataclass
class HostReport:
    name: str
    reachable: bool = False
    error: str = ""
    os: str = ""
    cores: int = 0
    mem_bytes: int = 0
    usable: list[str] = field(default_factory=list)
    unusable: list[str] = field(default_factory=list)


def _check(names: list[str]) -> int:
    reports = asyncio.run(_check_all(names))
    table = Table("host", "reachable", "OS", "CPUs", "memory", "usable backends", "not usable (why)",
                  title="host check", title_justify="left")
    for r in reports:
        table.add_row(
            Text(r.name),
            Text("yes", "green") if r.reachable else Text.assemble(("no", "red"), " ", str(r.error)),
            Text(r.os), str(r.cores or ""), _gib(r.mem_bytes) if r.mem_bytes else "",
            Text(", ".join(r.usable)), Text("; ".join(r.unusable)),
        )
    PipeConsole(width=max(PipeConsole().width, 160)).print(table)
    return 0 if all(r.reachable for r in reports) else 1


async def _check_all(names: list[str]) -> list[HostReport]:
    return list(await asyncio.gather(*(_check_one(name) for name in names)))


async def _check_one(name: str) -> HostReport:
    report = HostReport(name)
    try:
        host = get_host(name)
    except HostError as exc:
        report.error = str(exc)
        return report
    try:
        await asyncio.wait_for(_fill(host, report), CHECK_TIMEOUT_S)
    except HostError as exc:
        report.error = str(exc)
    except asyncio.TimeoutError:
        report.error = f"no answer within {CHECK_TIMEOUT_S:g} s"
    finally:
        await host.close()
    return report


async def _fill(host: Host, report: HostReport) -> None:
    facts = await host.facts()
    report.reachable, report.os = True, f"{facts.os} {facts.kernel}"
    report.cores, report.mem_bytes = facts.cores, facts.mem_total_bytes

    async def one(backend_name: str) -> tuple[str, bool, str]:
        try:
            availability = await open_backend(backend_name, host).check()
        except BackendUnavailable as exc:
            return backend_name, False, str(exc)
        except Exception as exc:  # a backend's check failing is reported, not raised
            return backend_name, False, f"check failed: {type(exc).__name__}: {exc}"
        return backend_name, availability.usable, availability.reason

    for backend_name, usable, reason in await asyncio.gather(*(one(b.name) for b in list_backends())):
        if usable:
            report.usable.append(backend_name)
        else:
            report.unusable.append(f"{backend_name}: {reason}")


def _trust(args) -> int:
    from labtui.hosts import hostkeys
    from labtui.hosts.ssh import SSHHost

    if args.name == "local":
        raise UsageError("local is this machine: it has no host key to trust")
    host = get_host(args.name) if args.name in load_lab_config().hosts else None
    if not isinstance(host, SSHHost):
        raise UsageError(f"unknown host {args.name!r}; hosts in the lab config: {', '.join(load_lab_config().hosts) or 'none'}")

    async def go() -> hostkeys.TrustResult:
        try:
            tunnel = await host.jump_connection()
            return await hostkeys.trust(host.config, replace=args.replace, expect=args.fingerprint, tunnel=tunnel)
        finally:
            await host.close()

    try:
        result = asyncio.run(go())
    except HostError as exc:
        print(f"labtui hosts trust: {exc}", file=sys.stderr)
        return 1
    cfg = host.config
    print(f"{cfg.name} ({cfg.address}:{cfg.port}) offers {result.fingerprint}")
    print(f"{result.action} in {result.path}")
    return 0


def _gib(n: int) -> str:
    return f"{n / 2**30:.1f} GiB"


def _disconnect(lab: LabConfig) -> int:
    """Stop the background mux of this lab config, closing every persisted connection."""
    if lab.path is None:
        print("no lab config: nothing is persisted")
        return 0
    answer = asyncio.run(ask(mux_socket(lab.path), {"stop": True}))
    print(f"closed the persisted connections of {lab.path}" if answer else f"no background mux for {lab.path}")
    return 0
