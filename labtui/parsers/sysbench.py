"""sysbench 1.0 ``cpu``, ``memory`` and ``fileio`` run reports.

The test is recognised from its own lines (``CPU speed:``, ``MiB transferred``,
``File operations:``); every report also has the latency block in ms::

    CPU speed:
        events per second:  1033.96
    ...
    Latency (ms):
             avg:                                    0.97
             max:                                    1.51
             95th percentile:                        0.97
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_CPU = re.compile(r"^\s*events per second:\s+([\d.]+)", re.M)
_MEM_OPS = re.compile(r"^Total operations: \d+ \(([\d.]+) per second\)", re.M)
_MEM_RATE = re.compile(r"^[\d.]+ MiB transferred \(([\d.]+) MiB/sec\)", re.M)
_FILEIO = re.compile(r"^\s*(reads/s|writes/s|fsyncs/s|read, MiB/s|written, MiB/s):\s+([\d.]+)", re.M)
_LATENCY = re.compile(r"^\s*(avg|max|95th percentile):\s+([\d.]+)", re.M)
_FILEIO_NAMES = {
    "reads/s": ("reads_per_s", "ops/s"),
    "writes/s": ("writes_per_s", "ops/s"),
    "fsyncs/s": ("fsyncs_per_s", "ops/s"),
    "read, MiB/s": ("read_mib_s", "MiB/s"),
    "written, MiB/s": ("written_mib_s", "MiB/s"),
}
_LATENCY_NAMES = {"avg": "latency_avg_ms", "max": "latency_max_ms", "95th percentile": "latency_p95_ms"}


def parse_sysbench(text: str) -> list[Reading]:
    """cpu_*, memory_* or fileio_* readings of one sysbench run, with its latencies (ms, lower)."""
    if cpu := _CPU.search(text):
        test = "cpu"
        readings = [Reading("sysbench", "cpu_events_per_s", number(cpu[1], "events per second"), "events/s", "higher")]
    elif rate := _MEM_RATE.search(text):
        test = "memory"
        readings = [Reading("sysbench", "memory_mib_s", number(rate[1], "MiB/sec"), "MiB/s", "higher")]
        if ops := _MEM_OPS.search(text):
            readings.append(Reading("sysbench", "memory_ops_per_s", number(ops[1], "operations per second"), "ops/s", "higher"))
    elif rows := _FILEIO.findall(text):
        test = "fileio"
        readings = []
        for label, value in rows:
            name, unit = _FILEIO_NAMES[label]
            readings.append(Reading("sysbench", f"fileio_{name}", number(value, label), unit, "higher"))
    else:
        raise ParseError("sysbench: no 'events per second:', 'MiB transferred' or 'File operations:' result")
    latency_block = text.partition("Latency (ms):")[2]
    for label, value in _LATENCY.findall(latency_block):
        readings.append(Reading("sysbench", f"{test}_{_LATENCY_NAMES[label]}", number(value, f"latency {label}"), "ms", "lower"))
    return readings
