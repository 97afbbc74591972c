"""The creation kind's figure: creation time of instance n against n (study 000, section 4.4.1)."""

from __future__ import annotations

import polars as pl
from matplotlib.ticker import MaxNLocator

from labtui.core.units import display_unit
from labtui.report.data import SessionData
from labtui.report.plotting import SESSION_COLORS, Chart, new_figure

#: Study 000's creation time (section 4.4.1): Tcreate(n) = Tstart(n) - Tend(n-1), as the creation kind records it.
TCREATE = ("creation", "tcreate_s")


def tcreate(session: SessionData) -> pl.DataFrame:
    """Tcreate(n) by instance number n (the step's background): mean and std over repetitions, and n."""
    benchmark, metric = TCREATE
    return (
        session.scaling()
        .filter((pl.col("benchmark") == benchmark) & (pl.col("metric") == metric))
        .select(number=pl.col("background"), mean=pl.col("mean"), std=pl.col("std").fill_null(0.0), n=pl.col("n"))
        .sort("number")
    )


def creation_charts(sessions: list[SessionData]) -> list[Chart]:
    """Creation time of instance n while n-1 run (Figures 5-1, 5-2 of the zones study): Tcreate(n) =
    Tstart(n) - Tend(n-1) of section 4.4.1, the figure `labtui run` prints as tcreate_s."""
    frames = [(s, tcreate(s)) for s in sessions if s.kind == "creation"]
    frames = [(s, f) for s, f in frames if not f.is_empty()]
    if not frames:
        return []
    title = "creation time Tcreate(n) = Tstart(n) - Tend(n-1) against instance number (lower is better)"
    fig, (ax,) = new_figure(title)
    shown, factor = display_unit("s")
    for i, (session, stats) in enumerate(frames):
        x = stats["number"].to_numpy()
        color = SESSION_COLORS[i % len(SESSION_COLORS)]
        label = session.label if len(frames) > 1 else "mean ± 1 std over repetitions"
        ax.plot(x, stats["mean"].to_numpy() / factor, "o-", markersize=3, color=color, label=label)
        low, high = (stats["mean"] - stats["std"]) / factor, (stats["mean"] + stats["std"]) / factor
        ax.fill_between(x, low.to_numpy(), high.to_numpy(), color=color, alpha=0.18)
    ax.set_title("study 000 §4.4.1: from the end of the benchmark after instance n-1 to the start of the one "
                 "after instance n", fontsize=9)
    ax.set_xlabel("instance number n (created while the earlier ones run)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(f"Tcreate(n) ({shown})")
    ax.set_ylim(bottom=0)
    ax.legend(loc="best", fontsize=9)
    return [Chart("creation-time", title, fig)]
