"""SlowdownPanel: the chart and the slowdown table, shared by the live run and a replay."""

from __future__ import annotations

import polars as pl
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable

from labtui.ui.chart import MetricChart
from labtui.ui.render import SLOWDOWN_HEADERS, slowdown_cells
from labtui.ui.series import slowdown_rows
from labtui.ui.tablesync import sync_rows
from labtui.ui.rowtable import RowTable


class SlowdownPanel(Vertical):
    """One metric's chart (cycle with m) above the slowdown table of all metrics."""

    DEFAULT_CSS = """
    SlowdownPanel { height: 1fr; }
    SlowdownPanel > .chart { height: 2fr; min-height: 12; border: round $secondary; padding: 0 1; }
    SlowdownPanel > DataTable { height: 1fr; border: round $secondary; }
    """
    BINDINGS = [Binding("m", "next_metric", "metric")]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.metric = ""
        self._slow = pl.DataFrame()
        self._avail = pl.DataFrame()

    def compose(self) -> ComposeResult:
        yield MetricChart(classes="chart")
        table = RowTable()
        for header in SLOWDOWN_HEADERS:
            table.add_column(header, key=header)
        yield table

    @property
    def table(self) -> DataTable:
        return self.query_one(DataTable)

    def metrics(self) -> list[str]:
        return [] if self._slow.is_empty() else self._slow["metric"].unique(maintain_order=True).to_list()

    def show(self, slow: pl.DataFrame, avail: pl.DataFrame) -> None:
        """Redraw the chart and diff the table against a new slowdown frame."""
        self._slow, self._avail = slow, avail
        metrics = self.metrics()
        if self.metric not in metrics:
            self.metric = metrics[0] if metrics else ""
        self._draw_chart()
        rows = {key: slowdown_cells(row) for key, row in slowdown_rows(slow).items()}
        with self.app.batch_update():
            sync_rows(self.table, rows)

    def _draw_chart(self) -> None:
        self.query_one(MetricChart).draw(self._slow, self._avail, self.metric)

    def action_next_metric(self) -> None:
        metrics = self.metrics()
        if metrics:
            self.metric = metrics[(metrics.index(self.metric) + 1) % len(metrics)] if self.metric in metrics else metrics[0]
            self._draw_chart()
