"""redis-benchmark ``--csv``: requests per second per test, and latencies since 6.2.

Before 6.2 each line is ``"SET","265252.00"``.  From 6.2 on a header line
``"test","rps","avg_latency_ms",...`` comes first and every test line carries
the rate and the latency figures in milliseconds.

redis-benchmark writes its errors (``Error: Connection reset by peer``,
``Could not connect to Redis at ...``, ``NOAUTH ...``) to stderr: in a file that
holds both streams any such line is a ``ParseError`` naming it (only its
``WARNING:`` lines are passed over), and so is a line cut short and output
with no test line at all.
"""

from __future__ import annotations

import csv
import re

from labtui.parsers.common import ParseError, Reading, number

_QUOTED_ROW = re.compile(r'"[^"]*"(?:,"[^"]*")*')


def parse_redis_benchmark_csv(text: str) -> list[Reading]:
    """Per test: <test>_rps (higher is better) and, from 6.2, <test>_<latency>_ms (lower)."""
    rows = _csv_rows(text)
    if not rows:
        raise ParseError("redis-benchmark: no CSV lines")
    header = ["test", "rps"]
    if rows[0][1][:2] == header:
        header, rows = rows[0][1], rows[1:]
        if not rows:
            raise ParseError("redis-benchmark: no test line after the CSV header (no test finished)")
    readings = []
    for line, row in rows:
        if len(row) != len(header):
            raise ParseError(f"redis-benchmark: CSV line {line} has {len(row)} fields, expected {len(header)}")
        test = _metric_name(row[0])
        for column, value in zip(header[1:], row[1:]):
            if column == "rps":
                readings.append(Reading("redis-benchmark", f"{test}_rps", number(value, f"{row[0]} rps"), "req/s", "higher"))
            else:
                readings.append(Reading("redis-benchmark", f"{test}_{column}", number(value, f"{row[0]} {column}"),
                                        "ms", "lower"))
    return readings


def _csv_rows(text: str) -> list[tuple[int, list[str]]]:
    """(line number, fields) of every CSV line.

    ParseError naming the tool's own lines when there are any (all but ``WARNING:``
    lines), or the first CSV line cut short.
    """
    rows, tool_lines = [], []
    for line, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("WARNING:"):
            continue
        if not stripped.startswith('"'):
            tool_lines.append(stripped)
        elif not _QUOTED_ROW.fullmatch(stripped):
            raise ParseError(f"redis-benchmark: CSV line {line} is cut short: {stripped}")
        else:
            rows.append((line, next(csv.reader([stripped]))))
    if tool_lines:
        raise ParseError(f"redis-benchmark: {' '.join(tool_lines)}")
    return rows


def _metric_name(test: str) -> str:
    """'MSET (10 keys)' -> 'mset'; 'LPUSH (needed to benchmark LRANGE)' -> 'lpush_for_lrange'.

    The second LPUSH of a full run only prepares LRANGE; it keeps its own name so
    that it never shares a metric with the real LPUSH test.
    """
    name, _, note = test.partition("(")
    base = name.strip().lower().replace(" ", "_") or "unnamed"
    needed = note.rstrip(") ").lower().removeprefix("needed to benchmark ").strip()
    if note.lower().startswith("needed to benchmark") and needed:
        return f"{base}_for_{needed.replace(' ', '_')}"
    return base
