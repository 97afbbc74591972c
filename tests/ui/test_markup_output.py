"""Values, names, paths and error messages print as plain text, never as rich markup (issue 19 part 5).

Every piece of data below would be read as markup by rich if it were
interpolated into a markup string: '[/]' closes a tag that was never opened
(MarkupError), '[bold]x' and '[link=...]' would restyle the output and vanish.
"""

from __future__ import annotations

import argparse
import asyncio
import io
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from labtui.cli import main
from labtui.core.events import Log, Result, SessionEnded, SessionStarted, StepEnded, StepStarted
from labtui.store import StoreWriter

CLOSE = "[/]"
BOLD = "[bold]x"
LINK = "[link=https://example.com/]l[/link]"
MATH = r"$\frac{a$ and $b_"  # matplotlib would read paired dollars as mathtext
NAMES = (CLOSE, BOLD, LINK)


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # rich reads it: no cell is cut to an ellipsis
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "run"))


def _store(path: Path, *, host: str = CLOSE, placement: str = "") -> Path:
    """A store with one session whose names are all markup-like."""
    sid = "s1"
    events: list = [SessionStarted(sid, BOLD, "scaling", LINK, host, {"note": CLOSE}, 0, ts=1.79e9)]
    for step, background in enumerate((0, 10)):
        events.append(StepStarted(sid, 0, step, 2, background, ts=1.79e9 + step))
        for rep in range(2):
            events.append(Result(sid, rep, step, background, host, "w1", BOLD, f"{CLOSE} {MATH}",
                                 1.0 + step + rep / 10, LINK, "lower", 1.79e9 + step, placement))
        events.append(StepEnded(sid, 0, step, background, ts=1.79e9 + step + 0.5))
    events.append(Log(sid, "warning", CLOSE, f"{BOLD} warned {LINK}", ts=1.79e9 + 3))
    events.append(SessionEnded(sid, "completed", f"done {CLOSE}", ts=1.79e9 + 4))
    with StoreWriter.open(path) as writer:
        for event in events:
            writer.add(event)
    return path


def _has_all(text: str, *needles: str) -> None:
    for needle in needles:
        assert needle in text, (needle, text)


# --- CLI: sql, sessions, info ------------------------------------------------------------------


def test_sql_prints_values_and_column_names_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _store(tmp_path / "lab.duckdb")
    assert main(["sql", f"select '{CLOSE}' as \"{BOLD}\", '{LINK}' as \"{CLOSE}\"", "--db", str(db)]) == 0
    _has_all(capsys.readouterr().out, CLOSE, BOLD, LINK)


