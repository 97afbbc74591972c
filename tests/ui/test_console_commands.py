"""k9s's habits in the console: the `:` command line, describe and log, auto-refresh, remapped keys.

Pilot tests on a small store (one session imported from a CSV by the CLI) and
process-backend sleepers made by the test and destroyed after it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pilot_wait import wait_for
from test_console import destroy_session

from labtui.backends.base import Instance, InstanceSpec, Labels, open_backend
from labtui.hosts import get_host
from labtui.ui.command_line import COMMANDS, CommandError, complete, parse
from labtui.ui.tabs import INSTANCES, RUN, SESSIONS

SIZE = (120, 40)


@pytest.fixture
async def sleepers() -> AsyncIterator[tuple[str, list[Instance]]]:
    """Two process-backend sleepers of a fresh session, destroyed after the test."""
    backend = open_backend("process", get_host("local"))
    session = "cmd-" + secrets.token_hex(3)
    await backend.prepare(["sleeper"])
    made = await backend.create_many([InstanceSpec(Labels(session, "background", f"ba{i}"), program="sleeper")
                                      for i in range(2)])
    try:
        yield session, made
    finally:
        await destroy_session(session)


def test_parse_and_complete() -> None:
    assert complete("ses") == "sessions "
    assert complete("c") == "c"  # compare and cleanup: nothing in common past "c"
    assert complete("cl") == "cleanup "
    assert complete("cleanup or") == "cleanup orphans "
    assert complete("report na", ["native", "other"]) == "report native "
    assert complete("compare n", ["na1", "na2"]) == "compare na"
    assert complete("export native --format p", ["native", "pq"]) == "export native --format p"  # an option's value
    assert parse(":compare a b")[1] == ["a", "b"]
    with pytest.raises(CommandError, match="no command 'nope'"):
        parse("nope")
    with pytest.raises(CommandError, match="name a session"):
        parse("report")
    with pytest.raises(CommandError, match="takes no arguments"):
        parse("sessions now")


def test_the_command_lines_cli_commands_take_usage_and_help_from_the_clis_parser() -> None:
    """`:compare` names what `labtui compare --help` names (a third session too: the console's own text said
    "A B"), less the global options; the palette's title is the CLI's help line."""
    from labtui.commands.parser import build_parser
    from labtui.ui.command_line import BY_NAME

    compare = BY_NAME["compare"]
    assert compare.usage == "[--format {table,json,csv}] A B [C ...]"
    assert compare.help == "Compare: each metric of session B against session A: change, slowdown, Welch's t-test"
    for command in (c for c in COMMANDS if c.kind == "cli"):
        own = build_parser().parse_args([command.name, "x", "y"] if command.name == "compare" else [command.name, "x"])
        assert own.command == command.name  # a command of the CLI, run as such
        assert command.usage and "--db" not in command.usage and "-h" not in command.usage, command.name
    with pytest.raises(CommandError, match=r"SESSION \[SESSION \.\.\.\]: name a session"):
        parse("report")


async def test_colon_completes_and_switches_view(native_store: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.command_line import CommandLine

    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("colon")
        line = app.query_one(CommandLine)
        assert app.focused is line
        await pilot.press("s", "e", "s", "tab")
        assert line.value == "sessions "
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.current_tab() is SESSIONS, 5, "the Sessions view")
        assert not line.has_class("shown")
        await pilot.press("colon", "x", "escape")
        assert not line.has_class("shown") and app.current_tab() is SESSIONS
        palette = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert all(palette.get(c.help, "").startswith(f":{c.name}") for c in COMMANDS)


async def test_a_burst_typed_after_colon_goes_into_the_command_line(native_store: Path) -> None:
    """`:sessions` and Enter typed faster than the console draws (a paste, tmux send-keys, typing ahead): every
    key after `:` reaches the line.  The focus used to move one refresh later, so `s` opened the start dialog."""
    from textual import events

    from labtui.ui.app import LabApp
    from labtui.ui.start_dialog import StartDialog

    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        keys = [events.Key("colon", ":"), *(events.Key(c, c) for c in "sessions"), events.Key("enter", "\r")]
        for key in keys:  # all queued before the first is handled, as the terminal's driver sends them
            key.set_sender(app)
            app._driver.send_message(key)
        await wait_for(pilot, lambda: app.current_tab() is SESSIONS or isinstance(app.screen, StartDialog), 10,
                       "the command to run")
        assert not isinstance(app.screen, StartDialog)
        assert app.current_tab() is SESSIONS


@pytest.mark.parametrize("enter", [("enter", "\r"), ("ctrl+j", "\n")])
async def test_a_command_typed_ahead_as_the_console_starts_runs_once_its_views_are_loaded(
        native_store: Path, enter: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`:sessions` Enter typed as the console starts (tmux send-keys right after launching it).  The command
    line is loaded after the first frame, and a `:` before that was dropped, so `s` opened the start dialog;
    typed before Python has even started, Enter is read by the terminal in line mode and comes as ctrl+j;
    and a command run before the views are loaded found no Sessions view to show."""
    import threading

    from textual import events
    from textual.app import App

    from labtui.ui.app import LabApp
    from labtui.ui.command_line import CommandLine
    from labtui.ui.start_dialog import StartDialog

    release, load = threading.Event(), LabApp._import_views

    def held(self: LabApp) -> None:  # the views' heavy imports, still going when the keys arrive
        release.wait(60)
        load(self)

    class TypedAhead(LabApp):
        """The keys are in the terminal before the console has mounted: queued as it mounts."""

        def on_mount(self) -> None:
            super().on_mount()
            assert not self.query(CommandLine)  # the burst comes before the line is loaded
            for key in [events.Key("colon", ":"), *(events.Key(c, c) for c in "sessions"), events.Key(*enter)]:
                key.set_sender(self)
                self._driver.send_message(key)

    monkeypatch.setattr(LabApp, "_import_views", held)
    app = TypedAhead(native_store, idle_sampling=False)
    async with App.run_test(app, size=SIZE) as pilot:  # Textual's own: it does not wait for the views
        await wait_for(pilot, lambda: app.query(CommandLine) and not app.query_one(CommandLine).has_class("shown")
                       or isinstance(app.screen, StartDialog), 30, "the line to take the command")
        assert not isinstance(app.screen, StartDialog) and not app.views_loaded.is_set()
        release.set()
        await wait_for(pilot, lambda: app.views_loaded.is_set() and app.sessions_view is not None, 60, "the views")
        await wait_for(pilot, lambda: app.current_tab() is SESSIONS, 10, "the Sessions view")
        await pilot.pause(0.5)  # nothing takes the focus or the tab back afterwards
        assert app.current_tab() is SESSIONS


