"""`labtui suites` and `labtui backends`: what can be run, and where."""

from __future__ import annotations

import asyncio

from labtui.backends.base import BackendUnavailable, list_backends, open_backend
from labtui.commands.listing import Column, write_rows
from labtui.hosts import get_host
from labtui.suites import list_suites


def cmd_suites(args) -> int:
    rows = [(i.name, i.kind, i.reproduces, i.description) for i in list_suites()]
    write_rows(args.format, [Column("name", key=True), "kind", "reproduces", "description"], rows,
               title="built-in suites")
    return 0


def cmd_backends(args) -> int:
    """Every backend, usable here or not, and why: the one listing that reports backends that are not installed."""
    host = get_host(args.host)
    rows = asyncio.run(_check_all(host))
    columns: list[Column | str] = [Column("backend", key=True), Column("usable", style=lambda ok: "green" if ok else "red"),
               "version", "reason", "source"]
    write_rows(args.format, columns, rows, title=f"backends on {host.name}")
    return 0


async def _check_all(host) -> list[tuple[str, bool, str, str, str]]:
    async def one(info) -> tuple[str, bool, str, str, str]:
        try:
            availability = await asyncio.wait_for(open_backend(info.name, host).check(), 30)
        except BackendUnavailable as exc:
            return info.name, False, "", str(exc), str(info.source)
        except Exception as exc:
            return info.name, False, "", f"check failed: {type(exc).__name__}: {exc}", str(info.source)
        return info.name, availability.usable, availability.version, availability.reason, str(info.source)

    return list(await asyncio.gather(*(one(i) for i in list_backends())))
