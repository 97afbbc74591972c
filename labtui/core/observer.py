"""The observer's share: labtui's own resident memory and CPU time, read beside a measurement.

Stdlib only and cheap (one /proc read for this process, two per helper), so it can run once a second
while the host is measured.  Memory comes from /proc (Linux); where there is no /proc it reads 0.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from labtui.core.events import ObserverSample

_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class ObserverUsage:
    """labtui's own usage at one moment: this process, and its helper processes summed."""

    rss_bytes: int
    cpu_s: float
    helper_rss_bytes: int = 0
    helper_cpu_s: float = 0.0

    def sample(self, session_id: str) -> ObserverSample:
        """This reading as the event a session records (timestamped now)."""
        return ObserverSample(session_id, self.rss_bytes, self.cpu_s, self.helper_rss_bytes, self.helper_cpu_s)


def _resident_bytes(pid: int | str) -> int:
    """Resident memory of a process from /proc/<pid>/statm (its second field, in pages)."""
    with open(f"/proc/{pid}/statm", "rb") as statm:
        return int(statm.read().split()[1]) * _PAGE_BYTES


def _cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of a process from /proc/<pid>/stat (fields 14 and 15, in clock ticks)."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rpartition(b")")[2].split()  # the name before ")" may hold spaces
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def own_usage(helper_pids: Sequence[int] = ()) -> ObserverUsage:
    """Resident memory and CPU time of this process, and the same summed over `helper_pids`.

    A helper that is gone (or unreadable) counts 0.
    """
    times = os.times()
    try:
        rss = _resident_bytes("self")
    except (OSError, ValueError, IndexError):
        rss = 0
    helper_rss, helper_cpu = 0, 0.0
    for pid in helper_pids:
        try:
            cpu, resident = _cpu_seconds(pid), _resident_bytes(pid)
        except (OSError, ValueError, IndexError):
            continue
        helper_rss += resident
        helper_cpu += cpu
    return ObserverUsage(rss, times.user + times.system, helper_rss, helper_cpu)
