"""The console: pure helpers, then pilot tests that drive real runs on the process backend."""

from __future__ import annotations

import io
import json
import math
import time
from pathlib import Path

import polars as pl
import pytest

from labtui.core.events import (
    InstanceCreating,
    InstanceDestroyed,
    InstanceReady,
    ResourceSample,
    Result,
    SessionStarted,
    StepStarted,
)
from labtui.core.units import MISSING, age, quantity, size
from labtui.ui.chart import figure_data, x_limits
from labtui.ui.model.format import cell, count_rows, pct, sparkline
from labtui.ui.model.history import History
from labtui.ui.model.live import RunModel
from labtui.ui.model.query_export import export, result_frame
from labtui.ui.model.series import availability, slowdown, slowdown_rows, trusted_slowdown

# --- pure helpers ---------------------------------------------------------------------------


def test_formatters() -> None:
    assert pct(0.873) == "87%" and pct(None) == "-"
    assert size(512) == "512 B" and size(3 * 2**20) == "3.0 MiB" and size(None) == "-"
    assert age(100.0, now=105.0) == "5s" and age(0, now=1.0) == "-" and age(0.5, now=3725.5) == "1h02m"
    assert quantity(0.00123, "s") == "1.230 ms" and quantity(float("nan"), "s") == MISSING
    assert cell(None) == MISSING and cell(1.5) == "1.5"
    assert count_rows(500, True) == "500 of more than 500 rows"
    assert count_rows(1, False) == "1 row" and count_rows(3, False) == "3 rows"


def test_sparkline_scales_and_pads() -> None:
    assert sparkline([0.0, 1.0], 4) == "  ▁█"
    assert sparkline([0.5, None, 2.0], 3) == "▅ █"
    assert sparkline(list(range(100)), 5, lo=0, hi=99) == sparkline(list(range(95, 100)), 5, lo=0, hi=99)


