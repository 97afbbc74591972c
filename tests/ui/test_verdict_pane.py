"""The console's slowdown pane says what it shows (issue 41, item 1): the charted metric's verdict on its first
line, live as results come, and the median slowdown with its interval in the table."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pilot_wait import wait_for
from test_snapshots import run_events

from labtui.core.events import Result
from labtui.figures.verdict import verdict
from labtui.ui.model.pane_text import slowdown_headers


@pytest.mark.parametrize("size", [(160, 48), (80, 24)], ids=["160x48", "80x24"])
async def test_the_live_pane_shows_the_verdict_of_its_metric_first(lab: Path, size: tuple[int, int]) -> None:
    from textual.widgets import Static

    from labtui.ui.app import LabApp
    from labtui.ui.panes import SlowdownPanel

    events = run_events()
    levels: dict[int, list[float]] = {}
    for event in events:
        if isinstance(event, Result):
            levels.setdefault(event.background, []).append(event.value)
    expected = verdict("boot_time", "s", levels).line
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=size) as pilot:
        view = app.run_view
        view.model.reset("boot-scaling", "process", "local", 2, 3)
        queue: asyncio.Queue = asyncio.Queue()
        for event in events:
            queue.put_nowait(event)
        view.follow(queue)
        view.drain()
        await pilot.pause(0.2)
        view.redraw()
        await wait_for(pilot, lambda: app.query_one("#live", SlowdownPanel).verdict() is not None, 30, "the verdict")
        panel = app.query_one("#live", SlowdownPanel)
        await wait_for(pilot, lambda: panel.query_one(".verdict", Static).display, 10, "the verdict line shown")
        line = panel.query_one(".verdict", Static)
        assert panel.verdict() == expected and str(line.content) == expected and line.tooltip == expected
        await wait_for(pilot, lambda: panel.query_one(".chart").region.height > 0, 10, "the chart")
        assert line.region.y == panel.region.y  # the pane's first line, above the chart and the table
        assert line.region.bottom <= panel.table.region.y and line.region.bottom <= panel.query_one(".chart").region.y
        # a short pane keeps it to one line (the chart and table keep the room), a tall one wraps it whole
        assert line.has_class("-short") == (panel.size.height < 20)
        assert line.region.height == 1 if line.has_class("-short") else 1 < line.region.height <= 3
        cells = dict(zip(slowdown_headers(), (str(c) for c in panel.table.get_row("hello/boot_time@10"))))
        assert cells["median slowdown"].startswith("+70.5% (+")  # medians 3.75 ms over 2.2 ms, with its interval
