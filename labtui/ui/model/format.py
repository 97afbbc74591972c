"""Small pure formatters for the console: availability shares, table cells, sparklines (sizes and ages are
``labtui.core.units``'s, as every face writes them)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence

from rich.text import Text

from labtui.core.units import MISSING

_BLOCKS = "▁▂▃▄▅▆▇█"


def pct(share: float | None) -> str:
    """A share in [0, 1] as a percentage, MISSING when unknown."""
    if share is None or math.isnan(share):
        return MISSING
    return f"{share * 100:.0f}%"


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