def _results(values: dict[tuple[int, int], list[float]], better: str = "lower", at_once: bool = False) -> pl.DataFrame:
    """A results frame: per (repetition, background) the values of the worker's runs one after another, or
    (at_once) of instances measured at once."""
    rows = [
        ("s1", rep, bg // 10, bg, "boot", "boot_time", "s", better, v, "", 0 if at_once else run)
        for (rep, bg), vs in values.items()
        for run, v in enumerate(vs, start=1)
    ]
    model = RunModel()
    model.results.extend(rows)
    return model.results_frame()


def test_slowdown_means_across_repetitions_and_normalizes() -> None:
    frame = _results({(1, 0): [1.0, 1.0], (2, 0): [1.0], (1, 10): [2.0], (2, 10): [4.0]})
    slow = slowdown(frame)
    assert slow["background"].to_list() == [0, 10]
    assert slow["mean"].to_list() == [1.0, 3.0]
    assert slow["n"].to_list() == [2, 2]
    assert slow["normalized"].to_list() == [1.0, 3.0]
    assert slow["slowdown_pct"].to_list() == pytest.approx([0.0, 200.0])
    assert slow["std"][1] == pytest.approx(2**0.5)
    higher = slowdown(_results({(1, 0): [10.0], (1, 10): [5.0]}, better="higher"))
    assert higher["slowdown_pct"].to_list() == pytest.approx([0.0, 50.0])
    assert set(slowdown_rows(trusted_slowdown(frame))) == {"boot/boot_time@0", "boot/boot_time@10"}
    assert slowdown(RunModel().results_frame()).is_empty()


def test_a_repetitions_value_is_the_median_of_its_runs_and_the_mean_of_instances_at_once() -> None:
    """One of a step's boots waited 9 ms for a CPU: the repetition's value is its median run, 1.1 ms,
    where the mean of its runs (3.7 ms) made the level's mean 2.4 ms against 1.1.  Instances measured
    at once are one run: a starved one among them still counts, in their mean."""
    values = {(1, 0): [1.0, 1.1, 9.0], (2, 0): [1.2, 1.0, 1.1], (1, 10): [2.0, 2.2]}
    runs = slowdown(_results(values))
    assert runs["mean"].to_list() == pytest.approx([1.1, 2.1]) and runs["n"].to_list() == [2, 1]
    assert runs["std"][0] == pytest.approx(0.0)
    at_once = slowdown(_results(values, at_once=True))
    assert at_once["mean"].to_list() == pytest.approx([(11.1 / 3 + 3.3 / 3) / 2, 2.1])
    nan = slowdown(_results({(1, 0): [1.0, 1.1, float("nan")], (2, 0): [1.0]}))
    assert math.isnan(nan["mean"][0])  # a run with no number leaves the figure blank, not biased


def test_availability_and_chart_series() -> None:
    samples = pl.DataFrame(
        {"host": ["a", "a", "a"], "background": [0, 0, 10], "cpu_avail": [0.9, 0.7, 0.5],
         "mem_avail": [0.8, 0.8, 0.6], "swap_avail": [1.0, 1.0, None]},
    )
    avail = availability(samples)
    assert avail["cpu"].to_list() == pytest.approx([0.8, 0.5])
    slow = slowdown(_results({(1, 0): [1.0, 3.0], (1, 10): [3.0], (2, 10): [5.0]}))
    data = figure_data(slow, avail, "boot_time")
    assert data is not None
    # seconds drawn in ms, the display unit of labtui.core.units
    assert data.x == [0.0, 10.0] and data.mean == pytest.approx([2000.0, 4000.0]) and data.baseline == pytest.approx(2000.0)
    assert data.std == pytest.approx([0.0, 1000 * 2**0.5])  # the spread across repetitions; none with one repetition
    assert data.avail["cpu"] == pytest.approx([80.0, 50.0]) and data.avail_x == [0.0, 10.0]
    title = data.title().plain
    assert "boot_time (ms) ● mean ±1 std" in title and "by background instances" in title
    assert "+100.0%" in title and "baseline 2000 ms" in title
    assert x_limits(data) == (-0.5, 10.5)
    assert figure_data(slowdown(RunModel().results_frame()), avail, "") is None
    assert figure_data(slow, avail, "no_such_metric") is None


def test_chart_series_of_placements() -> None:
    model = RunModel()
    model.results.extend([("s1", 1, 1, 0, "cpu", "ops", "ops/s", "higher", 100.0, "", 1),
                          ("s1", 1, 2, 1, "cpu", "ops", "ops/s", "higher", 50.0, "same-core", 1)])
    data = figure_data(slowdown(model.results_frame()), availability(pl.DataFrame()), "ops")
    assert data is not None and data.placements == ["alone", "same-core"]
    assert data.x == [1.0, 2.0] and x_limits(data) == (0.5, 2.5) and "by placement" in data.title().plain


@pytest.mark.parametrize("size, avail_shown", [((100, 44), True), ((100, 24), False)])
async def test_chart_panel_plots_cycles_metrics_and_makes_room(size: tuple[int, int], avail_shown: bool) -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import Static
    from textual_plot import PlotWidget

    from labtui.ui.panes import SlowdownPanel

    model = RunModel()
    for rep, scale in ((1, 1.0), (2, 1.2)):
        for step, background in enumerate((0, 10, 20), 1):
            model.results.append(("s1", rep, step, background, "boot", "boot_time", "s", "lower", 0.002 * scale, "", 1))
            model.results.append(("s1", rep, step, background, "boot", "rss", "B", "lower", 1e6 + background, "", 1))
    samples = pl.DataFrame({"host": ["a"] * 3, "background": [0, 10, 20], "cpu_avail": [0.9, 0.6, 0.3],
                            "mem_avail": [0.8, 0.7, 0.6], "swap_avail": [1.0, 1.0, 1.0]})

    class Host(App):
        def compose(self) -> ComposeResult:
            yield SlowdownPanel(lazy_chart=True, id="live")

    app = Host()
    async with app.run_test(size=size) as pilot:
        panel = app.query_one(SlowdownPanel)
        await pilot.pause(0.1)
        # no results: one line says so, no empty axes, and no plot library drawn yet
        assert str(panel.query_one(".chart", Static).content) == "no results yet"
        assert not panel.query("#metric-plot")
        panel.show(pl.DataFrame(), availability(samples))  # a run's frame before its first results
        await pilot.pause(0.1)
        assert not panel.query_one("#metric-plot").display and not panel.query(".chart-empty")
        panel.show(trusted_slowdown(model.results_frame()), availability(samples))
        panel.table.focus()
        await pilot.pause(0.2)
        assert str(panel.query_one(".chart-title").content).startswith("boot_time (ms)")
        metric_plot = panel.query_one("#metric-plot", PlotWidget)
        assert len(metric_plot._datasets) == 3  # the baseline, the mean, its ±1 std error bars
        assert panel.query_one("#avail-plot", PlotWidget).display is avail_shown
        assert len(panel.query_one("#avail-plot", PlotWidget)._datasets) == 6  # a line and points per resource
        await pilot.press("m")
        assert str(panel.query_one(".chart-title").content).startswith("rss (MiB)")
        await pilot.press("m")
        assert str(panel.query_one(".chart-title").content).startswith("boot_time (ms)")


async def test_table_diff_updates_changed_cells_and_widens_columns() -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    from labtui.ui.tablesync import sync_rows

    class Host(App):
        def compose(self) -> ComposeResult:
            table: DataTable = DataTable()
            table.add_columns("metric", "std")
            yield table

    app = Host()
    async with app.run_test(size=(60, 10)) as pilot:
        table = app.query_one(DataTable)
        assert sync_rows(table, {"a": ("boot_time", "-"), "b": ("rss", "-")}) == 4
        await pilot.pause(0.1)
        assert sync_rows(table, {"a": ("boot_time", "0.14 ms"), "b": ("rss", "-")}) == 1  # one cell changed
        await pilot.pause(0.1)
        std = list(table.columns.values())[1]
        assert std.content_width >= len("0.14 ms")  # widened, so the new value is not cut
        assert "0.14 ms" in table.render_line(1).text
        assert sync_rows(table, {"b": ("rss", "-")}) == 1 and table.row_count == 1
        # a new row that comes first in the order given (a new session atop a newest-first list) is shown first,
        # not appended; the cursor stays on its row
        table.move_cursor(row=0)
        sync_rows(table, {"new": ("fork_us", "-"), "b": ("rss", "-")})
        assert [k.value for k in table.rows] == ["new", "b"] and table.coordinate_to_cell_key(
            table.cursor_coordinate).row_key.value == "b"
        sync_rows(table, {"new": ("fork_us", "-"), "b": ("rss", "-"), "last": ("exec_us", "-")})
        assert [k.value for k in table.rows] == ["new", "b", "last"]


def test_run_model_counts_and_bounds() -> None:
    model = RunModel()
    model.apply(SessionStarted("s1", "boot-scaling", "scaling", "process", "local", {}, 1))
    model.apply(StepStarted("s1", 1, 0, 3, 0))
    for i in range(3):
        model.apply(InstanceCreating("s1", f"ba{i}", "local", "process", "background", f"ba{i}"))
    model.apply(InstanceReady("s1", "ba0", 0.0, 0.1, 0.1, "running"))
    model.apply(InstanceDestroyed("s1", "ba2"))
    assert model.counts() == {("process", "running", "background"): 1, ("process", "creating", "background"): 1}
    model.apply(Result("s1", 1, 0, 0, "local", "wo1", "boot", "boot_time", 0.002, "s", "lower"))
    assert model.results_frame().height == 1
    for _ in range(700):
        model.add_sample(ResourceSample("local", 0.5, 0.5, 1.0, 1, 0.1))
    assert len(model.hosts["local"].samples) == 600
    assert model.availability_frame().height == 700


def test_history_persists_dedups_and_recalls(tmp_path: Path) -> None:
    path = tmp_path / "h" / "history.json"
    history = History(path)
    for q in ("select 1", "select 2", "select 1"):
        history.add(q)
    assert json.loads(path.read_text()) == ["select 2", "select 1"]
    again = History(path)
    assert again.older() == "select 1" and again.older() == "select 2" and again.older() == "select 2"
    assert again.newer() == "select 1" and again.newer() == ""


def test_export_csv_and_parquet(tmp_path: Path) -> None:
    frame = result_frame(["a", "a", "b"], [(1, 2, "x"), (3, 4, None)])
    assert frame.columns == ["a", "a_2", "b"]
    assert pl.read_csv(export(frame, tmp_path / "out.csv")).height == 2
    assert pl.read_parquet(export(frame, tmp_path / "out.parquet"))["b"].to_list() == ["x", None]


def test_ui_is_the_only_textual_importer() -> None:
    root = Path(__file__).resolve().parents[2] / "labtui"
    offenders = [
        str(p.relative_to(root)) for p in root.rglob("*.py")
        if "textual" in p.read_text() and p.relative_to(root).parts[0] != "ui"
        and ("import textual" in p.read_text() or "from textual" in p.read_text())
    ]
    assert offenders == []


def test_pane_renderers() -> None:
    from labtui.core.events import Log
    from labtui.ui.model.pane_text import counts_table, hosts_text, log_line, run_text

    model = RunModel()
    assert "press s" in run_text(model, "auto").plain
    assert "no host" in hosts_text({}).plain
    model.reset("boot-scaling", "process", "local", 2, 3)
    model.apply(StepStarted("s1", 2, 0, 3, 0))  # the view counts steps as they start, by the plan's position
    model.apply(StepStarted("s1", 2, 1, 3, 10))
    text = " ".join(run_text(model, "manual: waiting, press n").plain.split())
    assert "step 1/2 rep 2/2" in text and "background 10" in text and "boot-scaling on process@local" in text
    model.add_sample(ResourceSample("local", 0.42, 0.5, None, 1, 0.3))
    hosts = hosts_text(model.hosts, width=40).plain
    assert "local ● connected" in hosts and "CPU free   42%" in hosts and "swap free    -" in hosts
    narrow = hosts_text(model.hosts, width=22).plain.splitlines()  # the pane at 80x24: no line wraps
    assert [line for line in narrow[1:] if len(line) > 22] == [] and "RAM free   50%" in narrow[2], narrow
    model.apply(InstanceCreating("s1", "ba1", "local", "process", "background", "ba1"))
    assert counts_table(model).row_count == 2
    assert log_line(ResourceSample("local", 1, 1, 1, 1, 1)) is None
    assert "[teardown] bye" in log_line(Log("s1", "info", "teardown", "bye")).plain


# --- pilot tests on the real process backend ---------------------------------------------------

from pilot_wait import wait_for  # noqa: E402

from labtui.backends.base import InstanceSpec, Labels, open_backend  # noqa: E402
from labtui.hosts import get_host  # noqa: E402

SIZE = (160, 50)
TINY = "scale.steps=2 scale.per_step=3 suite.repetitions=1"


async def destroy_session(session: str) -> None:
    """Leave nothing behind: destroy whatever the session still has."""
    backend = open_backend("process", get_host("local"))
    left = await backend.list(session)
    for instance in left:
        await backend.destroy(instance, force=True)


def pane_text(app, selector: str) -> str:
    from rich.console import Console

    console = Console(width=200, record=True, file=io.StringIO())
    console.print(app.query_one(selector).content)
    return console.export_text()


def quick_suite(directory: Path) -> Path:
    """boot-scaling as a suite file that does not wait for a quiet host (the test machine is shared)."""
    from labtui.core.paths import bundled_dir

    text = (bundled_dir("suites") / "boot-scaling.toml").read_text()
    assert "quiet_timeout_s" not in text and "\n[sampling]\n" in text
    path = directory / "boot-scaling-quick.toml"
    path.write_text(text.replace("\n[sampling]\n", "\n[sampling]\nquiet_timeout_s = 0.0\n"))
    return path


async def start_run(app, pilot, *, manual: bool) -> None:
    """Start boot-scaling (from a file, see quick_suite) through the start-run dialog with TINY overrides."""
    from textual.widgets import Input, RadioButton, Select

    from labtui.ui.start_dialog import StartDialog

    await pilot.press("s")
    await wait_for(pilot, lambda: isinstance(app.screen, StartDialog), 5, "the start dialog")
    dialog = app.screen
    await wait_for(pilot, lambda: dialog.query_one("#backend", Select).value == "process", 30, "the backend check")
    for override in TINY.split():
        key, value = override.split("=")
        dialog.query_one("#" + {"scale.steps": "steps", "scale.per_step": "per-step",
                                "suite.repetitions": "repetitions"}[key], Input).value = value
    dialog.query_one("#manual" if manual else "#auto", RadioButton).value = True
    dialog.query_one("#suite-file", Input).value = str(quick_suite(app.db_path.parent))
    await pilot.press("ctrl+s")
    log = app.query_one("#log")
    await wait_for(pilot, lambda: app.run_view.model.session_id != "", 30,
                   "session start; log: " + "\n".join(line.text for line in log.lines))


async def test_run_view_runs_a_tiny_session_to_the_end(lab: Path) -> None:
    from textual.widgets import DataTable, TextArea

    from labtui.ui.app import LabApp

    app = LabApp(lab)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "%" in pane_text(app, "#hosts").split("CPU free")[-1][:8], 10, "a CPU figure")
        await start_run(app, pilot, manual=False)
        view = app.run_view
        session = view.model.session_id
        try:
            await wait_for(pilot, lambda: view.caught_up, 90, "the run to end and its events to be drained")
            # the panes and the chart are drawn at the next drains after the end
            await wait_for(pilot, lambda: app.query_one("#live DataTable", DataTable).row_count == 3, 15,
                           "the slowdown table's three levels")
            await wait_for(pilot, lambda: "completed" in pane_text(app, "#runinfo"), 15, "the run pane's end")
            info = pane_text(app, "#runinfo")
            assert "completed" in info and "step 2/2" in " ".join(info.split()) and "background 6" in " ".join(info.split())
            # the chart is put in place with the run's first frame and drawn once mounted
            await wait_for(pilot, lambda: "boot_time (ms) ● mean ±1 std" in pane_text(app, "#live .chart-title"),
                           5, "the chart's title")
            hosts = pane_text(app, "#hosts")
            assert "local" in hosts and "CPU" in hosts
            assert sum(view.model.counts().values()) == 0
            assert pane_text(app, "#counts").split()[-2:] == ["total", "0"]

            await pilot.press("3")  # the store is free again: the run's rows are queryable
            await wait_for(pilot, lambda: app.query_one("#sessions", DataTable).row_count == 1, 15, "the new session")
            app.query_one("#sql", TextArea).text = "select count(*) from results"
            app.query_one("#sql", TextArea).focus()
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: app.query_one("#result").row_count == 1, 15, "the count")
            assert app.query_one("#result").get_row_at(0) == [3 * 5]  # 3 levels, 5 boots each (worker.runs)
        finally:
            await destroy_session(session)