async def test_colon_sql_leaves_the_keys_in_the_sql_editor(native_store: Path) -> None:
    """`:sql` from another view, then typing: the letters go into the editor (they used to reach the Sessions
    table, whose keys took them as refresh, open and so on), and Tab completes a table name."""
    from labtui.ui.app import LabApp
    from labtui.ui.sql_editor import SqlEditor

    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("2")  # the Instances view first, as a user would come from it
        await wait_for(pilot, lambda: app.current_tab() is INSTANCES, 5, "the Instances view")
        await pilot.press("colon", *"sql", "enter")
        await wait_for(pilot, lambda: isinstance(app.focused, SqlEditor), 5, "the SQL editor's focus")
        editor = app.focused
        editor.text = ""
        await pilot.press(*"select * from res", "tab")
        await pilot.pause(0.3)
        assert editor.text.startswith("select * from results")


async def test_report_command_writes_the_report(native_store: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.command_line import CommandLine

    app = LabApp(native_store, idle_sampling=False)
    report = native_store.parent / "reports" / "native" / "report.html"
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("colon", *"report na")
        await wait_for(pilot, lambda: app.query_one(CommandLine).sessions == ("native",), 10, "the session ids")
        await pilot.press("tab")
        assert app.query_one(CommandLine).value == "report native "
        await pilot.press("enter")
        await wait_for(pilot, report.exists, 60, "the report")
        await wait_for(pilot, lambda: any(str(report) in str(n.message) for n in app._notifications), 10,
                       "the notification naming the file")
    assert "native" in report.read_text()


@pytest.mark.parametrize("size", [(80, 24), (120, 35)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_compare_is_laid_out_for_the_box_it_shows_in(native_store: Path, size: tuple[int, int]) -> None:
    """`:compare A B` shows the CLI's own output, laid out for the text box's width as the CLI lays out for a
    terminal: no line is cut (at 120 columns the CI, p and verdict columns were past the box's edge)."""
    from textual.widgets import Static

    from labtui.cli import main
    from labtui.ui.app import LabApp
    from labtui.ui.text_screen import TextScreen

    native_csv = Path(__file__).parents[1] / "data" / "compare_brandz_native.csv"
    assert main(["--db", str(native_store), "import", str(native_csv), "--session", "again"]) == 0
    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=size) as pilot:
        await pilot.press("colon", *"compare native again", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), 60, "the comparison")
        await pilot.pause(0.2)
        body = app.screen.query_one("#text-body", Static)
        box = body.parent
        lines = str(body.render()).splitlines()
        assert any("B/A" in line for line in lines) and any("no test: one repetition each" in line for line in lines)
        assert max(map(len, lines)) <= box.scrollable_content_region.width, max(lines, key=len)


async def test_describe_log_and_refresh_by_itself(native_store: Path, sleepers: tuple[str, list[Instance]]) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import InstancesView
    from labtui.ui.text_screen import TextScreen

    session, made = sleepers
    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("colon", *"instances", "enter")
        view = app.query_one(InstancesView)
        mine = lambda: sorted(f.instance.name for f in view.found.values() if f.instance.labels.session == session)  # noqa: E731
        await wait_for(pilot, lambda: mine() == sorted(i.name for i in made), 30, "the sleepers listed")
        view.sort_by("name")
        table = view.table
        first = made[0]
        table.move_cursor(row=table.get_row_index(f"process:{first.host}:{first.name}"))
        for key, title in (("d", "describe"), ("l", "log of")):
            await pilot.press(key)
            await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), 10, f"the {title} window")
            screen = app.screen
            shown = f"{screen.title_text}\n{screen.text}"
            assert title in shown and first.name in shown
            assert f"session={session} role=background instance={first.labels.instance}" in shown
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, TextScreen), 5, "the window to close")
        assert "(the log is empty)" in shown  # a sleeper prints nothing; the agent keeps its (empty) log

        backend = open_backend("process", get_host("local"))
        late = await backend.create(InstanceSpec(Labels(session, "background", "late"), program="sleeper"))
        await wait_for(pilot, lambda: late.name in mine(), 30, "the late sleeper, listed with no key pressed")
        assert "refresh every" in str(table.border_title)
        await pilot.press("p")
        assert "paused" in str(table.border_title)
        await backend.destroy(late, force=True)
        await pilot.pause(4)  # longer than REFRESH_EVERY_S: paused, the list keeps the gone sleeper
        assert late.name in mine()


