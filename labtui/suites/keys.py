"""The suite file's schema: every table, every key, what each accepts, its default and its limits."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from labtui.suites.model import (
    CREATION_WHERE,
    FAIRSHARE_MEASURES,
    FAIRSHARE_METHODS,
    LOAD_TOOLS,
    PLACEMENTS,
    PROBE_NAME_PATTERN,
    SUITE_NAME_PATTERN,
    WORKER_MEASURES,
    WORKER_OUTPUTS,
)

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


def _integer(minimum: int, default: Any = REQUIRED, maximum: int = MAX_INTEGER) -> Key:
    return Key(f"an integer from {minimum} to {maximum}", lambda v: is_int(v) and minimum <= v <= maximum,
                default=default)


def _number(minimum: float, maximum: float | None = None, default: Any = REQUIRED) -> Key:
    top = MAX_NUMBER if maximum is None else maximum
    expect = f"a number from {minimum:g} to {top:g}"
    return Key(expect, lambda v: is_number(v) and minimum <= v <= top, float, default)


def printable(text: str) -> bool:
    """No NUL or other control characters (a tab or a newline is fine)."""
    return not any(ord(c) < 32 and c not in "\t\n" or ord(c) == 127 for c in text)


def _text(expect: str = "a string", valid: Callable[[str], Any] | None = None, default: Any = REQUIRED) -> Key:
    return Key(expect + " (no control characters)",
                lambda v: isinstance(v, str) and printable(v) and (valid is None or bool(valid(v))), default=default)


def _one_of(options: Sequence[str]) -> Key:
    return Key("one of: " + ", ".join(options), lambda v: v in options)


_FLAG = Key("true or false", lambda v: isinstance(v, bool), default=False)
_STRINGS = Key(
    "a list of strings (no control characters)",
    lambda v: isinstance(v, list) and all(isinstance(s, str) and printable(s) for s in v),
    tuple,
    (),
)
_PLACEMENTS = Key(
    "a non-empty list of distinct placements starting with 'alone', from: " + ", ".join(PLACEMENTS),
    lambda v: isinstance(v, list)
    and bool(v)
    and v[0] == "alone"
    and len(set(map(str, v))) == len(v)
    and all(isinstance(p, str) and p in PLACEMENTS for p in v),
    tuple,
    PLACEMENTS,
)
_COUNTS = Key(
    "a non-empty list of distinct integers >= 1",
    lambda v: isinstance(v, list) and bool(v) and all(is_int(n) and n >= 1 for n in v) and len(set(v)) == len(v),
    tuple,
    (1, 2, 4, 8),
)
_PROGRAM = {
    "program": _text(
        "a probe name (a lowercase letter, then up to 31 of a-z, 0-9, '_', '-')",
        re.compile(PROBE_NAME_PATTERN).fullmatch,
        None,
    ),
    "image": _text("a non-empty string", bool, None),
    "args": _STRINGS,
    "tool": _text("an absolute path of an executable on the host", lambda v: v.startswith("/") and len(v) > 1, None),
}
SCHEMA: dict[str, dict[str, Key]] = {
    "suite": {
        "name": _text(
            "a name of a-z, 0-9, '.', '_', '-' starting with a letter or digit",
            re.compile(SUITE_NAME_PATTERN).fullmatch,
        ),
        "description": _text(default=""),
        "reproduces": _text(default=""),
        "kind": _text(),
        "repetitions": _integer(1, 1, MAX_REPETITIONS),
        "operation_timeout_s": _number(1.0, 86400.0, 120.0),
        "backend": _text("a backend name such as process or docker",
                         re.compile(r"[a-z][a-z0-9_-]{0,31}").fullmatch, default=None),
    },
    "scale": {"start": _integer(0, 0, MAX_STEPS * MAX_PER_STEP), "steps": _integer(1, maximum=MAX_STEPS),
              "per_step": _integer(1, maximum=MAX_PER_STEP)},
    "worker": {**_PROGRAM, "measure": _one_of(WORKER_MEASURES),
               "output": Key("one of: " + ", ".join(WORKER_OUTPUTS), lambda v: v in WORKER_OUTPUTS, default="probe"),
               "runs": _integer(1, 1), "warmup": _integer(0, 1),
               "max_runs": _integer(1, None), "target_cv": _number(0.001, 1.0, None)},
    "background": _PROGRAM,
    "attacker": _PROGRAM,
    "isolation": {"placements": _PLACEMENTS, "settle_s": _number(0.0, 600.0, 0.5)},
    "concurrent": {"instances": _COUNTS, "start_delay_s": _number(0.1, 60.0, 1.0)},
    "creation": {
        "where": Key("one of: " + ", ".join(CREATION_WHERE), lambda v: v in CREATION_WHERE, default="host"),
        "start_delay_s": _number(0.1, 600.0, 1.0),
    },
    "fairshare": {
        "instances": _integer(2, 8),
        "reserved_share": Key("a number between 0 and 1 (exclusive)", lambda v: is_number(v) and 0 < v < 1, float, 0.25),
        "methods": Key(
            "a list of distinct methods from: " + ", ".join(FAIRSHARE_METHODS),
            lambda v: isinstance(v, list) and len(set(map(str, v))) == len(v) and all(m in FAIRSHARE_METHODS for m in v),
            tuple,
            FAIRSHARE_METHODS,
        ),
        "duration_s": _number(0.5, 86400.0, 60.0),
        "cpus": _text('a CPU list such as "0", "0-3" or "0,2-3"', is_cpu_list, None),
        "measure": Key("one of: " + ", ".join(FAIRSHARE_MEASURES), lambda v: v in FAIRSHARE_MEASURES, default="output"),
        "program": _PROGRAM["program"],
        "image": _PROGRAM["image"],
        "start_delay_s": _number(0.1, 60.0, 1.0),
    },
    "measure": {"memory": _FLAG},
    "load": {
        "tool": _one_of(LOAD_TOOLS),
        "port": Key("an integer from 1 to 65535", lambda v: is_int(v) and 1 <= v <= 65535, default=80),
        "connections": _integer(1, 30),
        "threads": _integer(1, 14),
        "duration_s": _integer(1, 20),
        "requests": _integer(1, 100000),
        "pipeline": _integer(1, 16),
        "tests": Key(
            "a list of redis-benchmark test names (letters, digits, '_')",
            lambda v: isinstance(v, list) and all(isinstance(t, str) and re.fullmatch(r"[A-Za-z0-9_]+", t) for t in v),
            tuple,
            (),
        ),
        "ready_timeout_s": _number(1.0, 600.0, 30.0),
        "timeout_s": _number(1.0, 86400.0, 900.0),
    },
    "backend": {"runtime": _text("a runtime name such as runc or runsc (letters, digits, '.', '_', '-')",
                                 re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}").fullmatch, None)},
    "sampling": {"interval_s": _number(0.1, 60.0, 1.0), "settle_s": _number(0.0, default=0.0),
                 "quiet_timeout_s": _number(0.0, 600.0, 10.0)},
}
REQUIRED_TABLES = ("suite",)
#: Tables that only some kinds read; giving them to another kind is an error.
KIND_TABLES = {"scale": ("scaling", "creation"), "background": ("scaling", "creation"), "attacker": ("isolation",),
                "isolation": ("isolation",), "concurrent": ("concurrent",), "creation": ("creation",),
                "fairshare": ("fairshare",)}


def suite_keys() -> list[str]:
    """Every dotted key a --set or a profile may change, e.g. "scale.steps"."""
    return [f"{table}.{name}" for table, keys in SCHEMA.items() for name in keys]
