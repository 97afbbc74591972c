"""stress-ng ``--metrics-brief`` (and ``--metrics``): bogo operations per second per stressor.

Reads the metrics rows, tagged ``info:`` by older releases and ``metrc:`` by
newer ones; ``--metrics`` adds columns after the two rates, which are ignored::

    stress-ng: metrc: [4516] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
    stress-ng: metrc: [4516]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
    stress-ng: metrc: [4516] cpu               12483     60.03    146.85      0.03       207.94          84.99

Only a whole, successful run gives figures; a ``ParseError`` names what went
wrong otherwise: a ``fail:``/``error:`` line or "unsuccessful run", stress-ng's
own complaint (``unrecognized option``), a dispatched stressor with no
complete row (output cut short), or a stressor that ran less than 95 % of the
time the run was set to (``setting to a 10 second run per stressor``).
stress-ng stopped by SIGINT or SIGTERM still says "successful run completed",
with the rate of the time it ran; so does a run ended early by a
``--<stressor>-ops`` limit, which this also refuses: either rate is over
another span than the run asked for.
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_ROW = re.compile(
    r"^stress-ng:\s+(?:info|metrc):\s*\[\d+\]\s+([a-z0-9][\w-]*)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
    r"(?:[ \t]|\n)",  # a row ends in a blank or its newline: one cut in its last number is not read
    re.M,
)
_HEADER = re.compile(r"^stress-ng:\s+(?:info|metrc):\s*\[\d+\]\s+stressor\s+bogo ops", re.M)
_FAILED = re.compile(r"^stress-ng:\s+(?:fail|error):\s*\[\d+\]\s+(.*)$", re.M)
_UNTAGGED = re.compile(r"^stress-ng: (?!\w+:\s*\[)(.*)$", re.M)
_DISPATCH = re.compile(r"^stress-ng:\s+info:\s*\[\d+\]\s+dispatching hogs: (.*)$", re.M)
_SETTING = re.compile(r"^stress-ng:\s+info:\s*\[\d+\]\s+setting to a (.*) run per stressor$", re.M)
_DURATION_PART = re.compile(r"([\d.]+)\s*(day|hour|min|sec)")
_SECONDS = {"day": 86400.0, "hour": 3600.0, "min": 60.0, "sec": 1.0}
#: A stressor's real time below this share of the set run time is a run stopped early.
_MIN_SHARE = 0.95


def parse_stress_ng(text: str) -> list[Reading]:
    """<stressor>_bogo_ops_s (per second of real time) and <stressor>_bogo_ops_s_cpu (per CPU second)."""
    if failed := _FAILED.search(text):
        raise ParseError(f"stress-ng: {failed[1]}")
    if "unsuccessful run completed" in text:
        raise ParseError("stress-ng: unsuccessful run completed")
    if complaint := _UNTAGGED.search(text):
        raise ParseError(f"stress-ng: {complaint[1]}")
    rows = _ROW.findall(text)
    if not rows and not _HEADER.search(text):
        raise ParseError("stress-ng: no metrics row ('stress-ng: metrc: [pid] <stressor> <bogo ops> ...'); "
                         "run with --metrics-brief")
    _check_whole_run(text, {stressor: number(real, f"{stressor} real time") for stressor, _o, real, *_ in rows})
    if not rows:
        raise ParseError("stress-ng: the metrics table has no complete row; the output is cut short")
    readings = []
    for stressor, _ops, _real, _usr, _sys, per_real, per_cpu in rows:
        name = stressor.replace("-", "_")
        readings.append(Reading("stress-ng", f"{name}_bogo_ops_s", number(per_real, f"{stressor} bogo ops/s"),
                                "bogo ops/s", "higher"))
        readings.append(Reading("stress-ng", f"{name}_bogo_ops_s_cpu",
                                number(per_cpu, f"{stressor} bogo ops/s (usr+sys)"), "bogo ops/s", "higher"))
    return readings


def _check_whole_run(text: str, real_s: dict[str, float]) -> None:
    """ParseError when a dispatched stressor has no complete row, or ran well short of the set time."""
    if dispatch := _DISPATCH.search(text):
        dispatched = [part.split()[-1] for part in dispatch[1].split(",") if part.strip()]
        if missing := [name for name in dispatched if name not in real_s]:
            raise ParseError(f"stress-ng: no complete metrics row for {', '.join(missing)} "
                             f"(dispatched: {dispatch[1]}); the output is cut short")
    if setting := _SETTING.search(text):
        set_s = sum(float(n) * _SECONDS[unit] for n, unit in _DURATION_PART.findall(setting[1]))
        for stressor, real in real_s.items():
            if set_s > 0 and real < _MIN_SHARE * set_s:
                raise ParseError(f"stress-ng: {stressor} ran {real:g} s of the {setting[1]} run it was set to "
                                 "(stopped by a signal, or by a bogo-ops limit); its rate is not comparable")