async def test_manual_stepping_waits_for_n_then_abort_tears_down(lab: Path) -> None:
    from labtui.ui.app import LabApp

    app = LabApp(lab)
    async with app.run_test(size=SIZE) as pilot:
        await start_run(app, pilot, manual=True)
        view = app.run_view
        session = view.model.session_id
        try:
            run = view.lab
            await wait_for(pilot, lambda: run.waiting_at_step, 30, "the gate after the baseline")
            await pilot.pause(1.0)
            assert run.waiting_at_step and view.model.steps_done == 1
            assert "press n" in pane_text(app, "#runinfo")
            await pilot.press("n")
            await wait_for(pilot, lambda: view.model.steps_done == 2 and run.waiting_at_step, 30, "step 2")
            assert sum(view.model.counts().values()) == 3
            assert len(await open_backend("process", get_host("local")).list(session)) == 3
            await pilot.press("x")
            await pilot.press("y")
            await wait_for(pilot, lambda: view.caught_up, 30, "the abort")
            await pilot.pause(0.3)
            assert view.model.status == "aborted"
            assert sum(view.model.counts().values()) == 0
            assert await open_backend("process", get_host("local")).list(session) == []
        finally:
            await destroy_session(session)


async def test_instances_view_lists_destroys_after_confirming_and_cleans_orphans(lab: Path) -> None:
    import secrets

    from textual.widgets import DataTable

    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import COLUMNS, InstancesView
    from labtui.ui.modals import ConfirmScreen

    session = "gone-" + secrets.token_hex(3)
    backend = open_backend("process", get_host("local"))
    await backend.prepare(["sleeper"])
    specs = [InstanceSpec(Labels(session, "background", f"ba{i}"), program="sleeper") for i in range(3)]
    made = await backend.create_many(specs)
    names = sorted(i.name for i in made)
    app = LabApp(lab)
    try:
        async with app.run_test(size=SIZE) as pilot:
            view = app.query_one(InstancesView)
            await pilot.press("2")
            mine = lambda: sorted(f.instance.name for f in view.found.values() if f.instance.labels.session == session)  # noqa: E731
            await wait_for(pilot, lambda: mine() == names, 30, "the sleepers listed")
            found = [f for f in view.found.values() if f.instance.labels.session == session]
            assert all(f.orphan and f.memory for f in found)
            table = app.query_one("#inst-table", DataTable)
            victim = next(f for f in found if f.instance.name == names[1])
            assert "orphan" in str(table.get_row(victim.key)[COLUMNS.index("flag")])

            await pilot.press("slash", *session, "enter")
            await wait_for(pilot, lambda: table.row_count == 3, 5, "the filter")
            table.move_cursor(row=table.get_row_index(victim.key))
            await pilot.press("space")
            assert view.selected == {victim.key}
            await pilot.press("ctrl+d")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the confirmation")
            listed = str(app.screen.query_one("#confirm-list").content)
            assert names[1] in listed and names[0] not in listed and names[2] not in listed
            await pilot.press("y")
            await wait_for(pilot, lambda: mine() == [names[0], names[2]], 30, "the destroy")
            assert sorted(i.name for i in await backend.list(session)) == [names[0], names[2]]

            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the cleanup confirmation")
            listed = str(app.screen.query_one("#confirm-list").content)
            assert names[0] in listed and names[2] in listed and names[1] not in listed
            await pilot.press("n")
            await pilot.pause(0.2)
            assert len(await backend.list(session)) == 2
            await pilot.press("c", "y")
            await wait_for(pilot, lambda: mine() == [], 30, "the cleanup")
            assert await backend.list(session) == []
    finally:
        await destroy_session(session)


