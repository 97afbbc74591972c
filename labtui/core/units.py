"""Display units: the one place that decides how a figure and a missing value are shown.

The store keeps each figure in the unit its reading gave (seconds, bytes, or a tool's own
unit such as "us" or "ms"); every view (the run table, `labtui compare`, the report and
the console) shows a figure in `display_unit(unit)` with `number`'s precision, so one
session's boot time reads the same everywhere.  The choice depends on the stored unit
alone, never on the values, so two tables of one figure cannot disagree.  Machine output
(JSON, CSV, `labtui sql`, the `slowdown` view) keeps the stored unit, named in its
`unit` column.
"""

from __future__ import annotations

import math
import time

#: How any view shows a value that is not there (NULL, None, NaN).
MISSING = "-"
#: Stored unit -> (shown unit, stored units per shown unit: divide a stored value by it).
_SHOWN = {
    "s": ("ms", 1e-3),
    "sec": ("ms", 1e-3),
    "ms": ("ms", 1.0),
    "us": ("µs", 1.0),
    "µs": ("µs", 1.0),
    "ns": ("ns", 1.0),
    "bytes": ("MiB", 2.0**20),
    "B": ("MiB", 2.0**20),
}
#: Significant digits of a shown number; from 10**DIGITS on, whole numbers.
DIGITS = 4


def is_missing(value: object) -> bool:
    """None or NaN: a value a view shows as MISSING."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def display_unit(unit: str | None) -> tuple[str, float]:
    """The unit a figure stored in `unit` is shown in, and the factor to divide its values by."""
    return _SHOWN.get(unit or "", (unit or "", 1.0))


def scaled(value: float | None, unit: str | None) -> float | None:
    """A stored value in its display unit (None stays None)."""
    return None if value is None else value / display_unit(unit)[1]


def shown(value: float | None) -> str:
    """A number already in its display unit: DIGITS significant digits (trailing zeros kept, so a column
    reads at one precision), whole numbers with thousands separators from 10**DIGITS on."""
    if value is None or math.isnan(value):
        return MISSING
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if abs(value) >= 10**DIGITS:
        return f"{value:,.0f}"
    return f"{value:#.{DIGITS}g}".rstrip(".")


def number(value: float | None, unit: str | None) -> str:
    """A stored value as a table cell in its display unit, without the unit (named once in the header)."""
    return shown(scaled(value, unit))


def quantity(value: float | None, unit: str | None) -> str:
    """A stored value with its display unit, for a sentence or a single cell: "1.315 ms"."""
    if is_missing(value):
        return MISSING
    shown = display_unit(unit)[0]
    return f"{number(value, unit)} {shown}".strip()


def signed_pct(value: float | None, suffix: str = "") -> str:
    """A percentage (already times 100) with its sign and one decimal: "+12.3", "+12.3%" with suffix "%"."""
    return MISSING if is_missing(value) else f"{value:+.1f}{suffix}"


def share_pct(share: float | None) -> str:
    """A share (0.123) as a percentage with one decimal: "12.3%"; a coefficient of variation."""
    return MISSING if is_missing(share) else f"{share:.1%}"


def interval(low: float | None, high: float | None, unit: str | None, *, with_unit: bool = False) -> str:
    """A 95% interval in its display unit: "1.200 – 1.500", or "1.200 – 1.500 ms" `with_unit` (a cell that names
    no unit in its header); MISSING without both bounds.  Every face writes an interval so."""
    if is_missing(low) or is_missing(high):
        return MISSING
    text = f"{number(low, unit)} – {number(high, unit)}"
    shown_unit = display_unit(unit)[0]
    return f"{text} {shown_unit}" if with_unit and shown_unit else text


def size(n: float | None) -> str:
    """Bytes in binary units (KiB, MiB, GiB), MISSING when unknown."""
    if n is None:
        return MISSING
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def age(created_at: float | None, now: float | None = None) -> str:
    """How long ago an epoch time was: 42s, 3m05s, 2h07m, 3d04h."""
    if not created_at:
        return MISSING
    seconds = max(0, int((now if now is not None else time.time()) - created_at))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d{seconds % 86400 // 3600:02d}h"
