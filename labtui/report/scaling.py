"""Figures of a metric against background instances (Fig 4.1, 4.4, 4.6, 4.8), and S_n against n."""

from __future__ import annotations

from typing import cast

import polars as pl
from matplotlib.ticker import MaxNLocator

from labtui.report.data import METRIC_KEY, SessionData
from labtui.report.plotting import SESSION_COLORS, Chart, better_text, new_figure, slug
from labtui.core.units import display_unit


def x_label(sessions: list[SessionData]) -> str:
    """The x axis of step-wise figures: concurrent instances or background instances."""
    if all(s.kind == "concurrent" for s in sessions):
        return "concurrent instances n"
    return "background instances"


#: Each aggregate of instances that ran at once, by its metric's suffix: what it is named and how it is computed.
#: ``_rate_sum`` comes before ``_sum``, which it ends with.
AGGREGATES = (
    ("_rate_sum", "aggregate throughput of {}", "Σ 1/t_i over the n instances"),
    ("_finish_rate", "overall performance of {}", "n / max t_i, study 004 §4.4 Fig 7"),
    ("_sum", "aggregate S_n of {}", "S_n = ΣR_i, study 000 §4.3.2.1"),
)


def aggregate_of(metric: str) -> tuple[str, str] | None:
    """The figure's name and formula when metric is an aggregate (``labtui.engine.concurrent``), else None."""
    for suffix, name, formula in AGGREGATES:
        if metric.endswith(suffix):
            return name.format(metric[: -len(suffix)]), formula
    return None


def metric_charts(sessions: list[SessionData]) -> list[Chart]:
    """One two-panel chart (absolute, normalized to the first step) per metric of the sessions."""
    frames = [s.scaling() for s in sessions]
    keys = pl.concat([f.select(METRIC_KEY) for f in frames]).unique(maintain_order=True)
    charts = []
    for key in keys.iter_rows(named=True):
        parts = [f.filter(*(pl.col(k) == v for k, v in key.items())).sort("background") for f in frames]
        if sum(len(p) for p in parts) < 2:
            continue
        charts.append(_metric_chart(sessions, key, parts))
    return charts


def _metric_chart(sessions: list[SessionData], key: dict, parts: list[pl.DataFrame]) -> Chart:
    metric, unit, better = key["metric"], key["unit"], key["better"]
    aggregate = aggregate_of(metric)
    name = aggregate[0] if aggregate else metric
    title = f"{key['benchmark']}: {name} {better_text(better)}"
    fig, (ax_abs, ax_norm) = new_figure(title, panels=2)
    shown, factor = display_unit(unit)
    for i, (session, part) in enumerate(zip(sessions, parts)):
        if part.is_empty():
            continue
        color = SESSION_COLORS[i % len(SESSION_COLORS)]
        x = part["background"].to_numpy()
        mean = part["mean"].to_numpy()
        std = part["std"].fill_null(0.0).to_numpy()
        norm = part["normalized"].to_numpy()
        norm_std = std / mean[0] if mean[0] else std * 0
        label = session.label if len(sessions) > 1 else "mean"
        band = "± 1 std" if len(sessions) == 1 else None
        ax_abs.plot(x, mean / factor, "o-", color=color, markersize=3.5, label=label)
        ax_abs.fill_between(x, (mean - std) / factor, (mean + std) / factor, color=color, alpha=0.18, label=band)
        ax_norm.plot(x, norm, "o-", color=color, markersize=3.5, label=label)
        ax_norm.fill_between(x, norm - norm_std, norm + norm_std, color=color, alpha=0.18, label=band)
    ax_norm.axhline(1.0, color="#555555", linewidth=0.8, linestyle="--")
    ax_abs.set_title(f"absolute ({aggregate[1] + ', ' if aggregate else ''}mean ± 1 std over repetitions)", fontsize=10)
    ax_norm.set_title("normalized to the first step", fontsize=10)
    ax_abs.set_ylabel(f"{metric} ({shown})")
    ax_norm.set_ylabel(f"{metric} / {metric} at first step")
    for ax in (ax_abs, ax_norm):
        ax.set_xlabel(x_label(sessions))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="best", fontsize=9)
    # polars types a Series' max as any scalar: these columns hold floats
    top = max((cast(float, (p["mean"] + p["std"].fill_null(0.0)).max()) or 0.0) for p in parts)
    ax_abs.set_ylim(0, top / factor * 1.15 or 1.0)  # headroom above the band for the legend
    return Chart(slug(key["benchmark"], metric), title, fig)


def resource_charts(sessions: list[SessionData]) -> list[Chart]:
    """CPU, RAM and swap availability against instances (Fig 4.2, 4.5, 4.7, 4.9)."""
    usable = [s for s in sessions if s.resources["background"].n_unique() > 1 and s.isolation().is_empty()]
    if not usable:
        return []
    title = f"host resources available against {x_label(usable)} (higher is better)"
    fig, (ax,) = new_figure(title)
    styles = ("-", "--", ":", "-.")
    for i, session in enumerate(usable):
        for h, (host, frame) in enumerate(session.resources.sort("background").group_by("host", maintain_order=True)):
            x = frame["background"].to_numpy()
            for name, column in (("CPU", "cpu"), ("RAM", "mem"), ("swap", "swap")):
                if frame[column].null_count() == len(frame):
                    continue
                mean = frame[column].fill_null(float("nan")).to_numpy() * 100
                std = frame[f"{column}_std"].fill_null(0.0).to_numpy() * 100
                who = [session.label] if len(usable) > 1 else []
                if session.resources["host"].n_unique() > 1:
                    who.append(str(host[0]))
                label = " · ".join([name, *who])
                color = _RESOURCE_COLOR[name]
                ax.plot(x, mean, styles[(i + h) % len(styles)], marker="o", markersize=3, color=color, label=label)
                ax.fill_between(x, mean - std, mean + std, color=color, alpha=0.12)
    no_swap = all(s.resources["swap"].null_count() == len(s.resources) for s in usable)
    ax.set_title("mean ± 1 std of the samples in each step" + ("; the host has no swap" if no_swap else ""), fontsize=10)
    ax.set_ylim(0, 105)
    ax.set_xlabel(x_label(usable))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("available (% of host)")
    fig.legend(loc="outside lower center", ncol=3 if len(usable) == 1 else 2, fontsize=9)
    return [Chart("resources", title, fig)]


_RESOURCE_COLOR = {"CPU": "#1f77b4", "RAM": "#2ca02c", "swap": "#ff7f0e"}