def make_store(path: Path, session: str = "20260101-000000-abcdef", results: int = 600) -> str:
    """A store with one finished session: 2 steps, `results` boot results, a few samples."""
    from labtui.core.events import SessionEnded, StepEnded
    from labtui.store import StoreWriter

    writer = StoreWriter.open(path)
    t0 = time.time() - 100
    writer.add(SessionStarted(session, "boot-scaling", "scaling", "process", "local", {}, 1, ts=t0))
    half = results // 2
    for step, background in ((0, 0), (1, 10)):
        start = t0 + 10 * step + 1
        writer.add(StepStarted(session, 1, step, 2, background, ts=start))
        writer.add(ResourceSample("local", 0.9 - 0.4 * step, 0.8, 1.0, 1000, 0.5, ts=start + 1, session_id=session,
                                  instances=background))
        for i in range(half):
            writer.add(Result(session, 1, step, background, "local", f"wo{i}", "boot", "boot_time",
                              0.01 * (1 + step), "s", "lower", ts=start + 2))
        writer.add(StepEnded(session, 1, step, background, ts=start + 3))
    writer.add(SessionEnded(session, "completed", ts=t0 + 30))
    writer.flush()
    writer.close()
    return session


async def test_sessions_view_replays_queries_caps_refuses_writes_and_exports(lab: Path, tmp_path: Path) -> None:
    from textual.widgets import DataTable, TextArea

    from labtui.ui.app import LabApp
    from labtui.ui.panes import SlowdownPanel

    session = make_store(lab)
    app = LabApp(lab, sql_row_cap=500)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        sessions = app.query_one("#sessions", DataTable)
        await wait_for(pilot, lambda: sessions.row_count == 1, 15, "the sessions list")
        sessions.focus()
        await pilot.press("enter")
        replay = app.query_one("#replay", SlowdownPanel)
        await wait_for(pilot, lambda: replay.table.row_count == 2, 15, "the replayed slowdown table")
        assert "boot_time (ms) ● mean ±1 std" in pane_text(app, "#replay .chart-title")
        from labtui.ui.model.pane_text import slowdown_headers

        cells = dict(zip(slowdown_headers(), (str(c) for c in replay.table.get_row("boot/boot_time@10"))))
        # one repetition: the value and n=1, no slowdown figure (issue 41; the mean-based one said +100.0%)
        assert (cells["mean"], cells["median slowdown"], cells["trust"]) == ("20.00 ms", MISSING, "n=1: no spread")
        assert pane_text(app, "#replay .verdict").startswith("boot_time: too few values for a trend")

        editor = app.query_one("#sql", TextArea)
        status = app.query_one("#sql-status")

        async def run(sql: str) -> None:
            editor.text = sql
            status.update("")
            editor.focus()
            await pilot.press("ctrl+r")
            await wait_for(pilot, lambda: str(status.content) not in ("", "running..."), 15, f"the query {sql!r}")

        await run("select * from results")
        assert "500 of more than 500 rows" in str(status.content)
        assert app.query_one("#result").row_count == 500
        assert "500 of more than 500 rows · row cap 500" in app.query_one("#result").border_subtitle
        await run("delete from results")
        assert status.has_class("error") and "error" in str(status.content)
        await run("select count(*) as n from results")
        assert not status.has_class("error") and "1 row" in str(status.content)
        result = app.query_one("#result")
        assert result.get_row_at(0) == [600]

        history = json.loads((tmp_path / "state" / "history.json").read_text())
        assert history[-1] == "select count(*) as n from results" and "delete from results" in history

        result.focus()
        target = tmp_path / "out" / "count.csv"
        await pilot.press("e", *str(target), "enter")
        await wait_for(pilot, target.exists, 10, "the export")
        await pilot.pause(0.2)
        assert pl.read_csv(target)["n"].to_list() == [600]
        assert replay.border_title == f"session {session}"


