"""wrk (HTTP load generator): requests per second, transfer rate and latency.

Reads wrk's closing summary::

      Thread Stats   Avg      Stdev     Max   +/- Stdev
        Latency    16.08ms   34.40ms 501.10ms   88.69%
    ...
    Requests/sec:  83974.71
    Transfer/sec:     12.89MB
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_TIME = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_SIZE = {"B": 1.0, "KB": 1024.0, "MB": 1024.0**2, "GB": 1024.0**3, "TB": 1024.0**4}
_LATENCY = re.compile(r"^\s*Latency\s+([\d.]+)(us|ms|s|m|h)\s+([\d.]+)(us|ms|s|m|h)\s+([\d.]+)(us|ms|s|m|h)", re.M)
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)", re.M)
_TRANSFER = re.compile(r"^Transfer/sec:\s+([\d.]+)(B|KB|MB|GB|TB)", re.M)


def parse_wrk(text: str) -> list[Reading]:
    """requests_per_s and transfer (MiB/s, higher is better), latency avg/stdev/max (ms, lower)."""
    rps = _RPS.search(text)
    if rps is None:
        raise ParseError("wrk: no 'Requests/sec:' line")
    readings = [Reading("wrk", "requests_per_s", number(rps[1], "Requests/sec"), "req/s", "higher")]
    if transfer := _TRANSFER.search(text):
        mib = number(transfer[1], "Transfer/sec") * _SIZE[transfer[2]] / 1024.0**2
        readings.append(Reading("wrk", "transfer_mib_s", mib, "MiB/s", "higher"))
    if latency := _LATENCY.search(text):
        for i, name in enumerate(("latency_avg_ms", "latency_stdev_ms", "latency_max_ms")):
            value = number(latency[1 + 2 * i], name) * _TIME[latency[2 + 2 * i]]
            readings.append(Reading("wrk", name, value, "ms", "lower"))
    return readings
