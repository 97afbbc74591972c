"""SVG snapshots of each console view at 80x24 and 160x48, fed a fixed event sequence (no live run).

The expected screens are tests/snapshots/<view>-<size>.svg.  After a deliberate UI
change, look at the new screens and accept them with
`LABTUI_UPDATE_SNAPSHOTS=1 python -m pytest -q tests/ui/test_snapshots.py`.
A mismatch writes the actual screen next to the test's tmp_path and names it.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import pytest

from labtui.backends.base import Instance, Labels, open_backend
from labtui.core.events import (
    InstanceCreating,
    InstanceReady,
    Log,
    ResourceSample,
    Result,
    SessionEnded,
    SessionStarted,
    StepEnded,
    StepStarted,
)
from labtui.hosts import get_host

SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
#: Each view is drawn at the smallest terminal it supports and at a large one.
SIZES = {"80x24": (80, 24), "160x48": (160, 48)}
T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC: every recorded timestamp is fixed
SESSION = "20260101-000000-5a7c0d"


@pytest.fixture
def fixed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """UTC, state and runtime dirs in tmp, and the cwd in tmp so the store path reads 'lab.duckdb'."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.chdir(tmp_path)
    yield Path("lab.duckdb")
    monkeypatch.delenv("TZ")
    time.tzset()


