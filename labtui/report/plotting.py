"""Matplotlib plumbing: figures without pyplot (no global state, Agg canvas), saving, styling."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from matplotlib import rc_context
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

#: Names and values are data: '$...$' in a metric name is not mathtext (figures are built under this).
PLAIN_TEXT: dict[RcKeyType, Any] = {"text.parse_math": False, "text.usetex": False}
#: One colour per session in overlays (ten, so that a report of up to ten sessions tells each apart); the first is
#: used alone.
SESSION_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f",
                  "#bcbd22", "#17becf")


@dataclass
class Chart:
    """A drawn figure: a file-name slug, its title and the matplotlib figure."""

    slug: str
    title: str
    figure: Figure

    def render(self, fmt: str) -> bytes:
        """The figure encoded as PNG or SVG."""
        buf = io.BytesIO()
        with rc_context({"svg.fonttype": "none", **PLAIN_TEXT}):  # SVG text stays text: searchable, smaller
            self.figure.savefig(buf, format=fmt, dpi=110, bbox_inches="tight", metadata=_metadata(fmt))
        return buf.getvalue()


def _metadata(fmt: str) -> dict[str, Any]:
    # SVG and PNG carry a creation date by default; leave it out so reports are reproducible.
    return {"Date": None} if fmt == "svg" else {"Software": "labtui"}


def new_figure(title: str, panels: int = 1, grid: tuple[int, int] | None = None,
               spans: list[tuple[int, slice]] | None = None) -> tuple[Figure, list[Any]]:
    """A figure with a bold title, `panels` panel widths wide: `panels` axes side by side or, with `grid` (rows,
    columns), one axes per (row, columns) of `spans`."""
    rows, columns = grid or (1, panels)
    fig = Figure(figsize=(5.6 * panels + 0.6, 4.4 if rows == 1 else 3.8 * rows), layout="constrained")
    if spans is None:
        axes = [fig.add_subplot(1, panels, i + 1) for i in range(panels)]
    else:
        layout = fig.add_gridspec(rows, columns)
        axes = [fig.add_subplot(layout[row, cols]) for row, cols in spans]
    fig.suptitle(title, fontsize=12, fontweight="bold")
    for ax in axes:
        ax.grid(True, color="#dddddd", linewidth=0.7)
        ax.set_axisbelow(True)
    return fig, axes


def better_text(better: str) -> str:
    """'(lower is better)' or '(higher is better)'."""
    return f"({better} is better)" if better in ("lower", "higher") else ""


def slug(*parts: str) -> str:
    """A file-name-safe name made of parts."""
    text = "-".join(p for p in parts if p)
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
