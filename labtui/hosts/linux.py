"""Parse Linux /proc text into resource figures (pure functions, no I/O).

Shared by LocalHost and, later, by hosts that stream /proc over a channel.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CpuTimes:
    idle: int
    total: int


def parse_proc_stat(text: str) -> CpuTimes:
    """Aggregate CPU jiffies from the first `cpu ` line of /proc/stat.

    idle counts idle plus iowait; total excludes guest time, which the kernel
    already folds into user and nice.
    """
    for line in text.splitlines():
        if line.startswith("cpu "):
            fields = [int(x) for x in line.split()[1:]]
            fields += [0] * (8 - len(fields))
            user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]
            total = user + nice + system + idle + iowait + irq + softirq + steal
            return CpuTimes(idle=idle + iowait, total=total)
    raise ValueError("no aggregate 'cpu' line in /proc/stat")


def cpu_available(before: CpuTimes, after: CpuTimes) -> float | None:
    """Idle share of CPU time between two readings, or None if no time passed."""
    dt = after.total - before.total
    if dt <= 0:
        return None
    return min(1.0, max(0.0, (after.idle - before.idle) / dt))


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as bytes per key (values in kB are converted)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if not parts:
            continue
        value = int(parts[0])
        if len(parts) > 1 and parts[1] == "kB":
            value *= 1024
        out[key.strip()] = value
    return out


@dataclass(frozen=True, slots=True)
class MemoryFigures:
    mem_avail: float
    swap_avail: float | None
    mem_used_bytes: int
    mem_total_bytes: int


def memory_figures(meminfo: dict[str, int]) -> MemoryFigures:
    """RAM availability (MemAvailable/MemTotal), swap availability (None without swap)."""
    total = meminfo["MemTotal"]
    available = meminfo.get("MemAvailable", meminfo.get("MemFree", 0))
    swap_total = meminfo.get("SwapTotal", 0)
    swap_avail = meminfo.get("SwapFree", 0) / swap_total if swap_total > 0 else None
    return MemoryFigures(
        mem_avail=available / total if total else 0.0,
        swap_avail=swap_avail,
        mem_used_bytes=total - available,
        mem_total_bytes=total,
    )


def parse_loadavg(text: str) -> float:
    """The one-minute load average from /proc/loadavg."""
    return float(text.split()[0])


def parse_cpu_model(cpuinfo: str) -> str:
    """The first 'model name' (x86) or 'Hardware'/'cpu model' line of /proc/cpuinfo."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "cpu model", "Hardware", "Processor"):
            return value.strip()
    return "unknown"
