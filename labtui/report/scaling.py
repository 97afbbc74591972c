"""Figures of a metric against background instances (study 001 Fig 4.1, 4.4, 4.6, 4.8) with the host's resources
beside them (Fig 4.2, 4.5, 4.7, 4.9), and S_n against n (study 000 §4.3.2.1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import polars as pl
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from labtui.core.units import display_unit
from labtui.figures import METRIC_KEY
from labtui.report.data import SessionData
from labtui.report.plotting import SESSION_COLORS, Chart, better_text, new_figure, slug
from labtui.report.resources import draw_resources, has_resources
from labtui.suites.kind import background_axis
from labtui.suites.kinds import all_kinds

#: The x axis of a figure against a growing background.
BACKGROUND_AXIS = background_axis({})


def x_label(sessions: list[SessionData]) -> str:
    """The x axis of step-wise figures, as the sessions' kinds name it (``Kind.axis``: concurrent instances for
    concurrent runs and creation runs that run the benchmark in every instance); background instances when the
    sessions' kinds disagree or one is unknown."""
    kinds = all_kinds()
    labels = {kinds[s.kind].axis(s.config) if s.kind in kinds else BACKGROUND_AXIS for s in sessions}
    return labels.pop() if len(labels) == 1 else BACKGROUND_AXIS


@dataclass(frozen=True)
class AggregateLabel:
    """How a figure names an aggregate of instances that ran at once, and the formula it really computes."""

    #: The metric's suffix (``labtui.core.stats.aggregate.aggregate_metric``, ``labtui.engine.concurrent``).
    suffix: str
    #: What the aggregate is, of the per-instance metric {m}.
    name: str
    #: Its formula over the n instances' readings of {m}, and where the study defines it.
    formula: str


#: Study 000 defines S_n = Σ_{i=1..n} R_in, R_in the result of the benchmark (AIM9: a rate) in the i-th of n
#: concurrent zones (§4.3.2.1), and D_n = S_n / R_11 (§5.2.2).  A rate is summed as it is; a time t of one unit of
#: work is summed as the rate it implies, R_in = 1/t_in per second; study 004's overall performance is n / max t_in.
#: ``_rate_sum`` comes before ``_sum``, which it ends with.
AGGREGATES = (
    AggregateLabel("_rate_sum", "S_n of 1/{m}",
                   "S_n = Σ 1/t_in per second, t_in = {m} of instance i\n(study 000 §4.3.2.1's S_n = Σ R_in, "
                   "R_in = 1/t_in)"),
    AggregateLabel("_finish_rate", "overall performance of {m}",
                   "n / max t_in per second, t_in = {m} of instance i\n(study 004 §4.4, Fig 7)"),
    AggregateLabel("_sum", "S_n of {m}", "S_n = Σ R_in, R_in = {m} of instance i\n(study 000 §4.3.2.1)"),
)


def aggregate_of(metric: str) -> tuple[str, str] | None:
    """The figure's name and formula when metric is an aggregate (``labtui.engine.concurrent``), else None."""
    for label in AGGREGATES:
        if metric.endswith(label.suffix):
            of = metric[: -len(label.suffix)]
            return label.name.format(m=of), label.formula.format(m=of)
    return None


def normalized_title(metric: str, from_one: bool) -> str:
    """The normalized panel's title: study 000's D_n = S_n / R_11 (§5.2.2) for S_n whose every curve starts at n = 1,
    else the first step."""
    if from_one and not metric.endswith("_finish_rate") and aggregate_of(metric):
        return "D_n = S_n / R_11, normalized to n = 1 (study 000 §5.2.2)"
    return "normalized to the first step"


def metric_charts(sessions: list[SessionData]) -> list[Chart]:
    """One chart per metric of the sessions: absolute and normalized to the first step, and below them, for each
    session that sampled the host, its resource availability beside the normalized curve (study 001, Fig 4.2)."""
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
    beside = [(s, p) for s, p in zip(sessions, parts) if not p.is_empty() and has_resources(s)]
    fig, ax_abs, ax_norm, ax_res = _layout(title, len(beside))
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
    how = "mean ± 1 std over repetitions"
    ax_abs.set_title(f"{aggregate[1]}\n{how}" if aggregate else f"absolute ({how})", fontsize=10)
    firsts = {int(p["background"][0]) for p in parts if not p.is_empty()}
    ax_norm.set_title(normalized_title(metric, firsts == {1}), fontsize=10)
    ax_abs.set_ylabel(f"{metric} ({shown})")
    ax_norm.set_ylabel(f"{metric} / {metric} at first step")
    for ax, (session, part) in zip(ax_res, beside):
        draw_resources(ax, session, metric, part)
    for ax in (ax_abs, ax_norm, *ax_res):
        ax.set_xlabel(x_label(sessions))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(loc="best", fontsize=8 if ax in ax_res else 9)
    # polars types a Series' max as any scalar: these columns hold floats
    top = max((cast(float, (p["mean"] + p["std"].fill_null(0.0)).max()) or 0.0) for p in parts)
    ax_abs.set_ylim(0, top / factor * 1.15 or 1.0)  # headroom above the band for the legend
    return Chart(slug(key["benchmark"], metric), title, fig)


def _layout(title: str, beside: int) -> tuple[Figure, Any, Any, list[Any]]:
    """The figure, its absolute and normalized panels and, in a row below them, `beside` resource panels, every
    panel on one shared x axis."""
    if not beside:
        fig, (ax_abs, ax_norm) = new_figure(title, panels=2)
        return fig, ax_abs, ax_norm, []
    fig, axes = new_figure(title, panels=max(2, beside), grid=(2, 2 * beside), spans=[
        (0, slice(0, beside)), (0, slice(beside, 2 * beside)), *((1, slice(2 * i, 2 * i + 2)) for i in range(beside))])
    ax_abs, ax_norm, *ax_res = axes
    for ax in (ax_norm, *ax_res):
        ax.sharex(ax_abs)
    return fig, ax_abs, ax_norm, ax_res
