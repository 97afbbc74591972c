"""Every parser of a tool's output, named once: the names `worker.output` in a suite and `labtui import --format`
take, each with the function that reads that output (imported when first used: naming them costs nothing)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from labtui.parsers.common import Reading


@dataclass(frozen=True, slots=True)
class ToolParser:
    """A tool's output parser: its name, its ``module:function``, and where it may be named."""

    name: str
    ref: str
    #: A suite's worker may print this output (``worker.output``).
    worker: bool
    #: `labtui import --format` reads files of it.
    importable: bool

    def parse(self, text: str) -> list[Reading]:
        """The readings of one output (ParseError naming what it could not read)."""
        module, _, function = self.ref.partition(":")
        result: list[Reading] = getattr(importlib.import_module(module), function)(text)
        return result


PARSERS: dict[str, ToolParser] = {p.name: p for p in (
    ToolParser("probe", "labtui.parsers.probe:parse_probe_output", worker=True, importable=False),
    ToolParser("lmbench", "labtui.parsers.lmbench:parse_lmbench", worker=True, importable=True),
    ToolParser("unixbench", "labtui.parsers.unixbench:parse_unixbench", worker=True, importable=True),
    ToolParser("sysbench", "labtui.parsers.sysbench:parse_sysbench", worker=True, importable=True),
    ToolParser("stress-ng", "labtui.parsers.stress_ng:parse_stress_ng", worker=True, importable=True),
    ToolParser("aim9", "labtui.parsers.aim9:parse_aim9_console", worker=False, importable=True),
    ToolParser("aim9-ss", "labtui.parsers.aim9:parse_aim9_ss", worker=False, importable=True),
    ToolParser("wrk", "labtui.parsers.wrk:parse_wrk", worker=False, importable=True),
    ToolParser("redis-benchmark", "labtui.parsers.redis_benchmark:parse_redis_benchmark_csv", worker=False,
               importable=True),
    ToolParser("stream", "labtui.parsers.stream:parse_stream", worker=False, importable=True),
)}
#: How a worker's output is read: labtui's probe lines, or a real tool's own output (stdout and stderr).
WORKER_OUTPUTS = tuple(name for name, p in PARSERS.items() if p.worker)
#: What `labtui import --format` reads: a CSV of results, or a real tool's output.
IMPORT_FORMATS = ("csv", *(name for name, p in PARSERS.items() if p.importable))
