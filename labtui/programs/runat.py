"""labtui-runat (``runat.c``): run a program at a moment of the host's clock and report when it ran.

``labtui-runat AT_NS -- PROGRAM ARGS...`` sleeps until AT_NS (CLOCK_REALTIME ns), runs
the program and writes ``labtui-runat<TAB>START_NS<TAB>END_NS<TAB>STATUS`` on stderr;
``labtui-runat --now`` prints the host's clock.  It is built on each host like the probes.
The engine runs benchmarks through it (common starts, creation times); backends that
cannot hold a start themselves wrap an instance's command in it.
"""

from __future__ import annotations

import weakref
from pathlib import Path

from labtui.hosts.base import Host
from labtui.programs.native import ensure_program

SOURCE = Path(__file__).resolve().parent / "runat.c"
NAME = "labtui-runat"

#: Per host, per runtime dir: where labtui-runat was found or built, so later calls cost no round trip.
_built: weakref.WeakKeyDictionary[Host, dict[str, str]] = weakref.WeakKeyDictionary()


async def build(host: Host) -> str:
    """labtui-runat's path on host, built there on first use (cached by content hash), then remembered."""
    known = _built.setdefault(host, {})
    if host.runtime_dir not in known:
        known[host.runtime_dir] = await ensure_program(host, SOURCE, NAME)
    return known[host.runtime_dir]


def at_ns(start_at: float) -> int:
    """Epoch seconds as the AT_NS labtui-runat takes."""
    return round(start_at * 1e9)


def closing_line(stderr: str) -> tuple[int, int, int] | None:
    """START_NS, END_NS and STATUS from labtui-runat's closing line, None when it wrote none."""
    for line in reversed(stderr.splitlines()):
        fields = line.split("\t")
        if len(fields) == 4 and fields[0] == NAME:
            try:
                return int(fields[1]), int(fields[2]), int(fields[3])
            except ValueError:
                return None
    return None


def complaint(stderr: str) -> str:
    """labtui-runat's own error (``labtui-runat: cannot execute ...``), empty when it had none."""
    return next((line.strip() for line in stderr.splitlines() if line.startswith(f"{NAME}: ")), "")


def program_stderr(stderr: str) -> str:
    """stderr without labtui-runat's closing line: what the program itself wrote."""
    return "\n".join(line for line in stderr.splitlines() if not line.startswith(NAME + "\t"))
