"""The suite file's schema: every table, every key, what each accepts, its default and its limits.

The common tables are here; each kind's own tables come from its module (``labtui.suites.kinds``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from labtui.parsers.registry import WORKER_OUTPUTS
from labtui.suites.key_types import (
    FLAG,
    MAX_PER_STEP,
    MAX_REPETITIONS,
    MAX_STEPS,
    PROGRAM_KEYS,
    REQUIRED,
    Key,
    integer,
    is_int,
    number,
    one_of,
    text,
)
from labtui.suites.kinds import all_kinds
from labtui.suites.model import LOAD_TOOLS, SUITE_NAME_PATTERN, WORKER_MEASURES

__all__ = ["REQUIRED", "REQUIRED_TABLES", "SCHEMA", "Key", "suite_keys"]

SCHEMA: dict[str, Mapping[str, Key]] = {
    "suite": {
        "name": text(
            "a name of a-z, 0-9, '.', '_', '-' starting with a letter or digit",
            re.compile(SUITE_NAME_PATTERN).fullmatch,
        ),
        "description": text(default=""),
        "reproduces": text(default=""),
        "kind": text(),
        "repetitions": integer(1, 1, MAX_REPETITIONS),
        "operation_timeout_s": number(1.0, 86400.0, 120.0),
        "backend": text("a backend name such as process or docker",
                         re.compile(r"[a-z][a-z0-9_-]{0,31}").fullmatch, default=None),
    },
    "scale": {"start": integer(0, 0, MAX_STEPS * MAX_PER_STEP), "steps": integer(1, maximum=MAX_STEPS),
              "per_step": integer(1, maximum=MAX_PER_STEP)},
    "worker": {**PROGRAM_KEYS, "measure": one_of(WORKER_MEASURES),
               "output": Key("one of: " + ", ".join(WORKER_OUTPUTS), lambda v: v in WORKER_OUTPUTS, default="probe"),
               "runs": integer(1, 1), "warmup": integer(0, 1),
               "max_runs": integer(1, None), "target_cv": number(0.001, 1.0, None)},
    "background": PROGRAM_KEYS,
    "attacker": PROGRAM_KEYS,
    "measure": {"memory": FLAG},
    "load": {
        "tool": one_of(LOAD_TOOLS),
        "port": Key("an integer from 1 to 65535", lambda v: is_int(v) and 1 <= v <= 65535, default=80),
        "connections": integer(1, 30),
        "threads": integer(1, 14),
        "duration_s": integer(1, 20),
        "requests": integer(1, 100000),
        "pipeline": integer(1, 16),
        "tests": Key(
            "a list of redis-benchmark test names (letters, digits, '_')",
            lambda v: isinstance(v, list) and all(isinstance(t, str) and re.fullmatch(r"[A-Za-z0-9_]+", t) for t in v),
            tuple,
            (),
        ),
        "ready_timeout_s": number(1.0, 600.0, 30.0),
        "timeout_s": number(1.0, 86400.0, 900.0),
    },
    "backend": {"runtime": text("a runtime name such as runc or runsc (letters, digits, '.', '_', '-')",
                                 re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}").fullmatch, None)},
    "sampling": {"interval_s": number(0.1, 60.0, 1.0), "settle_s": number(0.0, default=0.0),
                 "quiet_timeout_s": number(0.0, 600.0, 10.0)},
}
SCHEMA.update({table: keys for kind in all_kinds().values() for table, (_, keys) in kind.tables.items()})
REQUIRED_TABLES = ("suite",)


def suite_keys() -> list[str]:
    """Every dotted key a --set or a profile may change, e.g. "scale.steps"."""
    return [f"{table}.{name}" for table, keys in SCHEMA.items() for name in keys]