def check_snapshot(name: str, svg: str, tmp_path: Path) -> None:
    """Compare a screen with tests/snapshots/<name>.svg (or accept it when updating)."""
    expected = SNAPSHOTS / f"{name}.svg"
    if os.environ.get("LABTUI_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOTS.mkdir(exist_ok=True)
        expected.write_text(svg, encoding="utf-8")
        return
    actual = tmp_path / f"{name}.actual.svg"
    if not expected.exists():
        actual.write_text(svg, encoding="utf-8")
        pytest.fail(f"no snapshot {expected}; the screen is in {actual}; accept it with LABTUI_UPDATE_SNAPSHOTS=1")
    if _stable(expected.read_text(encoding="utf-8")) != _stable(svg):
        actual.write_text(svg, encoding="utf-8")
        pytest.fail(f"screen differs from {expected}; the actual screen is {actual}")


async def settled(app, pilot, tries: int = 30) -> str:
    """The screen once two consecutive screenshots agree (lazy layout and refreshes done)."""
    await pilot.pause(0.1)
    last = app.export_screenshot()
    for _ in range(tries):
        await pilot.pause(0.1)
        now = app.export_screenshot()
        if now == last:
            return now
        last = now
    raise AssertionError("the screen did not settle")


def _stable(svg: str) -> str:
    """The SVG without Rich's per-export id (a hash that can differ for the same screen)."""
    return re.sub(r"terminal-\d+", "terminal", svg)


def run_events() -> list:
    """A 3-step boot-scaling session over 2 repetitions, then its end."""
    events: list = [SessionStarted(SESSION, "boot-scaling", "scaling", "process", "local", {}, 1, ts=T0)]
    boot = {0: [0.0021, 0.0023], 5: [0.0026, 0.0030], 10: [0.0034, 0.0041]}
    t = T0
    for rep in (1, 2):
        for step, background in enumerate((0, 5, 10)):
            t += 1
            events.append(StepStarted(SESSION, rep, step, 3, background, ts=t))
            if rep == 2 and step == 2:
                for i in range(5):
                    iid = f"ba{10 + i}"
                    events.append(InstanceCreating(SESSION, iid, "local", "process", "background", iid, ts=t))
                    events.append(InstanceReady(SESSION, iid, t, t, 0.002, "running", ts=t))
            events.append(Result(SESSION, rep, step, background, "local", "wo1", "hello", "boot_time",
                                 boot[background][rep - 1], "s", "lower", ts=t))
            events.append(StepEnded(SESSION, rep, step, background, ts=t))
    events.append(Log(SESSION, "info", "quit", "console quit: tearing down 5 instance(s)", ts=t + 1))
    events.append(SessionEnded(SESSION, "aborted", "aborted by the user", ts=t + 2))
    return events


def samples(now: float) -> list[ResourceSample]:
    """Sixty fresh samples of one host, as a sawtooth (fresh so the host reads as connected)."""
    return [ResourceSample("local", 0.5 + (i % 10) / 20, 0.8 - i / 300, 1.0, 2**30, 0.5,
                           ts=now - 60 + i, session_id=SESSION, instances=i // 6) for i in range(60)]


@pytest.mark.parametrize("size", SIZES)
async def test_run_view_snapshot(fixed: Path, tmp_path: Path, size: str) -> None:
    from labtui.ui.app import LabApp

    app = LabApp(fixed, idle_sampling=False)
    async with app.run_test(size=SIZES[size]) as pilot:
        view = app.run_view
        view.model.reset("boot-scaling", "process", "local", 2, 3)
        queue: asyncio.Queue = asyncio.Queue()
        events = run_events()
        for event in events[:-1]:  # the model counts samples only while the session runs
            queue.put_nowait(event)
        for sample in samples(time.time()):
            queue.put_nowait(sample)
        queue.put_nowait(events[-1])
        view.follow(queue)
        view.drain()
        await pilot.pause(0.2)
        view.redraw()
        # the slowdown table is computed in a worker thread: a screen taken before it ends shows it half-drawn
        for _ in range(300):
            if view._charting is None or view._charting.is_finished:
                break
            await pilot.pause(0.1)
        await pilot.pause(0.1)
        check_snapshot(f"run_view-{size}", await settled(app, pilot), tmp_path)


@pytest.mark.parametrize("size", SIZES)
async def test_instances_view_snapshot(fixed: Path, tmp_path: Path, size: str) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import COLUMNS, InstancesView
    from labtui.ui.model.inventory import Found

    backend = open_backend("process", get_host("local"))  # no I/O: only the name and destroy are used
    other = "20260101-000500-77aa01"
    rows = [  # names as the backends make them: labtui-<session>-<instance>
        ("ba1", SESSION, "background", "running", 300.0, 1_200_000, True),
        ("ba2", SESSION, "background", "creating", 125.0, None, True),
        ("wo1", other, "worker", "running", 20.0, 800_000, False),
        ("ba9", other, "background", "stopping", 90.0, 600_000, False),
        ("ba3", other, "background", "running", 40.0, 700_000, False),
    ]
    found = [Found(backend, Instance(Labels(sid, role, name), f"labtui-{sid}-{name}", "process", "local", state,
                                     T0 - age_s), memory, orphan) for name, sid, role, state, age_s, memory, orphan in rows]
    app = LabApp(fixed, idle_sampling=False)
    async with app.run_test(size=SIZES[size]) as pilot:
        view = app.query_one(InstancesView)
        view.now = lambda: T0
        view.refresh_timer.pause()  # the listing is fixed: no automatic refresh from the real backend
        view.failures[found[4].key] = "lab-ba3: BackendError: refused"
        view.show(found, ["process"], [])
        await pilot.press("2")
        await pilot.pause(0.2)
        flags = [str(view.table.get_row(f.key)[COLUMNS.index("flag")]) for f in found]
        assert flags == ["orphan", "orphan, stuck creating", "", "stuck stopping", "destroy failed"]
        # what matters is in view at 80 columns, with the longest flag: name, state, age, the flag, memory and cpu
        widths = [column.get_render_width(view.table) for column in view.table.ordered_columns]
        assert sum(widths[:COLUMNS.index("cpu") + 1]) <= view.table.scrollable_content_region.width
        check_snapshot(f"instances_view-{size}", await settled(app, pilot), tmp_path)


@pytest.mark.parametrize("size", SIZES)
async def test_sessions_view_snapshot(fixed: Path, tmp_path: Path, size: str) -> None:
    from textual.widgets import DataTable

    from labtui.store import StoreWriter
    from labtui.ui.app import LabApp
    from labtui.ui.panes import SlowdownPanel

    writer = StoreWriter.open(fixed)
    for event in run_events():
        writer.add(event)
    writer.flush()
    writer.close()
    app = LabApp(fixed, idle_sampling=False)
    async with app.run_test(size=SIZES[size]) as pilot:
        await pilot.press("3")
        sessions = app.query_one("#sessions", DataTable)
        deadline = time.monotonic() + 15
        while sessions.row_count != 1 and time.monotonic() < deadline:
            await pilot.pause(0.1)
        sessions.focus()
        await pilot.press("enter")
        replay = app.query_one("#replay", SlowdownPanel)
        while replay.table.row_count != 3 and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert replay.table.row_count == 3
        # the id and its status are in view at 80 columns
        widths = [column.get_render_width(sessions) for column in sessions.ordered_columns]
        assert [str(c.label) for c in sessions.ordered_columns][:2] == ["session_id", "status"]
        assert sum(widths[:2]) <= sessions.scrollable_content_region.width
        await pilot.pause(0.2)
        check_snapshot(f"sessions_view-{size}", await settled(app, pilot), tmp_path)


@pytest.mark.parametrize("size", SIZES)
async def test_start_dialog_snapshot(fixed: Path, tmp_path: Path, size: str) -> None:
    from textual.widgets import Input

    from labtui.ui.app import LabApp
    from labtui.ui.model.choices import BackendChoice
    from labtui.ui.start_dialog import StartDialog

    async def check(host: str) -> list[BackendChoice]:
        return [BackendChoice("process", True, "Linux with labtui-agent"),
                BackendChoice("xen", False, "no xl command on local")]

    app = LabApp(fixed, idle_sampling=False)
    async with app.run_test(size=SIZES[size]) as pilot:
        dialog = StartDialog([("boot-scaling  (scaling)", "boot-scaling")], ["local"], check, suite="boot-scaling")
        await app.push_screen(dialog)
        dialog.query_one("#steps", Input).value = "0"
        dialog.query_one("#per-step", Input).value = "3"
        await pilot.pause(0.3)
        await pilot.press("ctrl+s")
        deadline = time.monotonic() + 10
        while "scale.steps" not in str(dialog.query_one("#start-error").content) and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert dialog.query_one("#steps", Input).has_class("-invalid")
        await pilot.pause(0.1)
        check_snapshot(f"start_dialog-{size}", await settled(app, pilot), tmp_path)
