"""The studies' figure in the console: one metric against background instances, availability below.

`figure_data` shapes a slowdown frame (labtui.core.stats' one definition, through
labtui.ui.model.series) and an availability frame into plain series; `MetricChart` draws
them with textual-plot: the mean with ±1 std error bars and the baseline (the first
step, or the worker alone for an isolation run) above, CPU, RAM and swap free below.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import polars as pl
from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Grid, Vertical
from textual.widgets import Static
from textual_plot import HiResMode, NumericAxisFormatter, PlotWidget

from labtui.core.units import display_unit, shown

#: Availability lines: (frame column, label, colour).
RESOURCES = (("cpu", "CPU free", "cyan"), ("mem", "RAM free", "magenta"), ("swap", "swap free", "yellow"))
#: The availability plot's key.
AVAIL_KEY = Text.assemble("availability % ", *[part for _, label, colour in RESOURCES for part in ((f"─ {label}", colour), " ")])
#: Below this many rows the availability plot is left out, so that the metric's plot keeps the room.
AVAIL_MIN_ROWS = 16
#: The key when the session recorded no host samples.
NO_SAMPLES = Text("availability: no host samples at these levels", "dim")


@dataclass(frozen=True)
class FigureData:
    """What one chart draws: x is background instances, or 1..n placements when `placements` is set; the
    metric's values (mean, std, baseline) are in its display unit `unit` (labtui.core.units)."""

    metric: str
    unit: str
    x: list[float]
    mean: list[float]
    std: list[float]
    baseline: float
    placements: list[str] = field(default_factory=list)
    avail_x: list[float] = field(default_factory=list)
    avail: dict[str, list[float]] = field(default_factory=dict)

    def title(self) -> Text:
        """The metric plot's key: what is drawn in which colour, and the last level's change from the baseline."""
        against = "placement" if self.placements else "background instances"
        base = "alone" if self.placements else "step 0"
        change = (self.mean[-1] / self.baseline - 1) * 100 if self.baseline else math.nan
        return Text.assemble(
            (f"{self.metric} ({self.unit})", "bold"), " ", ("● mean ±1 std", "green"), " ",
            (f"─ baseline {' '.join(filter(None, (shown(self.baseline), self.unit)))} ({base})", "grey62"),
            f" · last {change:+.1f}% · by {against}",
        )


def figure_data(slow: pl.DataFrame, avail: pl.DataFrame, metric: str) -> FigureData | None:
    """The series of `metric` from a slowdown frame and an availability frame, in the metric's display unit;
    None without results."""
    if slow.is_empty() or not metric:
        return None
    one = slow.filter(pl.col("metric") == metric)
    if one.is_empty():
        return None
    placed = "placement" in one.columns and any(one["placement"].fill_null(""))
    one = one.sort("step" if placed else "background").filter(pl.col("mean").is_not_null() & pl.col("mean").is_not_nan())
    if one.is_empty():
        return None
    unit, factor = display_unit(str(one["unit"][0] or ""))
    mean = [_num(v) / factor for v in one["mean"]]
    std = [0.0 if math.isnan(s := _num(v)) else s / factor for v in one["std"]]  # one repetition: no spread to show
    if placed:
        names = [str(p or "alone") for p in one["placement"]]
        return FigureData(metric, unit, [float(i + 1) for i in range(len(names))], mean, std, mean[0], names)
    frame = avail.sort("background") if not avail.is_empty() else avail
    shares = {col: [_num(v) * 100 for v in frame[col]] for col, _, _ in RESOURCES} if not frame.is_empty() else {}
    return FigureData(metric, unit, [float(b) for b in one["background"]], mean, std, mean[0],
                      avail_x=[float(b) for b in frame["background"]] if shares else [], avail=shares)


def _num(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) else math.nan


class _Plot(PlotWidget, can_focus=False):
    """A plot that takes no focus, so its pan keys never shadow the view's, with narrow margins."""

    def __init__(self, *, id: str, bottom: int) -> None:
        super().__init__(id=id, allow_pan_and_zoom=False)
        self.set_reactive(PlotWidget.margin_top, 0)
        self.set_reactive(PlotWidget.margin_left, 8)
        self.set_reactive(PlotWidget.margin_bottom, bottom)

    @on(events.Mount)
    def _unless_closing(self, event: events.Mount) -> None:
        """Leave out PlotWidget's set-up when the console closes while the chart is being mounted: its grid is
        gone by then, and PlotWidget's query for it would end the closing console with an error."""
        if not self.query(Grid):
            event.prevent_default()

    def on_resize(self) -> None:
        """Re-measure the canvases: the plot maps data to them only on a layout refresh."""
        self.refresh(layout=True)


