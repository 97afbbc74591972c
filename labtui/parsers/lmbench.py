"""lmbench lat_* results: the OS latencies of the VServer/Xen paper's Table 2.

Reads the output of the single tools and of a whole ``lmbench`` results file:

* ``lat_syscall``, ``lat_proc``, ``lat_pagefault``, ``lat_pipe``, ``lat_sig``:
  ``Process fork+exit: 178.2188 microseconds``;
* ``lat_ctx``: a ``"size=64k ovr=1.76`` block followed by ``16 4.68`` lines
  (processes, microseconds), giving ``ctx_16p_64k_us``;
* ``lat_mmap``: ``67.108864 565`` lines (size in MB of 10^6 bytes,
  microseconds), under a ``"mappings`` header in a results file, giving
  ``mmap_64m_us``.  ``parse_lat_mmap`` reads a bare lat_mmap output.

All values are microseconds, lower is better.
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_LABELS = {
    "Simple syscall": "syscall_null_us",
    "Simple read": "syscall_read_us",
    "Simple write": "syscall_write_us",
    "Simple stat": "syscall_stat_us",
    "Simple fstat": "syscall_fstat_us",
    "Simple open/close": "syscall_openclose_us",
    "Process fork+exit": "proc_fork_us",
    "Process fork+execve": "proc_exec_us",
    "Process fork+/bin/sh -c": "proc_shell_us",
    "Pipe latency": "pipe_latency_us",
    "AF_UNIX sock stream latency": "unix_latency_us",
    "Signal handler installation": "sig_install_us",
    "Signal handler overhead": "sig_handler_us",
    "Protection fault": "protection_fault_us",
}
_LATENCY = re.compile(r"^(.+?):\s*([\d.]+) microseconds\s*$")
_CTX_HEADER = re.compile(r'^"size=(\d+)k ovr=[\d.]+\s*$')
_PAIR = re.compile(r"^([\d.]+)\s+([\d.]+)\s*$")


def parse_lmbench(text: str) -> list[Reading]:
    """Syscall, process, page fault, context switch and mmap latencies found in the text."""
    readings: list[Reading] = []
    block: str | None = None  # 'ctx' or 'mmap' while reading the lines of such a block
    ctx_kb = 0
    for line in text.splitlines():
        line = line.strip()
        if ctx := _CTX_HEADER.match(line):
            block, ctx_kb = "ctx", int(ctx[1])
        elif line == '"mappings':
            block = "mmap"
        elif (pair := _PAIR.match(line)) and block == "ctx":
            procs = int(number(pair[1], "lat_ctx processes"))
            readings.append(Reading("lmbench", f"ctx_{procs}p_{ctx_kb}k_us", number(pair[2], "lat_ctx time"), "us", "lower"))
        elif pair and block == "mmap":
            readings.append(_mmap(pair[1], pair[2]))
        else:
            block = None
            if latency := _LATENCY.match(line):
                readings += _latency(latency[1], latency[2])
    if not readings:
        raise ParseError("lmbench: no lat_* result ('... microseconds', '\"size=' or '\"mappings' block)")
    return readings


def parse_lat_mmap(text: str) -> list[Reading]:
    """mmap_<size>_us for every 'MB microseconds' line of a bare lat_mmap output."""
    readings = [_mmap(m[1], m[2]) for line in text.splitlines() if (m := _PAIR.match(line.strip()))]
    if not readings:
        raise ParseError("lat_mmap: no '<size MB> <microseconds>' line")
    return readings


def _latency(label: str, value: str) -> list[Reading]:
    if label.startswith("Pagefaults on "):
        return [Reading("lmbench", "pagefault_us", number(value, label), "us", "lower")]
    if metric := _LABELS.get(label):
        return [Reading("lmbench", metric, number(value, label), "us", "lower")]
    return []


def _mmap(size_mb: str, usecs: str) -> Reading:
    kib = round(number(size_mb, "lat_mmap size") * 1e6 / 1024)
    size = f"{kib // 1024}m" if kib >= 1024 and kib % 1024 == 0 else f"{kib}k"
    return Reading("lmbench", f"mmap_{size}_us", number(usecs, "lat_mmap time"), "us", "lower")