async def test_quit_during_a_run_asks_then_tears_down(lab: Path) -> None:
    from labtui.store import run_sql
    from labtui.ui.app import LabApp
    from labtui.ui.modals import QuitScreen

    app = LabApp(lab)
    async with app.run_test(size=SIZE) as pilot:
        await start_run(app, pilot, manual=True)
        view = app.run_view
        session = view.model.session_id
        try:
            run = view.lab
            await wait_for(pilot, lambda: run.waiting_at_step, 30, "the gate")
            await pilot.press("n")
            await wait_for(pilot, lambda: view.model.steps_done == 2 and run.waiting_at_step, 30, "step 2")
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen), 5, "the quit question")
            assert "3 live instance(s)" in str(app.screen.query_one("#quit-list").content)
            await pilot.press("escape")
            await pilot.pause(0.2)
            assert view.active and app.is_running
            await pilot.press("q", "t")
            await wait_for(pilot, lambda: not app.is_running, 30, "the app to exit")
        except BaseException:
            await destroy_session(session)
            raise
    try:
        assert await open_backend("process", get_host("local")).list(session) == []
        quit_log = run_sql(lab, f"select message from events where session_id = '{session}' and category = 'abort'")
        assert quit_log.rows == [("console quit: tearing down 3 instance(s)",)]
        status = run_sql(lab, f"select status from sessions where session_id = '{session}'")
        assert status.rows == [("aborted",)]
    finally:
        await destroy_session(session)


