"""Resource sampling over one long-lived channel.

The remote side is a small shell loop started once per host: each newline the
controller writes makes it print one reading as ``@section`` blocks ending with
``@end``.  Linux prints /proc/stat, /proc/meminfo and /proc/loadavg; illumos and
Solaris print ``kstat -p``, ``swap -s`` and ``pagesize``.  No command is
started over SSH per sample, and a reading is taken exactly when asked for, so
both ``sample()`` and the periodic ``samples()`` share the one channel.
"""

from __future__ import annotations

import shlex

from labtui.core.events import ResourceSample
from labtui.hosts import illumos, linux
from labtui.hosts.linux import CpuTimes

END = "@end"

_LINUX_LOOP = (
    "while read -r _; do for f in stat meminfo loadavg; do echo \"@$f\"; cat /proc/$f; done; "
    f"echo {END}; done"
)
_SUNOS_LOOP = (
    f"while read -r _; do echo @kstat; kstat -p {' '.join(shlex.quote(k) for k in illumos.SAMPLE_KSTATS)}; "
    f"echo @swap; swap -s; echo @pagesize; pagesize; echo {END}; done"
)


def sampler_script(os_name: str) -> str:
    """The remote loop for a host whose ``uname -s`` is os_name."""
    if os_name == "Linux":
        return _LINUX_LOOP
    if os_name == "SunOS":
        return _SUNOS_LOOP
    raise ValueError(f"no resource sampler for {os_name!r} (Linux and SunOS are supported)")


def split_sections(lines: list[str]) -> dict[str, str]:
    """``@name`` blocks (up to ``@end``) as {name: text}."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        if line.startswith("@") and line != END and " " not in line:
            current = sections.setdefault(line[1:], [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(body) + "\n" for name, body in sections.items()}


def build_sample(
    host: str, os_name: str, sections: dict[str, str], before: CpuTimes | None
) -> tuple[ResourceSample, CpuTimes]:
    """A ResourceSample from one reading; CPU availability covers the time since before."""
    if os_name == "Linux":
        after = linux.parse_proc_stat(sections["stat"])
        mem = linux.memory_figures(linux.parse_meminfo(sections["meminfo"]))
        return ResourceSample(
            host=host,
            cpu_avail=linux.cpu_available(before, after) if before else None,
            mem_avail=mem.mem_avail,
            swap_avail=mem.swap_avail,
            mem_used_bytes=mem.mem_used_bytes,
            load1=linux.parse_loadavg(sections["loadavg"]),
        ), after
    kstats = illumos.parse_kstat(sections["kstat"])
    after = illumos.cpu_times(kstats)
    pages = illumos.page_figures(kstats, int(sections["pagesize"].split()[0]))
    return ResourceSample(
        host=host,
        cpu_avail=linux.cpu_available(before, after) if before else None,
        mem_avail=pages.mem_avail,
        swap_avail=illumos.parse_swap_s(sections["swap"]).avail,
        mem_used_bytes=pages.mem_used_bytes,
        load1=illumos.load1(kstats),
    ), after