async def test_keys_from_the_config_file(native_store: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.command_line import CommandLine
    from labtui.ui.help import HelpScreen
    from labtui.ui.keymap import KeysError, keys_path, read_keymap

    path = keys_path()
    assert path == native_store.parent / "config" / "keys.toml"
    path.parent.mkdir()
    path.write_text('[app]\ncommand_line = "ctrl+k"\nrun = "f1"\n', encoding="utf-8")
    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2", "colon")
        line = app.query_one(CommandLine)
        assert not line.has_class("shown")  # `:` no longer opens it
        await pilot.press("ctrl+k")
        assert line.has_class("shown") and app.focused is line
        await pilot.press("escape", "f1")
        assert app.current_tab() is RUN
        await pilot.press("question_mark")
        await wait_for(pilot, lambda: isinstance(app.screen, HelpScreen), 5, "the help")
        assert "^k" in app.screen.text and "command line" in app.screen.text

    path.write_text('[instances]\ndescribe = "i"\ndescrbe = "j"\n', encoding="utf-8")
    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: any("descrbe" in str(n.message) for n in app._notifications), 5,
                       "the refusal")
        message = next(str(n.message) for n in app._notifications if "descrbe" in str(n.message))
        assert str(path) in message and "[instances] has cleanup, describe," in message and app.user_keys == {}

    path.write_text("[app\n", encoding="utf-8")
    with pytest.raises(KeysError, match=f"{path}: .*line 1"):
        read_keymap(path)