async def test_help_palette_and_tabs(lab: Path) -> None:
    from textual.command import CommandPalette
    from textual.widgets import TabbedContent

    from labtui.ui.app import LabApp
    from labtui.ui.help import HelpScreen

    app = LabApp(lab)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "run the SQL in the editor" in str(app.screen.query_one("#help-text").content)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("ctrl+p")
        await wait_for(pilot, lambda: isinstance(app.screen, CommandPalette), 5, "the palette")
        await pilot.press(*"Go to Sessions")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.query_one(TabbedContent).active == "tab-sessions", 5, "the Sessions tab")
        await pilot.press("1")
        assert app.query_one(TabbedContent).active == "tab-run"
        await pilot.press("x")  # no run: a notice, nothing else
        assert not app.run_view.active
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, 5, "quit without a run")


async def test_sessions_view_opens_the_report_of_the_session_under_the_cursor(lab: Path, tmp_path: Path, monkeypatch) -> None:
    from textual.widgets import DataTable

    from labtui.ui.app import LabApp

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DISPLAY", raising=False)
    session = make_store(lab)
    app = LabApp(lab)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        sessions = app.query_one("#sessions", DataTable)
        await wait_for(pilot, lambda: sessions.row_count == 1, 15, "the sessions list")
        sessions.focus()
        await pilot.press("o")
        status = app.query_one("#sql-status")
        await wait_for(pilot, lambda: "report:" in str(status.content), 60, "the report")
    page = tmp_path / "reports" / session / "report.html"
    assert str(page) in str(status.content).replace("\n", "")
    assert session in page.read_text()