def test_sql_prints_stored_markup_like_data(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _store(tmp_path / "lab.duckdb")
    assert main(["sql", "select suite, backend, host, message from sessions", "--db", str(db)]) == 0
    _has_all(capsys.readouterr().out, BOLD, LINK, CLOSE, f"done {CLOSE}")


def test_sql_error_message_is_plain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _store(tmp_path / "lab.duckdb")
    assert main(["sql", f"select * from \"{CLOSE}\"", "--db", str(db)]) == 2
    assert CLOSE in capsys.readouterr().err


def test_sessions_with_a_host_named_like_markup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = _store(tmp_path / "lab.duckdb")
    assert main(["sessions", "--db", str(db)]) == 0
    _has_all(capsys.readouterr().out, CLOSE, BOLD, LINK)


def test_store_path_with_brackets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "[bold]lab[/]"
    db = _store(folder / "lab.duckdb")
    assert main(["sessions", "--db", str(db)]) == 0
    assert "[bold]lab[/]" in capsys.readouterr().out
    assert main(["info", "--db", str(db)]) == 0
    assert "[bold]lab[/]" in capsys.readouterr().out


# --- CLI: the run summary, instances, cleanup, exec, hosts, backends -----------------------------


def test_run_summary_prints_names_as_text(tmp_path: Path) -> None:
    from labtui.commands.printing import render_summary

    for placement in ("", CLOSE):
        db = _store(tmp_path / f"lab{len(placement)}.duckdb", placement=placement)
        out = io.StringIO()
        render_summary(Console(file=out, width=250), db, "s1")
        _has_all(out.getvalue(), BOLD, f"{CLOSE} {MATH}", LINK)
    out = io.StringIO()
    render_summary(Console(file=out, width=250), tmp_path / CLOSE / "missing.duckdb", "s1")
    assert "cannot read results" in out.getvalue() and CLOSE in out.getvalue()


def _instance(name: str) -> SimpleNamespace:
    labels = SimpleNamespace(role=BOLD, session=LINK, instance="i1")
    return SimpleNamespace(name=name, host=CLOSE, labels=labels, state=CLOSE, created_at=0, handle=LINK)


def test_cleanup_plan_and_reconcile_report_print_names_as_text() -> None:
    from labtui.commands import instances

    backend = SimpleNamespace(name=CLOSE)
    target = SimpleNamespace(instance=_instance(BOLD), backend=backend, reason=f"orphan {CLOSE}")
    finding = SimpleNamespace(kind=CLOSE, session_id=BOLD, instance_id=LINK, backend=CLOSE, detail=f"gone {CLOSE}",
                              closed_state=None, key=("x", "y", "z"))
    reconciliation = SimpleNamespace(findings=[finding], checked=1)
    plan = SimpleNamespace(targets=[target], notes=[f"note {CLOSE}"], reconciliation=reconciliation)
    out = io.StringIO()
    console = Console(file=out, width=250)
    instances._print_plan(console, plan)
    instances._print_reconciliation(console, plan, dry_run=True)
    _has_all(out.getvalue(), BOLD, LINK, f"orphan {CLOSE}", f"note {CLOSE}", f"gone {CLOSE}")


def test_instances_listing_and_backend_errors_print_as_text(capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.commands import instances

    class Failing:
        name = BOLD

        async def list(self, session):
            raise RuntimeError(f"cannot list {CLOSE}")

    class Listing:
        name = CLOSE

        async def list(self, session):
            return [_instance(LINK)]

    monkeypatch.setattr(instances, "backends_for", lambda args, host: [Failing(), Listing()])
    args = argparse.Namespace(host="local", backend=None, session=None, format="table")
    assert instances.cmd_instances(args) == 0
    captured = capsys.readouterr()
    _has_all(captured.out, LINK, CLOSE, BOLD)
    _has_all(captured.err, f"cannot list {CLOSE}", BOLD)


def test_exec_summary_prints_errors_as_text(capsys: pytest.CaptureFixture[str]) -> None:
    from labtui.commands.exec import _print_summary
    from labtui.hosts.fanout import Outcome

    _print_summary([Outcome(BOLD, None, f"refused {CLOSE}", 0.1), Outcome(LINK, None, CLOSE, 2.0, timed_out=True)])
    _has_all(capsys.readouterr().out, BOLD, f"refused {CLOSE}", LINK, f"timed out {CLOSE}")


def test_hosts_listing_prints_config_values_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "[red]cfg"
    folder.mkdir()
    config = folder / "labtui.toml"
    config.write_text(
        '[hosts.h1]\naddress = "127.0.0.1"\nuser = "[bold]u"\ntags = ["[/]", "[link=https://x/]t"]\n'
        'known_hosts = "/tmp/[/]known"\n'
    )
    monkeypatch.setenv("LABTUI_CONFIG", str(config))
    assert main(["hosts"]) == 0
    _has_all(capsys.readouterr().out, "[bold]u", "[/], [link=https://x/]t", "/tmp/[/]known", "[red]cfg")


def test_host_check_prints_errors_as_text(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.commands import hosts

    async def reports(names):
        return [hosts.HostReport(BOLD, reachable=False, error=f"refused {CLOSE}"),
                hosts.HostReport(LINK, reachable=True, os=CLOSE, usable=[BOLD], unusable=[f"docker: {CLOSE}"])]

    monkeypatch.setattr(hosts, "_check_all", reports)
    assert hosts._check(["x"]) == 1
    _has_all(capsys.readouterr().out, BOLD, f"no refused {CLOSE}", LINK, f"docker: {CLOSE}")


def test_backends_table_prints_reasons_as_text(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.commands import catalog

    async def rows(host):
        return [(CLOSE, False, "", f"missing {BOLD}", LINK), ("process", True, "1 [/]", "", "built-in")]

    monkeypatch.setattr(catalog, "_check_all", rows)
    assert catalog.cmd_backends(argparse.Namespace(host="local", format="table")) == 0
    _has_all(capsys.readouterr().out, CLOSE, f"missing {BOLD}", LINK, "1 [/]")


# --- console renderables and modals ---------------------------------------------------------------


def test_run_view_renderables_print_names_as_text() -> None:
    from labtui.ui.model.pane_text import counts_table, log_line, slowdown_cells, slowdown_headers

    model = SimpleNamespace(counts=lambda: {(CLOSE, BOLD, LINK): 2})
    out = io.StringIO()
    Console(file=out, width=250).print(counts_table(model))
    _has_all(out.getvalue(), CLOSE, BOLD, LINK)
    cells = slowdown_cells((f"{CLOSE} m", 10, LINK, 1.0, 0.9, 1.1, 0.1, 2, 0.0, None, None, BOLD, 1.0))
    assert cells[0].plain == f"{CLOSE} m" and not cells[0].spans
    assert cells[slowdown_headers().index("trust")].plain == BOLD  # flags are words, never markup
    line = log_line(Log("s", "error", CLOSE, BOLD))
    assert line is not None and f"[{CLOSE}] {BOLD}" in line.plain


def test_sql_grid_cells_are_plain_text() -> None:
    from labtui.ui.model.format import plain_cell

    for value in (*NAMES, None, 1.5):
        rendered = plain_cell(value)
        assert not rendered.spans
    assert plain_cell(CLOSE).plain == CLOSE


def test_modals_show_names_as_text() -> None:
    from textual.app import App
    from textual.widgets import Label

    from labtui.ui.modals import ConfirmScreen, QuitScreen

    async def scenario() -> list[str]:
        app = App()
        shown = []
        async with app.run_test() as pilot:
            app.push_screen(ConfirmScreen(f"Destroy {CLOSE}?", [BOLD, LINK]))
            await pilot.pause()
            shown.append(str(app.screen.query_one("#confirm-title", Label).render()))
            app.pop_screen()
            app.push_screen(QuitScreen(BOLD, [CLOSE]))
            await pilot.pause()
            shown.append(str(app.screen.query_one("#quit-title", Label).render()))
        return shown

    confirm, quit_title = asyncio.run(scenario())
    assert f"Destroy {CLOSE}?" in confirm
    assert BOLD in quit_title


# --- reports -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["html", "svg"])
def test_report_with_markup_and_mathtext_names(tmp_path: Path, fmt: str) -> None:
    from labtui.report import write_report

    db = _store(tmp_path / "lab.duckdb")
    written = write_report(db, ["s1"], tmp_path / "out", fmt)
    assert written
    if fmt == "svg":
        svg = "".join(p.read_text() for p in written)
        assert "frac" in svg  # the metric's text, not a typeset fraction


def test_console_sessions_view_lists_and_replays_markup_names(tmp_path: Path) -> None:
    from textual.widgets import DataTable

    from labtui.ui.app import LabApp
    from labtui.ui.panes import SlowdownPanel

    db = _store(tmp_path / "lab.duckdb")

    async def scenario() -> tuple[list[str], list[str], str]:
        app = LabApp(db)
        async with app.run_test(size=(200, 50)) as pilot:
            await pilot.press("3")
            sessions = app.query_one("#sessions", DataTable)
            deadline = asyncio.get_running_loop().time() + 30
            while sessions.row_count < 1:
                assert asyncio.get_running_loop().time() < deadline, "the sessions list"
                await pilot.pause(0.1)
            listed = [str(c) for c in sessions.get_row_at(0)]
            sessions.focus()
            await pilot.press("enter")
            replay = app.query_one("#replay", SlowdownPanel)
            while replay.table.row_count < 2:
                assert asyncio.get_running_loop().time() < deadline, "the replay"
                await pilot.pause(0.1)
            await pilot.pause(0.2)
            replayed = [str(c) for c in replay.table.get_row_at(0)]
            return listed, replayed, str(replay.border_title)

    listed, replayed, title = asyncio.run(scenario())
    _has_all(" ".join(listed), CLOSE, BOLD, LINK)
    assert replayed[0] == f"{CLOSE} {MATH}"
    assert title == "session s1"


# --- compare, images build, the console's SQL pane and Instances view ---------------------------------


def _two_sessions(path: Path) -> Path:
    """A store with sessions s1 and s2 whose benchmark, metric, unit and suite are markup-like."""
    with StoreWriter.open(path) as writer:
        for n, sid in enumerate(("s1", "s2")):
            writer.add(SessionStarted(sid, BOLD, "scaling", LINK, CLOSE, {}, 0, ts=1.79e9 + n))
            writer.add(StepStarted(sid, 0, 0, 1, 0, ts=1.79e9 + n))
            for rep in range(3):
                writer.add(Result(sid, rep, 0, 0, CLOSE, "w1", BOLD, CLOSE, 1.0 + n + rep / 10, LINK, "lower",
                                  1.79e9 + n, CLOSE))
            writer.add(SessionEnded(sid, "completed", CLOSE, ts=1.79e9 + n + 1))
    return path


@pytest.mark.parametrize("columns", ["250", "60"])  # the wide table and the narrow layout
def test_compare_prints_names_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch, columns: str) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    db = _two_sessions(tmp_path / "lab.duckdb")
    assert main(["compare", "s1", "s2", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    _has_all(out, BOLD, LINK, f"{CLOSE} (")
    assert "\n" + BOLD in out or f" {BOLD}" in out  # the benchmark heading, verbatim


def test_images_build_prints_names_and_errors_as_text(capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.backends.base import BackendError
    from labtui.commands import images

    built = [SimpleNamespace(name=BOLD, image_id="sha256:" + CLOSE, size_bytes=1e6, skipped=LINK, built=False)]

    class Builder:
        def __init__(self, fail: bool) -> None:
            self.fail = fail

        async def build_images(self, *, force: bool = False) -> list:
            if self.fail:
                raise BackendError(f"cannot build {CLOSE}")
            return built

    for fail in (False, True):
        monkeypatch.setattr(images, "open_backend", lambda name, host, fail=fail: Builder(fail))
        assert images.cmd_images(argparse.Namespace(host="local", force=False)) == (1 if fail else 0)
    captured = capsys.readouterr()
    _has_all(captured.out, BOLD, CLOSE, f"skipped: {LINK}")
    _has_all(captured.err, f"cannot build {CLOSE}")


def test_sql_pane_status_and_schema_tree_show_names_as_text(tmp_path: Path) -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import Static, Tree

    from labtui.ui.sql_view import SqlPane

    class Host(App):
        def compose(self) -> ComposeResult:
            yield SqlPane(tmp_path / "lab.duckdb", id="pane")

    async def scenario() -> tuple[str, list[str]]:
        app = Host()
        async with app.run_test() as pilot:
            pane = app.query_one(SqlPane)
            pane._show_schema([(CLOSE, BOLD, LINK), (CLOSE, "[bold", "INTEGER")])
            pane.status(f"error: no table {CLOSE} {BOLD}", True)
            await pilot.pause()
            status = str(pane.query_one("#sql-status", Static).render())
            tree = pane.query_one("#schema", Tree)
            labels = [str(node.label) for node in (tree.root.children[0], *tree.root.children[0].children)]
        return status, labels

    status, labels = asyncio.run(scenario())
    assert f"error: no table {CLOSE} {BOLD}" in status
    assert labels == [CLOSE, f"{BOLD}  {LINK}", "[bold  INTEGER"]


def test_instances_view_shows_names_and_status_as_text(tmp_path: Path) -> None:
    from textual.app import App, ComposeResult
    from textual.widgets import Static

    from labtui.backends.base import Instance, Labels, open_backend
    from labtui.hosts import get_host
    from labtui.ui.instances_view import InstancesView
    from labtui.ui.model.inventory import Found

    backend = open_backend("process", get_host("local"))  # no I/O: only its name is used
    found = [Found(backend, Instance(Labels(LINK, BOLD, "i1"), CLOSE, "process", "[bold", "running", 0.0), None, False)]

    class Host(App):
        def compose(self) -> ComposeResult:
            yield InstancesView(tmp_path / "lab.duckdb", "local")

    async def scenario() -> tuple[list[str], str]:
        app = Host()
        async with app.run_test(size=(200, 20)) as pilot:
            view = app.query_one(InstancesView)
            view.show(found, [CLOSE], [f"note {BOLD}"])
            await pilot.pause()
            row = [str(c) for c in view.table.get_row(found[0].key)]
            rendered = [str(r) for r in view.table._get_row_renderables(0).cells]
            return row + rendered, str(view.query_one("#inst-status", Static).render())

    cells, status = asyncio.run(scenario())
    _has_all(" ".join(cells), CLOSE, LINK, BOLD, "[bold")
    _has_all(status, f"backends: {CLOSE}", f"note {BOLD}")
