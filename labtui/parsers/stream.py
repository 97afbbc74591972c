"""STREAM (McCalpin): best rate of Copy, Scale, Add and Triad in MB/s.

Reads the result table::

    Function    Best Rate MB/s  Avg time     Min time     Max time
    Copy:           90014.1     0.031581     0.014220     0.050416
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_ROW = re.compile(r"^(Copy|Scale|Add|Triad):\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", re.M)


def parse_stream(text: str) -> list[Reading]:
    """<kernel>_mb_s (best rate, higher is better) for each kernel in the table."""
    rows = _ROW.findall(text)
    if not rows:
        raise ParseError("STREAM: no 'Copy:/Scale:/Add:/Triad:' result rows")
    return [Reading("stream", f"{kernel.lower()}_mb_s", number(rate, kernel), "MB/s", "higher") for kernel, rate, *_ in rows]
