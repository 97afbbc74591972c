"""SlowdownPanel: the chart and the slowdown table, shared by the live run and a replay.

Its first line is the verdict of the metric charted (labtui.figures.verdict: does it move with the background
at all), from the frame's ``verdict`` column.  With `lazy_chart` (the Run view's panel) it is light to draw:
until it is shown a slowdown frame, its chart is a line saying there are no results yet, what the chart itself
says then, and the chart (textual-plot, numpy), polars and the slowdown shaping (labtui.ui.model.series) are
imported with that first frame.  A replay's panel (the Sessions view, loaded with them) has its chart from the
start.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from labtui.ui.model.pane_text import slowdown_cells, slowdown_headers
from labtui.ui.rowtable import RowTable
from labtui.ui.tablesync import sync_rows

if TYPE_CHECKING:
    import polars as pl

    from labtui.ui.chart import MetricChart

#: What the chart says before any result (MetricChart's own words for an empty frame).
NO_RESULTS = "no results yet"
#: Below this many rows the verdict keeps to one line (ending in "…", whole in its tooltip), so that the chart and
#: the table keep the room.
VERDICT_MIN_ROWS = 20


class SlowdownPanel(Vertical):
    """The charted metric's verdict on the first line, then its chart (cycle with m) above the slowdown table of all
    metrics."""

    DEFAULT_CSS = """
    SlowdownPanel { height: 1fr; }
    SlowdownPanel > .verdict { dock: top; height: auto; max-height: 3; padding: 0 1; text-style: bold; }
    SlowdownPanel > .verdict.-short { max-height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    SlowdownPanel > .chart { height: 2fr; min-height: 12; border: round $secondary; padding: 0 1; }
    SlowdownPanel > DataTable { height: 1fr; border: round $secondary; }
    """
    BINDINGS = [Binding("m", "next_metric", "metric")]

    def __init__(self, *, lazy_chart: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.lazy_chart = lazy_chart
        self.metric = ""
        self._slow: pl.DataFrame | None = None
        self._avail: pl.DataFrame | None = None

    def compose(self) -> ComposeResult:
        # docked, the verdict spans the panel above the chart and the table however they are laid out
        verdict = Static("", classes="verdict", markup=False)
        verdict.display = False  # until a frame has one
        yield verdict
        if self.lazy_chart:
            yield Static(NO_RESULTS, classes="chart chart-empty", markup=False)
        else:
            from labtui.ui.chart import MetricChart

            yield MetricChart(classes="chart")
        table = RowTable()
        for header in slowdown_headers():
            table.add_column(header, key=header)
        yield table

    @property
    def table(self) -> DataTable:
        return self.query_one(DataTable)

    def metrics(self) -> list[str]:
        if self._slow is None or self._slow.is_empty():
            return []
        return self._slow["metric"].unique(maintain_order=True).to_list()

    def show(self, slow: pl.DataFrame, avail: pl.DataFrame) -> None:
        """Redraw the chart and diff the table against a new slowdown frame."""
        from labtui.ui.model.series import slowdown_rows

        self._slow, self._avail = slow, avail
        metrics = self.metrics()
        if self.metric not in metrics:
            self.metric = metrics[0] if metrics else ""
        rows = {key: slowdown_cells(row) for key, row in slowdown_rows(slow).items()}
        with self.app.batch_update():
            self._draw_verdict()
            self._draw_chart()
            sync_rows(self.table, rows)

    def verdict(self) -> str | None:
        """The verdict line (labtui.figures.verdict) of the metric charted, None before a frame has one."""
        from labtui.ui.model.series import verdict_of

        return None if self._slow is None else verdict_of(self._slow, self.metric)

    def _draw_verdict(self) -> None:
        line = self.verdict()
        pane = self.query_one(".verdict", Static)
        pane.display = line is not None
        pane.tooltip = line
        pane.update(Text(line or ""))

    def on_resize(self) -> None:
        self.query_one(".verdict", Static).set_class(self.size.height < VERDICT_MIN_ROWS, "-short")

    def _chart(self) -> MetricChart:
        """The chart, put in the empty line's place the first time a frame is shown."""
        from labtui.ui.chart import MetricChart

        for chart in self.query_children(MetricChart):
            return chart
        chart = MetricChart(classes="chart")
        self.mount(chart, before=self.table)
        self.query_children(".chart-empty").remove()
        return chart

    def _draw_chart(self) -> None:
        if self._slow is not None and self._avail is not None:
            self._chart().draw(self._slow, self._avail, self.metric)

    def action_next_metric(self) -> None:
        metrics = self.metrics()
        if metrics:
            self.metric = metrics[(metrics.index(self.metric) + 1) % len(metrics)] if self.metric in metrics else metrics[0]
            self._draw_verdict()
            self._draw_chart()
