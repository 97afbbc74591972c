"""wrk (HTTP load generator): requests per second, transfer rate and latency.

Reads wrk's closing summary::

      Thread Stats   Avg      Stdev     Max   +/- Stdev
        Latency    16.08ms   34.40ms 501.10ms   88.69%
    ...
      2525852 requests in 30.08s, 387.82MB read
      Socket errors: connect 0, read 233, write 0, timeout 0
      Non-2xx or 3xx responses: 2573
    Requests/sec:  83974.71
    Transfer/sec:     12.89MB

Only a clean run gives figures: wrk exits 0 and prints a rate whatever went
wrong, so a run with no request completed, any socket error (a timeout is one)
or any non-2xx/3xx response is a ``ParseError`` naming the counts, and so is a
summary cut short (its last line, ``Transfer/sec:``, incomplete or missing).
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_TIME = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}
_SIZE = {"B": 1.0, "KB": 1024.0, "MB": 1024.0**2, "GB": 1024.0**3, "TB": 1024.0**4}
_LATENCY = re.compile(r"^\s*Latency\s+([\d.]+)(us|ms|s|m|h)\s+([\d.]+)(us|ms|s|m|h)\s+([\d.]+)(us|ms|s|m|h)", re.M)
_REQUESTS = re.compile(r"^\s*(\d+) requests in \S+, \S+ read$", re.M)
_SOCKET_ERRORS = re.compile(r"^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)$", re.M)
_NON_2XX = re.compile(r"^\s*Non-2xx or 3xx responses: (\d+)$", re.M)
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)$", re.M)
_TRANSFER = re.compile(r"^Transfer/sec:\s+([\d.]+)(B|KB|MB|GB|TB)$", re.M)
_NO_CONNECT = re.compile(r"^unable to connect to .*$", re.M)


def parse_wrk(text: str) -> list[Reading]:
    """requests_per_s and transfer (MiB/s, higher is better), latency avg/stdev/max (ms, lower).

    ParseError when the run is not a clean figure (see the module docstring).
    """
    if refused := _NO_CONNECT.search(text):
        raise ParseError(f"wrk: {refused[0]}")
    requests, rps, transfer = _REQUESTS.search(text), _RPS.search(text), _TRANSFER.search(text)
    if requests is None or rps is None or transfer is None:
        missing = [label for label, found in (("'N requests in'", requests), ("'Requests/sec:'", rps),
                                              ("'Transfer/sec:'", transfer)) if found is None]
        raise ParseError(f"wrk: the summary is missing or cut short: no complete {', '.join(missing)} line")
    _check_run(int(requests[1]), text)
    readings = [Reading("wrk", "requests_per_s", number(rps[1], "Requests/sec"), "req/s", "higher")]
    mib = number(transfer[1], "Transfer/sec") * _SIZE[transfer[2]] / 1024.0**2
    readings.append(Reading("wrk", "transfer_mib_s", mib, "MiB/s", "higher"))
    if latency := _LATENCY.search(text):
        for i, name in enumerate(("latency_avg_ms", "latency_stdev_ms", "latency_max_ms")):
            value = number(latency[1 + 2 * i], name) * _TIME[latency[2 + 2 * i]]
            readings.append(Reading("wrk", name, value, "ms", "lower"))
    return readings


def _check_run(total: int, text: str) -> None:
    """ParseError naming what went wrong when no request completed, or any failed."""
    errors = _SOCKET_ERRORS.search(text)
    socket = (f"socket errors: connect {errors[1]}, read {errors[2]}, write {errors[3]}, timeout {errors[4]}"
              if errors else "")
    if total == 0:
        raise ParseError(f"wrk: no request completed ({socket or 'no socket errors'})")
    problems = []
    if (non_2xx := _NON_2XX.search(text)) and int(non_2xx[1]):
        problems.append(f"{non_2xx[1]} of {total} requests got non-2xx or 3xx responses")
    if errors and int(errors[4]):
        problems.append(f"{errors[4]} of {total} requests timed out")
    if errors and any(int(errors[i]) for i in (1, 2, 3, 4)):
        problems.append(socket)
    if problems:
        raise ParseError(f"wrk: {'; '.join(problems)}")
