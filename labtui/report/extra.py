"""Zone creation time against zone number, and achieved against requested CPU share."""

from __future__ import annotations

from typing import cast

import polars as pl
from matplotlib.ticker import MaxNLocator

from labtui.report.data import SessionData
from labtui.report.plotting import SESSION_COLORS, Chart, new_figure
from labtui.report.units import display_unit


def creation_charts(sessions: list[SessionData]) -> list[Chart]:
    """Creation time of instance n while n-1 run (Fig 5-1 of the zones study)."""
    usable = [s for s in sessions if not s.creation.is_empty()]
    if not usable:
        return []
    title = "creation time against instance number (lower is better)"
    fig, (ax,) = new_figure(title)
    shown, factor = display_unit("s", [v for s in usable for v in s.creation["boot_s"].to_list()])
    for i, session in enumerate(usable):
        stats = (
            session.creation.group_by("number")
            .agg(mean=pl.col("boot_s").mean(), std=pl.col("boot_s").std().fill_null(0.0))
            .sort("number")
        )
        x = stats["number"].to_numpy()
        color = SESSION_COLORS[i % len(SESSION_COLORS)]
        label = session.label if len(usable) > 1 else "mean ± 1 std over repetitions"
        ax.plot(x, stats["mean"].to_numpy() / factor, "o-", markersize=3, color=color, label=label)
        low, high = (stats["mean"] - stats["std"]) / factor, (stats["mean"] + stats["std"]) / factor
        ax.fill_between(x, low.to_numpy(), high.to_numpy(), color=color, alpha=0.18)
    ax.set_xlabel("instance number (created while the earlier ones run)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(f"creation time ({shown})")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best", fontsize=9)
    return [Chart("creation-time", title, fig)]


def share_charts(sessions: list[SessionData]) -> list[Chart]:
    """Achieved against requested CPU share, with the ideal diagonal."""
    usable = [s for s in sessions if not s.shares.is_empty()]
    if not usable:
        return []
    title = "achieved against requested CPU share (closer to the diagonal is better)"
    fig, (ax,) = new_figure(title)
    unit = str(usable[0].shares["unit"][0])
    top = 0.0
    for i, session in enumerate(usable):
        stats = (
            session.shares.group_by("requested_share")
            .agg(mean=pl.col("achieved_share").mean(), std=pl.col("achieved_share").std().fill_null(0.0))
            .sort("requested_share")
        )
        x = stats["requested_share"].to_numpy()
        color = SESSION_COLORS[i % len(SESSION_COLORS)]
        label = session.label if len(usable) > 1 else "achieved (mean ± 1 std)"
        ax.errorbar(x, stats["mean"].to_numpy(), yerr=stats["std"].to_numpy(), fmt="o", capsize=4, color=color, label=label)
        top = max(top, float(x.max()), float(cast(float, (stats["mean"] + stats["std"]).max())))
    ax.plot([0, top * 1.05], [0, top * 1.05], "--", color="#555555", linewidth=0.8, label="requested = achieved")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, top * 1.05)
    ax.set_xlabel(f"requested CPU share ({unit})")
    ax.set_ylabel(f"achieved CPU share ({unit})")
    ax.legend(loc="upper left", fontsize=9)
    return [Chart("cpu-share", title, fig)]
