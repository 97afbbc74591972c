"""What a suite key accepts: the Key record and its makers, for the common tables and every kind's own."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from labtui.suites.model import PROBE_NAME_PATTERN

REQUIRED = object()


@dataclass(frozen=True, slots=True)
class Key:
    """One key of a table: what it accepts, how the value is stored, its default."""

    expect: str
    accepts: Callable[[Any], bool]
    convert: Callable[[Any], Any] = lambda value: value
    default: Any = REQUIRED


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


def is_cpu_list(text: str) -> bool:
    """Whether text is a CPU list such as "0", "0-3" or "0,2-3" (ranges ascending)."""
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text):
        return False
    ranges = [part.split("-") for part in text.split(",")]
    return all(int(r[0]) <= int(r[-1]) for r in ranges)


#: The largest integer a suite key takes unless it names its own maximum.
MAX_INTEGER = 1_000_000_000
#: Steps, instances per step and repetitions beyond these are typos, not plans (a plan lists every step).
MAX_STEPS, MAX_PER_STEP, MAX_REPETITIONS = 100_000, 100_000, 10_000
#: The largest number any suite key takes when the key names no maximum of its own (a year of seconds).
MAX_NUMBER = 31_536_000.0


def integer(minimum: int, default: Any = REQUIRED, maximum: int = MAX_INTEGER) -> Key:
    return Key(f"an integer from {minimum} to {maximum}", lambda v: is_int(v) and minimum <= v <= maximum,
                default=default)


def number(minimum: float, maximum: float | None = None, default: Any = REQUIRED) -> Key:
    top = MAX_NUMBER if maximum is None else maximum
    expect = f"a number from {minimum:g} to {top:g}"
    return Key(expect, lambda v: is_number(v) and minimum <= v <= top, float, default)


def printable(text: str) -> bool:
    """No NUL or other control characters (a tab or a newline is fine)."""
    return not any(ord(c) < 32 and c not in "\t\n" or ord(c) == 127 for c in text)


def text(expect: str = "a string", valid: Callable[[str], Any] | None = None, default: Any = REQUIRED) -> Key:
    return Key(expect + " (no control characters)",
                lambda v: isinstance(v, str) and printable(v) and (valid is None or bool(valid(v))), default=default)


def one_of(options: Sequence[str]) -> Key:
    return Key("one of: " + ", ".join(options), lambda v: v in options)


FLAG = Key("true or false", lambda v: isinstance(v, bool), default=False)
STRINGS = Key(
    "a list of strings (no control characters)",
    lambda v: isinstance(v, list) and all(isinstance(s, str) and printable(s) for s in v),
    tuple,
    (),
)
#: The keys of a table that names what an instance runs (worker, background, attacker, a kind's own program).
PROGRAM_KEYS = {
    "program": text(
        "a probe name (a lowercase letter, then up to 31 of a-z, 0-9, '_', '-')",
        re.compile(PROBE_NAME_PATTERN).fullmatch,
        None,
    ),
    "image": text("a non-empty string", bool, None),
    "args": STRINGS,
    "tool": text("an absolute path of an executable on the host", lambda v: v.startswith("/") and len(v) > 1, None),
}
