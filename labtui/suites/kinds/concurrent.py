"""The concurrent kind: the same benchmark in n instances at once, one step per count (study 000's S_n)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labtui.suites.key_types import Key, is_int, number
from labtui.suites.kind import Kind
from labtui.suites.model import Suite


@dataclass(frozen=True, slots=True)
class Concurrent:
    """A concurrent run: how many workers run the benchmark at once, one step per count."""

    instances: tuple[int, ...] = (1, 2, 4, 8)
    #: Seconds between creating the workers and their common start.
    start_delay_s: float = 1.0


KEYS = {
    "instances": Key(
        "a non-empty list of distinct integers >= 1",
        lambda v: isinstance(v, list) and bool(v) and all(is_int(n) and n >= 1 for n in v) and len(set(v)) == len(v),
        tuple,
        (1, 2, 4, 8),
    ),
    "start_delay_s": number(0.1, 60.0, 1.0),
}


def _steps(suite: Suite) -> int:
    return len(suite.table(Concurrent).instances)


def _most_instances(suite: Suite) -> int:
    return max(suite.table(Concurrent).instances)


def _axis(config: Mapping[str, Any]) -> str:
    return "concurrent instances n"


KIND = Kind(
    name="concurrent",
    description="the same benchmark in n instances at once",
    run="labtui.engine.concurrent:run_concurrent",
    plan="labtui.engine.concurrent:plan_steps",
    tables={"concurrent": (Concurrent, KEYS)},
    needs=("worker",),
    steps=_steps,
    most_instances=_most_instances,
    axis=_axis,
)