async def test_log_of_a_docker_container(native_store: Path) -> None:
    from labtui.ui.model.describe import instance_log
    from labtui.ui.model.inventory import Found

    backend = open_backend("docker", get_host("local"))
    if not (availability := await backend.check()).usable:
        pytest.skip(f"docker: {availability.reason}")
    session = "cmd-" + secrets.token_hex(3)
    instance = await backend.create(InstanceSpec(Labels(session, "worker", "r1"), image="labtui/redis"))
    try:
        found = Found(backend, instance, None, False)
        for _ in range(50):  # the server writes its banner just after it starts
            if "Redis is starting" in (text := await instance_log(found)):
                break
            await asyncio.sleep(0.1)
        assert "Redis is starting" in text
    finally:
        await backend.destroy(instance, force=True)


def test_each_tab_names_a_view_class_its_module_defines_and_a_command_shows_it() -> None:
    """The console's views are found through labtui.ui.tabs, never a string typed elsewhere: each Tab's class
    exists where it says, the class's own id matches, and `:NAME` is the command that shows it."""
    import importlib

    from labtui.ui.tabs import TABS, tab_named

    for tab in TABS:
        cls = getattr(importlib.import_module(tab.module), tab.class_name)
        assert cls.__name__ == tab.class_name and tab_named(tab.pane_id) is tab
        command, args = parse(tab.name)
        assert (command.kind, command.target, args) == ("view", tab.pane_id, [])
    with pytest.raises(KeyError, match="tab-nothing"):
        tab_named("tab-nothing")


async def test_a_broken_named_lab_config_is_said_after_the_first_frame(native_store: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI refuses a broken --config or $LABTUI_CONFIG before a command; the console opens (reading it
    before the first frame would import asyncssh for a key check) and says it in one notification."""
    from labtui.ui.app import LabApp

    config = tmp_path / "lab.toml"
    config.write_text("x = [")
    monkeypatch.setenv("LABTUI_CONFIG", str(config))
    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: any(str(config) in str(n.message) for n in app._notifications), 10,
                       "the config's error")
        (said,) = [str(n.message) for n in app._notifications if str(config) in str(n.message)]
        assert said == f"{config}: Invalid value (at end of document)"


def test_a_command_with_fixed_words_runs_its_action_without_them() -> None:
    """`:cleanup orphans` calls action_cleanup_orphans() (its word is the command's, not an argument), `:rows 3`
    action_sql_rows("3"): once both got their words, and :cleanup orphans crashed the console."""
    from labtui.ui.app import LabApp

    calls: list[tuple] = []

    class Recording(LabApp):
        def action_cleanup_orphans(self) -> None:
            calls.append(("cleanup",))

        def action_sql_rows(self, count: str) -> None:
            calls.append(("rows", count))

    app = Recording()
    app.run_command("cleanup orphans")
    app.run_command("rows 3")
    assert calls == [("cleanup",), ("rows", "3")]
