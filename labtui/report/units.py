"""Display units: scale a metric's values to a readable unit and format numbers."""

from __future__ import annotations

from collections.abc import Iterable

_TIME = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
_BYTES = (("GiB", 2.0**30), ("MiB", 2.0**20), ("KiB", 2.0**10), ("bytes", 1.0))


def display_unit(unit: str, values: Iterable[float | None]) -> tuple[str, float]:
    """The unit to show `values` (in `unit`) in and the factor to divide them by."""
    peak = max((abs(v) for v in values if v is not None), default=0.0)
    if unit == "s":
        choices = _TIME
    elif unit in ("bytes", "B"):
        choices = _BYTES
    else:
        return unit, 1.0
    for name, factor in choices:
        if peak >= factor:
            return name, factor
    return choices[-1]


def fmt(value: float | None) -> str:
    """A number as shown in the report tables: 4 significant digits, plain below 10000."""
    if value is None or value != value:
        return "–"
    if abs(value) >= 1e4:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def fmt_pct(value: float | None) -> str:
    """A percentage with its sign, one decimal."""
    if value is None or value != value:
        return "–"
    return f"{value:+.1f}"
