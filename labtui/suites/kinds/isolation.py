"""The isolation kind: the worker alone, then beside an attacker at each placement (study 001, Table 5.1)."""

from __future__ import annotations

from dataclasses import dataclass

from labtui.suites.key_types import Key, number
from labtui.suites.kind import Kind
from labtui.suites.model import Suite

#: Where an isolation run puts the attacker, in the order they are measured.
#: "alone" is the baseline: the worker without an attacker.
PLACEMENTS = ("alone", "same-thread", "sibling-thread", "other-core", "all-other-cores")


@dataclass(frozen=True, slots=True)
class Isolation:
    """An isolation run: the placements measured, and the wait after starting attackers."""

    placements: tuple[str, ...] = PLACEMENTS
    settle_s: float = 0.5


KEYS = {
    "placements": Key(
        "a non-empty list of distinct placements starting with 'alone', from: " + ", ".join(PLACEMENTS),
        lambda v: isinstance(v, list)
        and bool(v)
        and v[0] == "alone"
        and len(set(map(str, v))) == len(v)
        and all(isinstance(p, str) and p in PLACEMENTS for p in v),
        tuple,
        PLACEMENTS,
    ),
    "settle_s": number(0.0, 600.0, 0.5),
}


def _steps(suite: Suite) -> int:
    return len(suite.table(Isolation).placements)


KIND = Kind(
    name="isolation",
    description="the worker alone, then beside an attacker at each placement",
    run="labtui.engine.isolation:run_isolation",
    plan="labtui.engine.isolation:plan_steps",
    tables={"isolation": (Isolation, KEYS)},
    shares=("attacker",),
    needs=("worker", "attacker"),
    serves_load=True,
    steps=_steps,
    backend_check="labtui.engine.isolation:check_isolation",
    charts="labtui.report.isolation:isolation_charts",
)
