"""labtui's probes: each prints one JSON line per reading.

``{"benchmark": "syscall", "metric": "getppid_ns", "value": 123.4,
"unit": "ns", "better": "lower"}``.  Lines that are not JSON objects (a
program's chatter) are skipped; a JSON object that lacks a key is an error.
"""

from __future__ import annotations

import json
import math

from labtui.parsers.common import ParseError, Reading

_KEYS = ("benchmark", "metric", "value", "unit", "better")


def parse_probe_output(text: str) -> list[Reading]:
    """Every reading in a probe's stdout; ParseError when there is none or one is malformed."""
    readings = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ParseError(f"line {number}: not JSON: {exc.msg}") from None
        readings.append(_reading(record, number))
    if not readings:
        raise ParseError("no JSON reading line in the output: " + (repr(text[:200]) if text else "output was empty"))
    return readings


def _reading(record: object, number: int) -> Reading:
    if not isinstance(record, dict):
        raise ParseError(f"line {number}: expected a JSON object")
    missing = [key for key in _KEYS if key not in record]
    if missing:
        raise ParseError(f"line {number}: missing {', '.join(missing)}")
    value = record["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ParseError(f"line {number}: value must be a finite number, got {value!r}")
    if record["better"] not in ("higher", "lower"):
        raise ParseError(f"line {number}: better must be 'higher' or 'lower', got {record['better']!r}")
    for key in ("benchmark", "metric", "unit"):
        if not isinstance(record[key], str) or not record[key]:
            raise ParseError(f"line {number}: {key} must be a non-empty string")
    return Reading(record["benchmark"], record["metric"], float(value), record["unit"], record["better"])
