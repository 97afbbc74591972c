"""Zone names: libzonecfg's rules, and how labtui names its zones."""

from __future__ import annotations

import re

from labtui.backends.kit import BackendError, Labels

#: Every zone labtui creates is named PREFIX + session + "-" + instance (the attr resources hold the labels).
PREFIX = "labtui-"
#: ZONENAME_MAX is 64 with the terminating NUL (usr/src/uts/common/sys/zone.h).
MAX_LENGTH = 63
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def name_problem(name: str) -> str | None:
    """Why name cannot be a zone name (libzonecfg zonecfg_validate_zonename, zoneadm's SUNW rule), or None."""
    if name == "global":
        return "'global' is the global zone"
    if name.startswith("SUNW"):
        return "names starting with SUNW are reserved"
    if not name or len(name) > MAX_LENGTH:
        return f"must be 1 to {MAX_LENGTH} characters, not {len(name)}"
    if not _NAME.fullmatch(name):
        return "must start with a letter or digit and hold only letters, digits, '-', '_' and '.'"
    return None


def check_name(name: str) -> str:
    """name, or BackendError saying why it is not a valid zone name."""
    problem = name_problem(name)
    if problem:
        raise BackendError(f"zones backend: bad zone name {name!r}: {problem}")
    return name


def zone_name(labels: Labels) -> str:
    """The (checked) zone name for an instance's labels."""
    return check_name(f"{PREFIX}{labels.session}-{labels.instance}")
