"""The console may close while a chart is being mounted (a run's first results arrive as it exits): the plot's
grid is gone before its Mount is handled, and textual-plot's set-up queried it and ended the console with
NoMatches (two matrix tests failed so in CI)."""

from __future__ import annotations

from textual import events
from textual.app import App, ComposeResult
from textual.containers import Grid

from labtui.ui.chart import _Plot


class _OnePlot(App[None]):
    def compose(self) -> ComposeResult:
        yield _Plot(id="metric-plot", bottom=2)


async def test_a_plot_whose_grid_is_gone_before_its_mount_is_handled_does_not_fail() -> None:
    app = _OnePlot()
    async with app.run_test(size=(60, 20)) as pilot:
        plot = app.query_one(_Plot)
        await plot.query_one(Grid).remove()  # as the closing app removes the children first
        plot.post_message(events.Mount())
        await pilot.pause(0.2)
        assert app.is_running and app._exception is None
