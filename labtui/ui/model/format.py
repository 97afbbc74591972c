"""Small pure formatters for numbers, sizes, ages and table cells."""

from __future__ import annotations

import datetime as dt
import math
import time
from collections.abc import Sequence

from rich.text import Text

from labtui.core.units import MISSING

_BLOCKS = "▁▂▃▄▅▆▇█"


def pct(share: float | None) -> str:
    """A share in [0, 1] as a percentage, MISSING when unknown."""
    if share is None or math.isnan(share):
        return MISSING
    return f"{share * 100:.0f}%"


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


def cell(value: object) -> str:
    """Any SQL value as a grid cell."""
    if value is None:
        return MISSING
    if isinstance(value, float):
        return MISSING if math.isnan(value) else f"{value:.6g}"
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def plain_cell(value: object) -> Text:
    """Any SQL value as a grid cell of plain text: a DataTable reads a str cell as rich markup."""
    return Text(cell(value))


def plain(text: object) -> Text:
    """A name, path or message as plain text for a rich or Textual renderable (never markup)."""
    return Text("" if text is None else str(text))


def sparkline(values: Sequence[float | None], width: int, lo: float = 0.0, hi: float = 1.0) -> str:
    """The last `width` values as unicode blocks scaled from lo to hi; gaps are spaces."""
    tail = list(values)[-width:] if width > 0 else []
    span = hi - lo or 1.0
    out = []
    for v in tail:
        if v is None or math.isnan(v):
            out.append(" ")
            continue
        share = min(1.0, max(0.0, (v - lo) / span))
        out.append(_BLOCKS[min(len(_BLOCKS) - 1, int(share * len(_BLOCKS)))])
    return "".join(out).rjust(width)


def count_rows(shown: int, truncated: bool) -> str:
    """The grid status: '12 rows', or '500 of more than 500 rows' when capped."""
    if truncated:
        return f"{shown} of more than {shown} rows"
    return f"{shown} row" if shown == 1 else f"{shown} rows"
