"""redis-benchmark ``--csv``: requests per second per test, and latencies since 6.2.

Before 6.2 each line is ``"SET","265252.00"``.  From 6.2 on a header line
``"test","rps","avg_latency_ms",...`` comes first and every test line carries
the rate and the latency figures in milliseconds.
"""

from __future__ import annotations

import csv
import io

from labtui.parsers.common import ParseError, Reading, number


def parse_redis_benchmark_csv(text: str) -> list[Reading]:
    """Per test: <test>_rps (higher is better) and, from 6.2, <test>_<latency>_ms (lower)."""
    rows = [row for row in csv.reader(io.StringIO(text)) if row]
    if not rows:
        raise ParseError("redis-benchmark: no CSV lines")
    header = rows[0] if rows[0][:2] == ["test", "rps"] else ["test", "rps"]
    body = rows[1:] if rows[0][:2] == ["test", "rps"] else rows
    readings = []
    for line, row in enumerate(body, 2 if header is rows[0] else 1):
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
