"""`labtui suites` and `labtui backends`: what can be run, and where."""

from __future__ import annotations

import asyncio

from rich.console import Console
from rich.table import Table
from rich.text import Text

from labtui.backends.base import BackendUnavailable, list_backends, open_backend
from labtui.hosts import get_host
from labtui.suites import list_suites


def cmd_suites(args) -> int:
    table = Table("name", "kind", "reproduces", "description", title="built-in suites", title_justify="left")
    for info in list_suites():
        table.add_row(*(Text(str(v)) for v in (info.name, info.kind, info.reproduces, info.description)))
    Console().print(table)
    return 0


def cmd_backends(args) -> int:
    host = get_host(args.host)
    rows = asyncio.run(_check_all(host))
    table = Table("backend", "usable here", "version", "why / why not", "source",
                  title=Text(f"backends on {host.name}"), title_justify="left")
    for name, usable, version, reason, source in rows:
        table.add_row(Text(name), Text("yes", "green") if usable else Text("no", "red"),
                      Text(version or ""), Text(reason or ""), Text(str(source)))
    Console().print(table)
    return 0


async def _check_all(host) -> list[tuple[str, bool, str, str, str]]:
    async def one(info) -> tuple[str, bool, str, str, str]:
        try:
            availability = await asyncio.wait_for(open_backend(info.name, host).check(), 30)
        except BackendUnavailable as exc:
            return info.name, False, "", str(exc), info.source
        except Exception as exc:
            return info.name, False, "", f"check failed: {type(exc).__name__}: {exc}", info.source
        return info.name, availability.usable, availability.version, availability.reason, info.source

    return list(await asyncio.gather(*(one(i) for i in list_backends())))
