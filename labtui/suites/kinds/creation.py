"""The creation kind: create instance n while instances 1..n-1 keep running, and re-measure (study 000, 4.4.1)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from labtui.suites.key_types import Key, number
from labtui.suites.kind import Kind, KindCheck

#: Where a creation run runs its benchmark after each new instance: on the host itself
#: (the global zone, Domain-0: R_n), in the first instance (R'_n), in all of them at once (S_n).
CREATION_WHERE = ("host", "first", "all")


@dataclass(frozen=True, slots=True)
class Creation:
    """A creation run: where the benchmark runs after each new instance, and the common start of "all"."""

    where: str = "host"
    #: Seconds between arming the common start and the start itself (where = "all").
    start_delay_s: float = 1.0


KEYS = {
    "where": Key("one of: " + ", ".join(CREATION_WHERE), lambda v: v in CREATION_WHERE, default="host"),
    "start_delay_s": number(0.1, 600.0, 1.0),
}


def _check(check: KindCheck) -> None:
    """A creation run adds one instance per step from none, and runs its worker as a probe."""
    scale, worker, src = check.scale, check.worker, check.src
    assert scale is not None and worker is not None  # its `needs` demanded both tables
    if scale.start != 0:
        raise src.error(("scale", "start"), f"a creation suite starts from no instances: expected 0, got {scale.start}")
    if scale.per_step != 1:
        raise src.error(("scale", "per_step"),
                        f"a creation suite creates one instance per step: expected 1, got {scale.per_step}")
    for key in ("image", "tool"):
        if getattr(worker, key) is not None:
            raise src.error(("worker", key), "a creation suite runs its worker as a probe on the host "
                                             f"or in instances: give program, not {key}")


def _axis(config: Mapping[str, Any]) -> str:
    """Where the benchmark runs in every instance at once, the x axis counts concurrent instances."""
    where = (config.get("creation") or {}).get("where")
    return "concurrent instances n" if where == "all" else "background instances"


KIND = Kind(
    name="creation",
    description="create instance n while instances 1..n-1 keep running, and re-measure",
    run="labtui.engine.creation:run_creation",
    plan="labtui.engine.creation:plan_steps",
    tables={"creation": (Creation, KEYS)},
    shares=("scale", "background"),
    needs=("scale", "background", "worker"),
    check=_check,
    axis=_axis,
    backend_check="labtui.engine.creation:check_creation",
    charts="labtui.report.creation:creation_charts",
)
