"""Creation time against instance number (study 000), and achieved against requested CPU share (study 004)."""

from __future__ import annotations

import polars as pl
from matplotlib.ticker import MaxNLocator

from labtui.core.units import display_unit
from labtui.report.data import SessionData, share_points, share_unit
from labtui.report.plotting import SESSION_COLORS, Chart, new_figure

#: Study 000's creation time (section 4.4.1): Tcreate(n) = Tstart(n) - Tend(n-1), as the creation kind records it.
TCREATE = ("creation", "tcreate_s")
#: One marker per fairshare configuration, so that weight and cap stay apart where they request the same share.
_MARKERS = {"equal": "o", "weight": "s", "cap": "^"}


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


def share_charts(sessions: list[SessionData]) -> list[Chart]:
    """Achieved against requested CPU share, one series per configuration (equal, weight, cap), with the diagonal."""
    usable = [s for s in sessions if not s.shares.is_empty()]
    if not usable:
        return []
    title = "achieved against requested CPU share (closer to the diagonal is better)"
    fig, (ax,) = new_figure(title)
    top = 0.0
    for i, session in enumerate(usable):
        points = share_points(session)
        color = SESSION_COLORS[i % len(SESSION_COLORS)]
        for (configuration,), part in points.group_by("configuration", maintain_order=True):
            name = str(configuration)
            label = f"{name} · {session.label}" if len(usable) > 1 else f"{name} (mean ± 1 std)"
            ax.errorbar(part["requested"].to_numpy(), part["achieved"].to_numpy(),
                        yerr=part["achieved_std"].fill_null(0.0).to_numpy(), fmt=_MARKERS.get(name, "D"),
                        capsize=4, color=color, label=label, fillstyle="none" if name == "cap" else "full")
        top = max(top, float(points["requested"].max()),  # type: ignore[arg-type]
                  float((points["achieved"] + points["achieved_std"].fill_null(0.0)).max()))  # type: ignore[arg-type]
    ax.plot([0, top * 1.05], [0, top * 1.05], "--", color="#555555", linewidth=0.8, label="requested = achieved")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, top * 1.05)
    ax.set_title(f"study 004 §5.1, Table 3; {share_unit(usable[0])}", fontsize=9)
    ax.set_xlabel("requested CPU share (% of one CPU)")
    ax.set_ylabel("achieved CPU share (% of one CPU)")
    ax.legend(loc="upper left", fontsize=9)
    return [Chart("cpu-share", title, fig)]