class MetricChart(Vertical):
    """The metric plot over the availability plot, redrawn from new frames with `draw`."""

    DEFAULT_CSS = """
    MetricChart > Static { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    MetricChart > #metric-plot { height: 3fr; min-height: 5; }
    MetricChart > #avail-plot { height: 2fr; min-height: 4; }
    """
    #: Whether the plots, the availability key and its plot have something to show (see _fit).
    _has_data: bool = False
    _avail_key: bool = True
    _avail_plot: bool = True
    #: What the last draw was asked to show, drawn on mount when it came before the plots were composed.
    _asked: tuple[pl.DataFrame, pl.DataFrame, str] | None = None

    def compose(self) -> ComposeResult:
        yield Static("no results yet", classes="chart-title", markup=False)
        yield _Plot(id="metric-plot", bottom=1)  # tick labels only: the x label is the availability plot's
        yield Static(AVAIL_KEY, classes="avail-title")
        yield _Plot(id="avail-plot", bottom=2)

    def on_mount(self) -> None:
        self.call_after_refresh(self._draw_asked)

    def _draw_asked(self) -> None:
        """Draw what was asked before the plots were composed, once they are (their own parts, the legend among
        them, compose a refresh after the plots mount: a draw before that fails on a busy machine)."""
        if self._asked is None:
            return
        if self._composed():
            self.draw(*self._asked)
        else:
            self.call_after_refresh(self._draw_asked)

    def _composed(self) -> bool:
        return bool(self.children) and all(len(plot.query("#legend")) for plot in self.query(_Plot))

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Show the plots where they have something to show, the availability's where there is room too."""
        roomy = self.size.height >= AVAIL_MIN_ROWS
        self.query_one("#metric-plot").display = self._has_data
        self.query_one(".avail-title").display = self._has_data and self._avail_key and roomy
        self.query_one("#avail-plot").display = self._has_data and self._avail_plot and roomy

    @property
    def title(self) -> Static:
        return self.query_one(".chart-title", Static)

    def draw(self, slow: pl.DataFrame, avail: pl.DataFrame, metric: str) -> None:
        """Redraw both plots for `metric`; with no results, say so and hide them (once mounted)."""
        self._asked = (slow, avail, metric)
        if not self._composed():
            return  # drawn once composed (_draw_asked)
        data = figure_data(slow, avail, metric)
        top, bottom = self.query_one("#metric-plot", _Plot), self.query_one("#avail-plot", _Plot)
        for plot in (top, bottom):
            plot.clear()
            plot.set_x_formatter(NumericAxisFormatter())  # a placement chart leaves its categories behind
            plot.set_xticks(None)
        self._has_data = data is not None
        if data is None:
            self.title.update(f"{metric or 'no metric'}: no results yet")
            self._fit()
            return
        self.title.update(data.title())
        _draw_metric(top, data)
        self.query_one(".avail-title", Static).update(AVAIL_KEY if data.avail_x else NO_SAMPLES)
        self._avail_key, self._avail_plot = not data.placements, bool(data.avail_x) and not data.placements
        self._fit()
        if self._avail_plot:
            _draw_availability(bottom, data)


def x_limits(data: FigureData) -> tuple[float, float]:
    """The x range: half a bar beyond the placements, or the background levels of both plots with a margin
    (the frame is drawn over the plot's edges, so a point on them would be hidden)."""
    if data.placements:
        return data.x[0] - 0.5, data.x[-1] + 0.5
    lo, hi = min(data.x + data.avail_x), max(data.x + data.avail_x)
    pad = max((hi - lo) * 0.03, 0.5)
    return lo - pad, hi + pad


def _draw_metric(plot: PlotWidget, data: FigureData) -> None:
    ends = x_limits(data)
    plot.set_xlimits(*ends)
    plot.plot(list(ends), [data.baseline] * 2, line_style="grey62", hires_mode=HiResMode.BRAILLE, label="baseline")
    if data.placements:
        plot.bar(data.placements, data.mean, bar_style="green", label="mean")
    else:
        plot.plot(data.x, data.mean, line_style="green", hires_mode=HiResMode.BRAILLE, label="mean")
    plot.errorbar(data.x, data.mean, yerr=data.std, marker="●", marker_style="bold green", label="±1 std")
    high = max(m + s for m, s in zip(data.mean, data.std))
    plot.set_ylimits(0, high * 1.1 if high > 0 else 1)
    plot.set_xlabel("")
    plot.set_ylabel("")


def _draw_availability(plot: PlotWidget, data: FigureData) -> None:
    plot.set_xlimits(*x_limits(data))
    for col, label, colour in RESOURCES:
        plot.plot(data.avail_x, data.avail[col], line_style=colour, hires_mode=HiResMode.BRAILLE, label=label)
        plot.scatter(data.avail_x, data.avail[col], marker="•", marker_style=colour)  # a single level is a point
    plot.set_ylimits(-5, 105)  # 0% and 100% stay off the frame's edges
    plot.set_xlabel("background instances")
