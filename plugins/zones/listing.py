"""Parsing ``zoneadm list -p`` and the per-zone memory kstats; the zone state machine.

``zoneadm list -p`` prints one line per zone (illumos usr/src/cmd/zoneadm/zoneadm.c
zone_print()): ``zoneid:zonename:state:zonepath:uuid:brand:ip-type``, with ``-`` as the id
of a zone that is not ready or running and every ``:`` of the zonepath written ``\\:``.
Some releases append fields (e.g. a debug id); they are kept but not interpreted.
"""

from __future__ import annotations

from dataclasses import dataclass

from labtui.backends.kit import BackendError, parse_kstat

#: zone_state_t order (usr/src/head/libzonecfg.h): a zone moves up by install/ready/boot, down by halt/uninstall.
STATES = ("configured", "incomplete", "installed", "ready", "running", "shutting_down", "down", "mounted")
#: States in which the zone has an id and must be halted before uninstall.
ACTIVE = frozenset({"ready", "running", "shutting_down", "down", "mounted"})


@dataclass(frozen=True, slots=True)
class ZoneEntry:
    zoneid: int | None
    name: str
    state: str
    zonepath: str
    uuid: str
    brand: str
    ip_type: str
    extra: tuple[str, ...] = ()


def split_fields(line: str) -> list[str]:
    """Split on ':' except the escaped '\\:' zoneadm writes inside a zonepath."""
    fields, current, i = [], [], 0
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line) and line[i + 1] == ":":
            current.append(":")
            i += 2
            continue
        if line[i] == ":":
            fields.append("".join(current))
            current = []
        else:
            current.append(line[i])
        i += 1
    fields.append("".join(current))
    return fields


def parse_zoneadm_list(text: str) -> list[ZoneEntry]:
    """Every zone in ``zoneadm list -cp`` output; ValueError names a malformed line."""
    entries = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = split_fields(line)
        if len(fields) < 7:
            raise ValueError(f"zoneadm list -p line {number}: {len(fields)} fields, expected at least 7: {line!r}")
        zid, name, state, zonepath, uuid, brand, ip_type, *extra = fields
        if state not in STATES:
            raise ValueError(f"zoneadm list -p line {number}: unknown zone state {state!r}")
        if zid != "-" and not zid.isdigit():
            raise ValueError(f"zoneadm list -p line {number}: zone id {zid!r} is neither a number nor '-'")
        entries.append(ZoneEntry(None if zid == "-" else int(zid), name, state, zonepath, uuid, brand, ip_type,
                                 tuple(extra)))
    return entries


def rss_by_zoneid(kstat_text: str) -> dict[int, int]:
    """Resident bytes per zone id from ``kstat -p memory_cap:::rss`` (instance = zone id)."""
    found = {}
    for key, value in parse_kstat(kstat_text).items():
        module, instance, _, statistic = key.split(":")[:4]
        if module == "memory_cap" and statistic == "rss" and instance.isdigit():
            try:
                found[int(instance)] = int(value)
            except ValueError:
                raise BackendError(f"kstat memory_cap:{instance}: rss is not a number: {value!r}") from None
    return found
