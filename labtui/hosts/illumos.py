"""Parse illumos/Solaris ``kstat -p`` and ``swap -s`` text into resource figures (pure functions)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from labtui.hosts.linux import CpuTimes

#: What the sampler asks kstat for: per-CPU time, page counts, the load average.
SAMPLE_KSTATS = ("cpu::sys", "unix:0:system_pages", "unix:0:system_misc:avenrun_1min")
#: What facts() asks kstat for.
FACT_KSTATS = ("unix:0:system_misc:ncpus", "unix:0:system_pages:physmem", "cpu_info:0:cpu_info0:brand")

_SWAP = re.compile(r"total:\s*(\d+)k bytes allocated \+\s*(\d+)k reserved =\s*(\d+)k used,\s*(\d+)k available")


def parse_kstat(text: str) -> dict[str, str]:
    """``kstat -p`` lines (``module:instance:name:statistic<TAB>value``) as a dict."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if sep and key.count(":") >= 3:
            out[key] = value.strip()
    return out


def cpu_times(kstats: dict[str, str]) -> CpuTimes:
    """Idle and total CPU nanoseconds summed over every ``cpu:N:sys`` kstat."""
    idle = busy = 0
    for key, value in kstats.items():
        module, _, name, stat = key.split(":", 3)
        if module != "cpu" or name != "sys":
            continue
        if stat == "cpu_nsec_idle":
            idle += int(value)
        elif stat in ("cpu_nsec_user", "cpu_nsec_kernel"):
            busy += int(value)
    if idle + busy == 0:
        raise ValueError("no cpu:N:sys:cpu_nsec_* statistics in kstat output")
    return CpuTimes(idle=idle, total=idle + busy)


@dataclass(frozen=True, slots=True)
class SwapFigures:
    used_bytes: int
    available_bytes: int

    @property
    def avail(self) -> float | None:
        total = self.used_bytes + self.available_bytes
        return self.available_bytes / total if total else None


def parse_swap_s(text: str) -> SwapFigures:
    """``swap -s``: ``total: Ak bytes allocated + Bk reserved = Ck used, Dk available``."""
    match = _SWAP.search(text)
    if match is None:
        raise ValueError(f"unexpected swap -s output: {text.strip()[:120]!r}")
    return SwapFigures(used_bytes=int(match[3]) * 1024, available_bytes=int(match[4]) * 1024)


@dataclass(frozen=True, slots=True)
class PageFigures:
    mem_avail: float
    mem_used_bytes: int
    mem_total_bytes: int


def page_figures(kstats: dict[str, str], pagesize: int) -> PageFigures:
    """RAM from ``unix:0:system_pages``: physmem is the total, freemem what is free."""
    physmem = int(kstats["unix:0:system_pages:physmem"])
    freemem = int(kstats["unix:0:system_pages:freemem"])
    return PageFigures(
        mem_avail=freemem / physmem if physmem else 0.0,
        mem_used_bytes=(physmem - freemem) * pagesize,
        mem_total_bytes=physmem * pagesize,
    )


def load1(kstats: dict[str, str]) -> float:
    """One-minute load: ``avenrun_1min`` is fixed point with 8 fraction bits."""
    return int(kstats["unix:0:system_misc:avenrun_1min"]) / 256.0


def cpu_model(kstats: dict[str, str]) -> str:
    return kstats.get("cpu_info:0:cpu_info0:brand", "unknown") or "unknown"


def ncpus(kstats: dict[str, str]) -> int:
    return int(kstats.get("unix:0:system_misc:ncpus", "1"))
