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
    ...
    Threads fairness:
        events (avg/stddev):           10342.0000/0.00
        execution time (avg/stddev):   9.9986/0.00

A report is read only when it is whole, through its last line (``execution
time (avg/stddev):``); sysbench's own errors (``invalid option: ...``,
``FATAL: ...``), a run stopped before its report and a report cut short are
ParseErrors naming what happened.
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_CPU = re.compile(r"^\s*events per second:\s+([\d.]+)", re.M)
_MEM_OPS = re.compile(r"^Total operations: \d+ \(([\d.]+) per second\)", re.M)
_MEM_RATE = re.compile(r"^[\d.]+ MiB transferred \(([\d.]+) MiB/sec\)", re.M)
_FILEIO = re.compile(r"^\s*(reads/s|writes/s|fsyncs/s|read, MiB/s|written, MiB/s):\s+([\d.]+)", re.M)
_LATENCY = re.compile(r"^\s*(avg|max|95th percentile):\s+([\d.]+)", re.M)
_END = re.compile(r"^\s*execution time \(avg/stddev\):\s+[\d.]+/[\d.]+$", re.M)
_TOOL_ERROR = re.compile(r"^(?:invalid option: |FATAL: ).*$", re.M)
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
    if error := _TOOL_ERROR.search(text):
        raise ParseError(f"sysbench: {error[0]}")
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
        stopped = " (the run stopped after 'Threads started!', before its report)" if "Threads started!" in text else ""
        raise ParseError(f"sysbench: no 'events per second:', 'MiB transferred' or 'File operations:' result{stopped}")
    if not _END.search(text):
        raise ParseError("sysbench: the report is cut short (no complete 'execution time (avg/stddev):' line)")
    latency_block = text.partition("Latency (ms):")[2]
    for label, value in _LATENCY.findall(latency_block):
        readings.append(Reading("sysbench", f"{test}_{_LATENCY_NAMES[label]}", number(value, f"latency {label}"), "ms", "lower"))
    return readings
