"""AIM Independent Resource Benchmark, Suite IX (AIM9 ``singleuser``).

Two outputs carry the same figures, operations per second per test:

* the console table, one row per test (some builds add user/system CPU
  columns; mail archives often wrap the rows, so rows are read across lines)::

      1 add_double    60.02   716   11.92936   214728.42 Thousand Double Precision Additions/second

* ``suite9.ss``, the tab-separated spreadsheet file: five header lines (machine
  name, configuration, date, benchmark name and version, disk size) and then
  ``add_double<TAB>214728<TAB>Thousand Double Precision Additions per second``.

Readings are ``aim9`` / <test name> in "<operation>/s", higher is better.
``aim9_category`` sorts a test into the seven categories the Zones and Xen
theses report (60 tests: 15 + 12 + 4 + 4 + 7 + 13 + 5).
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_NUM = r"\d+(?:\.\d+)?"
_ROW = re.compile(
    rf"(?<![\w.])(\d+)\s+([a-z][a-z0-9_-]*)\s+({_NUM})\s+(?:({_NUM})\s+({_NUM})\s+)?(\d+)\s+({_NUM})\s+({_NUM})\s+(.+?)/second"
)

AIM9_CATEGORIES: dict[str, tuple[str, ...]] = {
    "Arithmetic": tuple(f"{op}_{t}" for op in ("add", "div", "mul") for t in ("short", "int", "long", "float", "double")),
    "Disk/Filesystem I/O": (
        "disk_rr", "disk_rw", "disk_rd", "disk_wrt", "disk_cp", "sync_disk_rw", "sync_disk_wrt", "sync_disk_cp",
        "disk_src", "dir_rtns_1", "creat-clo", "link_test",
    ),
    "Memory and Process Management": ("brk_test", "page_test", "exec_test", "fork_test"),
    "Function Calls": ("fun_cal", "fun_cal1", "fun_cal2", "fun_cal15"),
    "InterProcess Communication": (
        "tcp_test", "udp_test", "fifo_test", "pipe_cpy", "shared_memory", "stream_pipe", "dgram_pipe",
    ),
    "Library/System": (
        "jmp_test", "ram_copy", "num_rtns_1", "trig_rtns", "string_rtns", "mem_rtns_1", "mem_rtns_2", "sort_rtns_1",
        "signal_test", "misc_rtns_1", "shell_rtns_1", "shell_rtns_2", "shell_rtns_3",
    ),
    "Algorithmic Tests": ("new_raph", "matrix_rtns", "array_rtns", "series_1", "sieve"),
}
# Spellings of the same tests in other AIM9 builds.
_ALIASES = {
    "fun_cal0": "fun_cal", "fun_cal_15": "fun_cal15",
    "sync_diskrw": "sync_disk_rw", "sync_diskwrt": "sync_disk_wrt", "sync_diskcp": "sync_disk_cp",
}
_CATEGORY = {test: category for category, tests in AIM9_CATEGORIES.items() for test in tests}


def aim9_category(test: str) -> str | None:
    """The category of an AIM9 test name, or None for a test outside the standard 60."""
    return _CATEGORY.get(_ALIASES.get(test, test))


def parse_aim9_console(text: str) -> list[Reading]:
    """One reading per test row of singleuser's console table, in operations per second."""
    flat = " ".join(text.split())
    readings = [
        Reading("aim9", m[2], number(m[8], f"{m[2]} ops/s"), _unit(m[9]), "higher") for m in _ROW.finditer(flat)
    ]
    if not readings:
        raise ParseError("AIM9: no test rows ('N name elapsed count rate ops <operation>/second')")
    return readings


def parse_aim9_ss(text: str) -> list[Reading]:
    """One reading per test line of suite9.ss (name, operations per second, operation)."""
    readings = []
    for line_no, line in enumerate(text.splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 3:
            continue  # a header line
        name, value, operation = (f.strip() for f in fields)
        if not operation.endswith(" per second"):
            raise ParseError(f"suite9.ss line {line_no}: expected '<operation> per second', got {operation!r}")
        readings.append(Reading("aim9", name, number(value, f"suite9.ss line {line_no} ({name})"),
                                _unit(operation[: -len(" per second")]), "higher"))
    if not readings:
        raise ParseError("suite9.ss: no tab-separated test lines (name, value, operation per second)")
    return readings


def _unit(operation: str) -> str:
    return " ".join(operation.split()) + "/s"
