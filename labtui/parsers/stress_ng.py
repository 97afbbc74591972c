"""stress-ng ``--metrics-brief`` (and ``--metrics``): bogo operations per second per stressor.

Reads the metrics rows, tagged ``info:`` by older releases and ``metrc:`` by
newer ones; ``--metrics`` adds columns after the two rates, which are ignored::

    stress-ng: metrc: [4516] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
    stress-ng: metrc: [4516]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
    stress-ng: metrc: [4516] cpu               12483     60.03    146.85      0.03       207.94          84.99
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_ROW = re.compile(
    r"^stress-ng:\s+(?:info|metrc):\s*\[\d+\]\s+([a-z0-9][\w-]*)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(?:\s|$)",
    re.M,
)


def parse_stress_ng(text: str) -> list[Reading]:
    """<stressor>_bogo_ops_s (per second of real time) and <stressor>_bogo_ops_s_cpu (per CPU second)."""
    readings = []
    for stressor, _ops, _real, _usr, _sys, per_real, per_cpu in _ROW.findall(text):
        name = stressor.replace("-", "_")
        readings.append(Reading("stress-ng", f"{name}_bogo_ops_s", number(per_real, f"{stressor} bogo ops/s"),
                                "bogo ops/s", "higher"))
        readings.append(Reading("stress-ng", f"{name}_bogo_ops_s_cpu",
                                number(per_cpu, f"{stressor} bogo ops/s (usr+sys)"), "bogo ops/s", "higher"))
    if not readings:
        raise ParseError("stress-ng: no metrics row ('stress-ng: metrc: [pid] <stressor> <bogo ops> ...'); "
                         "run with --metrics-brief")
    return readings