# --- keys and focus, the SQL grid ------------------------------------------------------------------


async def test_typed_keys_stay_in_the_sql_editor_and_it_is_one_key_away(lab: Path) -> None:
    from textual.widgets import Input, TabbedContent, TextArea

    from labtui.ui.app import LabApp

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        tabs = app.query_one(TabbedContent)
        assert tabs.active == "tab-run"
        await pilot.press("4")  # one key from the Run view to the editor
        editor = app.query_one("#sql", TextArea)
        assert tabs.active == "tab-sessions" and app.focused is editor
        await pilot.press("s", "e", "l")  # the first query is selected: what is typed replaces it
        assert editor.text == "sel", editor.text
        editor.text = ""
        await pilot.press("1", "2", "3", "4", "q", "question_mark", "slash", "r", "e", "o")
        assert editor.text == "1234q?/reo"
        assert tabs.active == "tab-sessions" and app.focused is editor and app.is_running
        assert app.screen is app.screen_stack[0]  # no help, no quit question
        await pilot.press("escape")  # leaves the editor for the result grid; the keys act again
        assert app.focused is app.query_one("#result")
        await pilot.press("1")
        assert tabs.active == "tab-run"

        await pilot.press("2", "slash")  # an input: typed digits filter, they do not switch views
        box = app.query_one("#inst-filter", Input)
        assert app.focused is box
        await pilot.press("1", "3", "q")
        assert box.value == "13q" and tabs.active == "tab-instances" and app.is_running


async def test_help_lists_each_view_s_keys_and_q_quits_from_every_view(lab: Path) -> None:
    from textual.widgets import TabbedContent

    from labtui.ui.app import LabApp
    from labtui.ui.help import HelpScreen

    for key, tab in (("1", "tab-run"), ("2", "tab-instances"), ("3", "tab-sessions"), ("4", "tab-sessions")):
        app = LabApp(lab, idle_sampling=False)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press(key)
            assert app.query_one(TabbedContent).active == tab
            if key == "4":
                await pilot.press("escape")  # from the editor to the result grid: q quits from there
            else:
                await pilot.press("question_mark")
                assert isinstance(app.screen, HelpScreen)
                text = str(app.screen.query_one("#help-text").content)
                first_view = text.split("[b]")[2]  # after "Everywhere", the current view comes first
                title = {"tab-run": "Run", "tab-instances": "Instances", "tab-sessions": "Sessions+SQL"}[tab]
                assert first_view.startswith(title + "[/b]") and "(this view)" in first_view
                for needle in ("start a run", "select / unselect", "run the SQL", "export the current result",
                               "the SQL editor", "filter the current list"):
                    assert needle in text
                await pilot.press("escape")
            await pilot.press("q")
            await wait_for(pilot, lambda app=app: not app.is_running, 5, f"q to quit from {tab}")


async def test_sql_grid_shows_100000_rows_with_the_cap_stated(lab: Path) -> None:
    from textual.widgets import TextArea

    from labtui.ui.app import LabApp

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        editor = app.query_one("#sql", TextArea)
        status = app.query_one("#sql-status")
        editor.text = "select i, i * 2 as twice, 'row ' || i as label from range(150000) t(i)"
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "rows" in str(status.content), 30, "the result")
        grid = app.query_one("#result")
        assert grid.row_count == 100_000
        assert "100,000 of more than 100,000 rows" in str(status.content)
        assert grid.border_subtitle.startswith("100,000 of more than 100,000 rows · row cap 100,000")
        assert grid.get_row_at(99_999) == [99_999, 199_998, "row 99999"]
        grid.focus()
        await pilot.press("ctrl+end")  # the last row is reachable
        assert grid.cursor_row == 99_999

        editor.text = "select i from range(100000) t(i)"  # exactly the cap: not cut
        editor.focus()
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "100,000 rows ·" in str(status.content), 30, "the second result")
        assert app.query_one("#result").row_count == 100_000
        assert app.query_one("#result").border_subtitle.startswith("100,000 rows · row cap 100,000")


def test_sql_row_cap_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.ui.model.sql_query import DEFAULT_ROW_CAP, cap_line, row_cap_from_env

    monkeypatch.setenv("LABTUI_SQL_ROWS", "2500")
    assert row_cap_from_env() == 2500
    for bad in ("0", "-3", "many"):
        monkeypatch.setenv("LABTUI_SQL_ROWS", bad)
        assert row_cap_from_env() == DEFAULT_ROW_CAP
    assert cap_line(2500, True, 2500) == "2,500 of more than 2,500 rows · row cap 2,500 ($LABTUI_SQL_ROWS)"
    assert cap_line(1, False, 2500).startswith("1 row · ")


