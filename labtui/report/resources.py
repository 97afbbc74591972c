"""Host resources beside the curve they explain (study 001, Figures 4.2, 4.5, 4.7, 4.9).

Study 001 draws, for each platform, one panel "System Resource Availability (normalized)": the benchmark's
figure normalized to its first run (e.g. "Docker boot time (normalized)") and the CPU, RAM and swap availability
as fractions of the host's total, all on one axis against the number of background instances (§4.2.1, §4.3.1,
§4.3.2, §4.4).  Here each metric figure gets one such panel per session, on the x axis of its metric panels.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from labtui.report.data import SessionData

#: What the study draws beside its curve, in its order: (legend name, column of SessionData.resources).
AVAILABILITY = (("swap", "swap"), ("RAM", "mem"), ("CPU", "cpu"))
RESOURCE_COLOR = {"CPU": "#1f77b4", "RAM": "#2ca02c", "swap": "#ff7f0e"}
#: The explained curve's colour, apart from the three availabilities.
CURVE_COLOR = "#222222"
_STYLES = ("-", "--", ":", "-.")


def has_resources(session: SessionData) -> bool:
    """True when the session sampled the host at two or more background counts and is no isolation run."""
    return session.resources["background"].n_unique() > 1 and session.isolation().is_empty()


def availability(session: SessionData) -> list[tuple[str, str, pl.DataFrame]]:
    """(resource name, host, frame of background, mean, std) for every availability the session sampled, in
    fractions of the host's total (0 to 1), sorted by background; a resource never sampled (no swap) is left out."""
    found = []
    by_host = session.resources.sort("background").group_by("host", maintain_order=True)
    for (host,), frame in by_host:
        for name, column in AVAILABILITY:
            if frame[column].null_count() == len(frame):
                continue
            # a step whose only sample came first (no CPU reading before it to diff against) has no mean: no point
            found.append((name, str(host), frame.filter(pl.col(column).is_not_null()).select(
                "background", mean=pl.col(column), std=pl.col(f"{column}_std").fill_null(0.0))))
    return found


def draw_resources(ax: Any, session: SessionData, metric: str, curve: pl.DataFrame) -> None:
    """One session's panel: `curve` (background, normalized) of `metric` and the host's availabilities."""
    ax.plot(curve["background"].to_numpy(), curve["normalized"].to_numpy(), "o-", color=CURVE_COLOR, markersize=3,
            linewidth=1.6, label=f"{metric} (normalized)")
    hosts = list(dict.fromkeys(host for _, host, _ in availability(session)))
    for name, host, frame in availability(session):
        x, mean, std = (frame[c].to_numpy() for c in ("background", "mean", "std"))
        label = f"{name} availability" + (f" · {host}" if len(hosts) > 1 else "")
        color = RESOURCE_COLOR[name]
        ax.plot(x, mean, _STYLES[hosts.index(host) % len(_STYLES)], marker=".", markersize=3, color=color, label=label)
        ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.12)
    no_swap = session.resources["swap"].null_count() == len(session.resources)
    ax.set_title(f"{session.label}: system resource availability (normalized)"
                 + ("\nthe host has no swap" if no_swap else ""), fontsize=10)
    ax.set_ylabel("availability (fraction of host); curve / first step")
    top = max(1.0, float(curve["normalized"].max() or 0.0))  # type: ignore[arg-type]
    ax.set_ylim(0, top * 1.1)
