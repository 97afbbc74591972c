"""Parsing what xl and xm print: ``list``, ``list -l`` (JSON) and ``info``.

``xl list`` (tools/xl/xl_info.c list_domains()) prints the header
``Name                                        ID   Mem VCPUs<TAB>State<TAB>Time(s)`` and rows
``"%-40s %5d %5lu %5d     %c%c%c%c%c%c  %8.1f"``; ``xm list`` pads the same columns with
spaces.  A name may be longer than 40 characters, so rows are read from the right.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

XL_HEADER = "Name                                        ID   Mem VCPUs\tState\tTime(s)"
_ROW = re.compile(r"^(?P<name>.+?)\s+(?P<id>\d+)\s+(?P<mem>\d+)\s+(?P<vcpus>\d+)\s+(?P<state>[r-][b-][p-][s-][c-][d-])"
                  r"\s+(?P<time>\d+(?:\.\d+)?)(?:\s.*)?$")
#: The state letters in column order (running, blocked, paused, shutdown, crashed, dying).
STATE_LETTERS = "rbpscd"


@dataclass(frozen=True, slots=True)
class Domain:
    name: str
    domid: int
    mem_mib: int
    vcpus: int
    state: str
    cpu_time_s: float

    @property
    def flags(self) -> set[str]:
        """The set state letters, e.g. {"b"} for an idle domain."""
        return {c for c in self.state if c != "-"}


def parse_list(text: str) -> list[Domain]:
    """Domains in ``xl list`` / ``xm list`` output; ValueError names a malformed line."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("Name") or "State" not in lines[0]:
        raise ValueError(f"xl list: no header line (got {lines[0]!r})" if lines else "xl list: empty output")
    domains = []
    for number, line in enumerate(lines[1:], 2):
        match = _ROW.match(line)
        if not match:
            raise ValueError(f"xl list line {number}: cannot read {line!r}")
        domains.append(Domain(match["name"], int(match["id"]), int(match["mem"]), int(match["vcpus"]),
                              match["state"], float(match["time"])))
    return domains


def parse_long(text: str) -> list[dict]:
    """``xl list -l``: the JSON array of {"domid", "config": {"c_info", "b_info", ...}}."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"xl list -l: not JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) and "domid" in d for d in data):
        raise ValueError("xl list -l: expected a JSON array of objects with a domid")
    return data


def long_name(entry: dict) -> str:
    """The domain name in one ``xl list -l`` entry."""
    return entry.get("config", {}).get("c_info", {}).get("name", "")


def parse_info(text: str) -> dict[str, str]:
    """``xl info`` / ``xm info`` ``key : value`` lines as a dict."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip():
            out[key.strip()] = value.strip()
    return out