def test_the_first_frame_imports_nothing_heavy(tmp_path: Path) -> None:
    """`labtui`'s first frame (the Run view's panes, before the other views load) pulls in no DuckDB,
    polars, Arrow, plot library, engine, backend or report."""
    import subprocess
    import sys

    heavy = ("duckdb", "polars", "pyarrow", "numpy", "matplotlib", "asyncssh", "textual_fastdatatable",
             "textual_plot", "labtui.store", "labtui.engine", "labtui.backends", "labtui.session", "labtui.report",
             "labtui.ui.model.series", "labtui.ui.chart", "labtui.ui.instances_view", "labtui.ui.sessions_view")
    script = f"""
import asyncio, sys
import labtui.cli
from labtui.ui.app import LabApp

class Shell(LabApp):
    def _load_views(self):  # the first frame only
        self.views_loaded.set()

async def main():
    app = Shell({str(tmp_path / "lab.duckdb")!r}, idle_sampling=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.export_screenshot()
        # the Run view's panes: the host (its readings to come), no run, no instances (SVG: no plain spaces)
        assert all(word in screen for word in ("Sessions+SQL", "sampling", "&#160;run&#160;yet", "total")), screen
        print(sorted(m for m in {heavy!r} if m in sys.modules))

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


async def test_a_key_typed_in_the_first_frame_waits_for_the_run_view_and_then_acts(tmp_path: Path) -> None:
    """`s` pressed before the chart, table and log are mounted is held by the key gate (labtui.ui.keygate), not
    lost: once the rest of the Run view is up, it opens the start dialog."""
    from textual import events

    from labtui.ui.app import LabApp
    from labtui.ui.start_dialog import StartDialog

    class FirstFrame(LabApp):
        def on_ready(self, event: events.Ready) -> None:  # stay in the first frame until the test lets it go on
            event.prevent_default()  # LabApp's on_ready is not called
            self.views_loaded.set()  # run_test hands the pilot over at once

    app = FirstFrame(tmp_path / "lab.duckdb", idle_sampling=False)
    async with app.run_test(size=(120, 40)) as pilot:
        assert not app.query("#live") and app.focused is app.run_view
        await pilot.press("s")
        await pilot.pause(0.5)  # well within the gate's lapse (5 s)
        assert not isinstance(app.screen, StartDialog) and app.key_gate.held == 1  # held, not acted on
        LabApp.on_ready(app)  # the rest of the Run view, then the other views
        await wait_for(pilot, lambda: isinstance(app.screen, StartDialog), 10, "the start dialog")
        await wait_for(pilot, lambda: not app.key_gate.closed, 10, "the dialog composed")


def fixed_listing(rows: list[tuple[str, str, str, str]]) -> list:
    """A fixed listing of the process backend: (session, role, instance, state) rows, created now."""
    from labtui.backends.base import Instance, Labels, open_backend
    from labtui.hosts import get_host
    from labtui.ui.model.inventory import Found

    backend = open_backend("process", get_host("local"))  # only its name is used
    return [Found(backend, Instance(Labels(sid, role, name), f"labtui-{sid}-{name}", "process", "local", state,
                                    time.time()), None, False) for sid, role, name, state in rows]


async def test_i_in_the_sessions_view_shows_that_sessions_instances(lab: Path) -> None:
    from textual.widgets import DataTable

    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import InstancesView
    from labtui.ui.tabs import INSTANCES

    session = make_store(lab, results=10)
    found = fixed_listing([(session, "background", "ba1", "running"), (session, "background", "ba2", "running"),
                           ("20260101-000500-77aa01", "background", "ba1", "running")])
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=(80, 24)) as pilot:
        view = app.query_one(InstancesView)
        view.refresh_timer.pause()  # the listing is fixed
        view.show(found, ["process"], [])
        await pilot.press("3")
        table = app.query_one("#sessions", DataTable)
        await wait_for(pilot, lambda: table.row_count == 1, 15, "the session")
        table.focus()
        await pilot.press("i")
        await wait_for(pilot, lambda: app.current_tab() is INSTANCES, 5, "the Instances view")
        assert view.filter_text == session and set(view.visible()) == {f.key for f in found[:2]}
        assert "2 of 3 instance(s) shown" in str(view.query_one("#inst-status").content)


async def test_a_letter_sorts_the_instances_by_its_column_and_again_the_other_way(lab: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import COLUMNS, InstancesView

    found = fixed_listing([("s1", "background", "ba1", "running"), ("s1", "worker", "wo1", "exited"),
                           ("s1", "background", "ba2", "creating")])
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=(120, 30)) as pilot:
        view = app.query_one(InstancesView)
        view.refresh_timer.pause()  # the listing is fixed
        view.show(found, ["process"], [])
        await pilot.press("2")
        view.table.focus()

        def states() -> list[str]:
            return [str(view.table.get_row_at(i)[COLUMNS.index("state")]) for i in range(view.table.row_count)]

        await pilot.press("S")
        assert (view.sort_column, view.sort_reverse, states()) == ("state", False, ["creating", "exited", "running"])
        await pilot.press("S")
        assert states() == ["running", "exited", "creating"]
        await pilot.press("R")
        assert view.sort_column == "role" and states()[-1] == "exited"  # the worker after the backgrounds
