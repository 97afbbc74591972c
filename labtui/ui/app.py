"""LabApp: the console `labtui` opens with no arguments (Run, Instances, Sessions+SQL).

The first frame is the Run view with its panes filled with what is known at once
(labtui.ui.run_view): it and this module import Textual and nothing heavy.  The
other views (and with them DuckDB, polars, pyarrow, the engine and the backends)
are imported in a thread worker after that frame and mounted into their hidden
tabs; their data loads in their own workers after that.  A tab shown before its
view is mounted says it is loading.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import shlex
import sys
from collections.abc import AsyncGenerator, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Header, Input, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from labtui.core.paths import default_db_path
from labtui.ui.command_line import COMMANDS, Command, CommandError, CommandLine, parse, run_cli
from labtui.ui.keygate import LAPSE_S, KeyGate, until_settled
from labtui.ui.keymap import KeysError, binding_ids, check_keymap, keys_path, read_keymap
from labtui.ui.run_view import RunView
from labtui.ui.tabs import INSTANCES, RUN, SESSIONS, TABS, LabView, PaletteCommand, Tab, tab_named

if TYPE_CHECKING:
    from textual.pilot import Pilot

    from labtui.ui.instances_view import InstancesView
    from labtui.ui.sessions_view import SessionsView

#: Actions bound to printable keys: they never act while an input or the SQL editor has the focus.
TYPED_ACTIONS = frozenset({"show_tab", "sql", "help", "filter", "request_quit", "command_line"})


class ConsoleScreen(Screen[None]):
    """The console's screen: the Run view has the focus from the moment the screen is composed.

    Textual's default gives it to the first focusable widget, the tab bar, and LabApp.on_mount moved it on:
    each move restyles the whole tree, about 40 ms of the first frame.  Once the view's table is mounted the
    view itself cannot take the focus and the selector finds nothing: a screen that comes back with no focus
    gives it to the view shown (LabApp.focus_view).
    """

    AUTO_FOCUS = f"#{RUN.view_id}"

    def on_screen_resume(self) -> None:
        if self.focused is None and isinstance(self.app, LabApp):
            self.app.focus_view(self.app.current_tab())


class LabApp(App[int]):
    """k9s-style console: one key per action, `?` help, `/` filter, ctrl+p palette."""

    TITLE = "labtui"
    CSS = """
    TabPane { padding: 0; }
    TabPane > .loading { padding: 1 2; color: $text-muted; }
    """
    BINDINGS = [
        Binding("q", "request_quit", "quit", id="app.request_quit"),
        Binding("ctrl+q", "quit", "quit", show=False, priority=True),
        # not a priority binding: in the SQL editor ctrl+c copies, as in every editor
        Binding("ctrl+c", "interrupt", "interrupt", show=False),
        Binding("question_mark", "help", "help", id="app.help"),
        Binding("slash", "filter", "filter", id="app.filter"),
        # in ? and the palette; the footer is full
        # priority: acted on as the key arrives, so keys typed right after it go into the line it opens
        Binding("colon", "command_line", "command", show=False, id="app.command_line", priority=True),
        Binding("4", "sql", "SQL", id="app.sql"),
        Binding("escape", "back", "back", show=False),
        *(Binding(str(key), f"show_tab({tab.pane_id!r})", tab.name, show=False, id=f"app.{tab.name}")
          for key, tab in enumerate(TABS, start=1)),
    ]

    def __init__(self, db_path: Path | None = None, backend: str = "process", host: str = "local", *,
                 idle_sampling: bool = True, sql_row_cap: int | None = None) -> None:
        super().__init__()
        self.db_path = Path(db_path) if db_path else default_db_path()
        self.backend_name, self.host_name = backend, host
        self.idle_sampling = idle_sampling
        #: Rows the SQL grid shows at most (None: $LABTUI_SQL_ROWS, else labtui.ui.model.sql_query.DEFAULT_ROW_CAP).
        self.sql_row_cap = sql_row_cap
        self.sub_title = str(self.db_path)
        #: Set once every view is mounted (LabApp.run_test waits for it).
        self.views_loaded = asyncio.Event()
        self.view_classes: dict[Tab, type[Widget]] = {}
        #: The widgets that typed keys go into: Input from the first frame, the SQL editor once its view
        #: is mounted (published by _mount_view from the module the thread imported in full; never looked
        #: up in sys.modules, which holds a module while another thread is still running it).
        self.text_entry: tuple[type[Widget], ...] = (Input,)
        #: The line open_console prints on stderr after a crash (whose traceback went to a crash log).
        self.crash: str | None = None
        #: The key bindings changed in keys.toml (labtui.ui.keymap): binding id -> keys.
        self.user_keys: dict[str, str] = {}
        #: Keys wait while a view is mounted or a screen pushed (labtui.ui.keygate); closed until the
        #: first frame and the rest of the Run view are up.
        self.key_gate = KeyGate()
        self.key_gate.close(RUN)
        self._releasing_keys = False
        #: Actions asked of a view before it was mounted (_when_mounted).
        self._asked: dict[Tab, Callable[[], object]] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial=RUN.pane_id):
            for tab in TABS:
                with TabPane(tab.title, id=tab.pane_id):
                    if tab is RUN:  # the one view of the first frame
                        yield RunView.for_console(self, id=RUN.view_id)
                    else:  # seen only when the tab is shown within the first second or so
                        yield Static(f"loading the {tab.title} view...", classes="loading")
        yield Footer()

    # --- loading the views after the first frame ----------------------------------------------

    def get_default_screen(self) -> Screen[None]:
        """The console's screen, whose Run view has the focus from the first frame (its keys work then)."""
        return ConsoleScreen(id="_default")

    def on_mount(self) -> None:
        self._read_keys()
        self.view_classes[RUN] = RunView

    def on_ready(self) -> None:
        """Once the first frame is drawn and nothing waits to be redrawn: the rest of the Run view, then the
        other views.

        Not sooner: their widgets and imports would delay that frame (imports in a thread too: they hold
        the interpreter's lock).  The garbage collector, off since labtui.ui.open_console, comes back on with
        what the first frame needed frozen out of its passes: it all lives as long as the console."""
        if not gc.isenabled():
            gc.freeze()
            gc.enable()
        self.call_after_refresh(self._after_first_frame)

    async def _after_first_frame(self) -> None:
        try:
            await self.run_view.after_first_frame()
            await self._command_line()
        finally:
            self._open_gate_when_settled(RUN, self.run_view)
        self._load_views()
        self._check_lab_config()

    @work(thread=True, group="lab-config", exit_on_error=False)
    def _check_lab_config(self) -> None:
        """In a thread: say what is wrong with a lab config named by --config or $LABTUI_CONFIG (the CLI refuses
        it before a command; reading it here, not before the first frame, keeps asyncssh out of that frame)."""
        from labtui.hosts.config import named_config_error

        if error := named_config_error():
            self.call_from_thread(self.notify, error, severity="error", markup=False, timeout=15)

    async def _command_line(self) -> CommandLine:
        """The command line, mounted after the first frame, or at once by a `:` typed before that."""
        for line in self.query(CommandLine):
            return line
        line = CommandLine(id="command-line")
        await self.mount(line, before=self.query_one(Footer))
        return line

    def _read_keys(self) -> None:
        """Use the key bindings of keys.toml from the first frame (checked once every view is loaded)."""
        try:
            self.user_keys = read_keymap(keys_path())
        except KeysError as exc:
            self.notify(str(exc), severity="error", markup=False, timeout=15)
        self.set_keymap(self.user_keys)

    def _check_keys(self) -> None:
        """Refuse keys.toml (in one line) when it names a binding no loaded class has."""
        try:
            check_keymap(keys_path(), self.user_keys, binding_ids([type(self), *self.view_classes.values()]))
        except KeysError as exc:
            self.user_keys = {}
            self.set_keymap({})
            self.notify(str(exc) + " (keys.toml not used)", severity="error", markup=False, timeout=15)

    def _load_views(self) -> None:
        self.run_worker(self._import_views, thread=True, group="views", name="views")

    def _import_views(self) -> None:
        """In a thread: import each hidden view's module (the heavy imports), then mount it on the UI thread."""
        try:
            for tab in TABS:
                if tab in self.view_classes:  # composed in the first frame
                    continue
                cls = getattr(importlib.import_module(tab.module), tab.class_name)
                # call_from_thread takes Callable[..., T | Awaitable[T]]: mypy solves T to Never for a coroutine function
                self.call_from_thread(self._mount_view, tab, cls)  # type: ignore[arg-type]
            # What is loaded now lives as long as the console: keep it out of the collector's
            # full passes, which otherwise walk every module object of polars, DuckDB and pyarrow.
            gc.freeze()
        finally:
            with suppress(RuntimeError):  # the app may be gone already
                self.call_from_thread(self._check_keys)
                self.call_from_thread(self.views_loaded.set)

    async def _mount_view(self, tab: Tab, cls: type[Widget]) -> None:
        pane = self.query_one(f"#{tab.pane_id}", TabPane)
        view = cast("type[LabView]", cls).for_console(self, id=tab.view_id)
        self.view_classes[tab] = cls
        # imported in full with the view, by the thread; never looked up in sys.modules (see text_entry)
        self.text_entry = (*self.text_entry, *view.TEXT_ENTRY)
        self.key_gate.close(tab)
        widget = cast(Widget, view)
        try:
            with self.batch_update():
                await pane.query(".loading").remove()
                await pane.mount(widget)
        finally:
            self._open_gate_when_settled(tab, widget)
        if tab is self.current_tab():
            if not self._typing():
                self.focus_view(tab)
            view.tab_shown()

    @asynccontextmanager
    async def run_test(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Pilot, None]:
        """Textual's run_test, handing over the pilot once every view is mounted."""
        async with super().run_test(*args, **kwargs) as pilot:
            with suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.views_loaded.wait(), 120)
            await pilot.pause()
            yield pilot

    # --- views ------------------------------------------------------------------------

    def view(self, tab: Tab) -> Widget | None:
        """The view of a tab, None while it is still loading."""
        try:
            return self.query_one(f"#{tab.view_id}")
        except NoMatches:
            return None

    @property
    def instances_view(self) -> InstancesView | None:
        """The Instances view, None while it is still loading."""
        return cast("InstancesView | None", self.view(INSTANCES))

    @property
    def sessions_view(self) -> SessionsView | None:
        """The Sessions+SQL view, None while it is still loading."""
        return cast("SessionsView | None", self.view(SESSIONS))

    @property
    def run_view(self) -> RunView:
        return self.query_one("#run-view")  # type: ignore[return-value]

    @property
    def run_active(self) -> bool:
        return bool(self.view(RUN) is not None and self.run_view.active)

    def current_tab(self) -> Tab:
        return tab_named(self.query_one(TabbedContent).active)

    def current_view(self) -> RunView | InstancesView | SessionsView | None:
        return self.view(self.current_tab())  # type: ignore[return-value]

    def focus_view(self, tab: Tab) -> None:
        """Give the focus to the view's main widget (its keys then show in the footer)."""
        view = self.view(tab)
        if view is None:
            return
        try:
            view.query_one(tab.focus).focus()
        except NoMatches:
            for widget in view.query("*"):
                if widget.focusable:
                    widget.focus()
                    break

    def action_show_tab(self, pane_id: str) -> None:
        self.show(tab_named(pane_id))

    def show(self, tab: Tab) -> None:
        """Show a tab and give its view the focus."""
        self.query_one(TabbedContent).active = tab.pane_id
        self.focus_view(tab)

    def action_sql(self) -> None:
        """The SQL editor, from anywhere (one key: 4)."""
        self.query_one(TabbedContent).active = SESSIONS.pane_id
        view = self.sessions_view
        if view is None:
            self._when_mounted(SESSIONS, self.action_sql)
            return
        view.sql.focus_editor()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        tab = tab_named(event.pane.id or "")
        view = self.view(tab)
        if view is None:
            return
        cast("LabView", view).tab_shown()
        focused = self.focused
        if focused is None or view not in focused.ancestors_with_self:
            self.call_after_refresh(self._focus_if_outside, tab)

    def _focus_if_outside(self, tab: Tab) -> None:
        view, focused = self.view(tab), self.focused
        if view is not None and (focused is None or view not in focused.ancestors_with_self):
            self.focus_view(tab)

    def on_run_view_finished(self, event: Any) -> None:
        self.notify(f"session {event.session_id} {event.status}",
                    severity="information" if event.status == "completed" else "warning")
        view = self.sessions_view
        if view is not None:
            view.action_refresh()

    # --- keys: held while a view or a screen comes in (labtui.ui.keygate) ----------------------------

    async def on_event(self, event: events.Event) -> None:
        """Every key from the terminal passes here first: held while the gate is closed."""
        if isinstance(event, events.Key) and not event.is_forwarded and self.key_gate.hold(event):
            if self.key_gate.held == 1:  # should the gate lapse (labtui.ui.keygate.LAPSE_S), they still go on
                self.set_timer(LAPSE_S + 0.1, self._release_keys)
            return
        await super().on_event(event)

    def push_screen(self, screen: Any, *args: Any, **kwargs: Any) -> Any:
        """Textual's push_screen, with keys held until the screen is composed and drawn."""
        token = object()
        self.key_gate.close(token)
        try:
            return super().push_screen(screen, *args, **kwargs)
        finally:
            self._open_gate_when_settled(token, screen)

    def _open_gate_when_settled(self, token: object, widget: Widget) -> None:
        """Open the gate for `token` once everything under `widget` is composed, mounted and drawn."""
        async def settle() -> None:
            try:
                await until_settled(widget)
            finally:
                self.call_after_refresh(self._open_gate, token)

        self.run_worker(settle(), group="key-gate", exit_on_error=False)

    def _when_mounted(self, tab: Tab, action: Callable[[], object]) -> None:
        """A key typed ahead of `tab`'s view (`4`, `/` as the console starts): `action` runs once the view can serve
        keys, and the keys typed after it wait until then, so that they go where it puts the focus."""
        self._asked[tab] = action
        self.key_gate.close(tab)

    def _open_gate(self, token: object) -> None:
        self.key_gate.open(token)
        asked = self._asked.pop(token, None) if isinstance(token, Tab) else None
        if asked is not None and self.current_tab() is token:
            asked()
        self.call_later(self._release_keys)

    async def _release_keys(self) -> None:
        """Hand the held keys on, in order, while the gate stays open (a key that pushes a screen closes it)."""
        if self._releasing_keys:
            return
        self._releasing_keys = True
        try:
            while (key := self.key_gate.next_key()) is not None:
                await super().on_event(key)
        finally:
            self._releasing_keys = False

    # --- keys: typed characters go to inputs ------------------------------------------------------

    def _typing(self) -> bool:
        """True when the focus is in a text input or the editable SQL editor."""
        focused = self.focused
        return isinstance(focused, self.text_entry) and not getattr(focused, "read_only", False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Global letter and digit keys do nothing while the user types (the footer dims them)."""
        if action in TYPED_ACTIONS and self._typing():
            return False
        return True

    # --- global actions -----------------------------------------------------------------

    def action_help(self) -> None:
        from labtui.ui.help import HelpScreen

        self.push_screen(HelpScreen(self.help_sections(), current=self.current_tab().title))

    def help_sections(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """Every key: the app's, then each loaded view's, from their bindings."""
        from labtui.ui.help import sections

        return sections(self, {tab.title: cls for tab, cls in self.view_classes.items()})

    def action_filter(self) -> None:
        tab, view = self.current_tab(), self.current_view()
        if view is None and tab is not RUN:
            self._when_mounted(tab, self.action_filter)
        elif view is None or not hasattr(view, "action_filter"):
            self.notify("the Run view has nothing to filter; try Instances (2) or Sessions (3)")
        else:
            view.action_filter()

    async def action_back(self) -> None:
        tab, view = self.current_tab(), self.current_view()
        line = next(iter(self.query(CommandLine)), None)  # mounted after the first frame
        if line is not None and line.has_class("shown"):
            line.close()
            self.focus_view(tab)
            return
        if view is not None and hasattr(view, "close_filter") and view.close_filter():
            return
        self.focus_view(tab)

    # --- the command line (`:`) -----------------------------------------------------------------

    async def action_command_line(self) -> None:
        """`:`: open the command line (the keys typed after it wait in the app's queue until it is open)."""
        await self._command_line()
        self.open_command_line()

    def open_command_line(self, text: str = "") -> None:
        """Open the command line with `text` typed; read the store's session ids for its completion."""
        if not self.query(CommandLine):  # mounted once the first frame is drawn
            return
        self.query_one(CommandLine).open(text)
        self.run_worker(self._read_session_ids, thread=True, group="session-ids", exclusive=True,
                        exit_on_error=False)

    def _read_session_ids(self) -> None:
        """In a thread: the store's session ids into the command line (none while the store cannot be read)."""
        from labtui.store import StoreError, session_ids

        try:
            ids = tuple(session_ids(self.db_path))
        except (StoreError, OSError):
            return
        with suppress(RuntimeError):  # the app may be gone already
            self.call_from_thread(self._set_session_ids, ids)

    def _set_session_ids(self, ids: tuple[str, ...]) -> None:
        self.query_one(CommandLine).sessions = ids

    @on(Input.Submitted, "#command-line")
    def _command_submitted(self, event: Input.Submitted) -> None:
        self.query_one(CommandLine).close()
        if self.views_loaded.is_set():
            self._run_submitted(event.value)
        else:  # typed ahead as the console starts: the views it names are still loading
            self._run_once_loaded(event.value)

    @work(group="command-ahead", exit_on_error=False)
    async def _run_once_loaded(self, text: str) -> None:
        await self.views_loaded.wait()
        self._run_submitted(text)

    def _run_submitted(self, text: str) -> None:
        # a view command moves the focus itself (focusing the old view first would take its tab back), and
        # `:sql` into the editor: only once their focus has landed is a focus left on the closed line moved
        self.run_command(text)
        self.call_after_refresh(self._focus_after_command)

    def _focus_after_command(self) -> None:
        if self.focused is None or isinstance(self.focused, CommandLine):
            self.focus_view(self.current_tab())

    def run_command(self, text: str) -> None:
        """Run one command line (labtui.ui.command_line); a bad one is refused in one line."""
        try:
            command, args = parse(text)
        except CommandError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        if command.kind == "view":
            self.show(tab_named(command.target))
        elif command.kind == "app":  # arguments go to an action that takes them (`:rows N`), not fixed words
            getattr(self, f"action_{command.target}")(*([] if command.words else args))
        else:
            self.run_worker(self._run_cli(command, args), group="command", exit_on_error=False)

    def _palette_callback(self, command: Command) -> Any:
        """What choosing a command in the palette does: run it, or open the command line for its arguments."""
        if command.kind == "cli":
            return lambda: self.open_command_line(f"{command.name} ")
        return lambda: self.run_command(f"{command.name} {' '.join(command.words)}")

    async def _run_cli(self, command: Command, args: list[str]) -> None:
        """Run the CLI's command; files written are named in a notification, other output shown in a modal."""
        from labtui.ui.text_screen import TextScreen

        argv = [command.name, *args]
        shown = f"labtui {shlex.join(argv)}"
        self.notify(f"{shown}: running...", markup=False, timeout=3)
        # laid out for the text box it is shown in (95% of the screen, less its border, padding and scroll bar), as the CLI
        # lays out for a terminal: a table too wide for it turns into lines; what is still wider scrolls
        status, out, err = await run_cli(self.db_path, argv, width=max(40, int(self.size.width * 0.95) - 6))
        if status != 0 and not out.strip():
            last = (err.strip().splitlines() or [f"exit status {status}"])[-1]
            self.notify(f"{shown}: {last}", severity="error", markup=False, timeout=10)
        elif command.name in ("report", "export"):
            self.notify(f"{shown} wrote {_files_written(out)}", markup=False, timeout=15)
        else:
            self.push_screen(TextScreen(shown, out + err))

    def on_sessions_view_show_instances(self, message: Any) -> None:
        """`i` in the Sessions view: the Instances view filtered to that session's instances."""
        self.show(INSTANCES)
        view = self.instances_view
        if view is None:
            self.notify("the Instances view is still loading")
            return
        view.filter_by(message.session_id)

    def action_sql_rows(self, count: str) -> None:
        """`:rows N`: results of the SQL view show at most N rows from the next query on."""
        if not count.isdigit() or int(count) < 1:
            self.notify(f":rows takes a whole number of rows, 1 or more (got {count!r})", severity="error",
                        markup=False)
            return
        self.sql_row_cap = int(count)
        view = self.sessions_view
        if view is not None:
            view.sql.show_row_cap()
        self.notify(f"SQL results show at most {self.sql_row_cap:,} rows from the next query on", markup=False)

    def action_cleanup_orphans(self) -> None:
        """`:cleanup orphans`: in the Instances view, destroy every orphaned instance after confirming."""
        self.show(INSTANCES)
        view = self.instances_view
        if view is None:
            self.notify("the Instances view is still loading")
            return
        view.cleanup_orphans()

    def action_command_palette(self) -> None:
        """ctrl+p: the command palette (labtui.ui.palette: Textual's, safe when its search outlives it)."""
        from labtui.ui.palette import Palette

        if self.use_command_palette and not isinstance(self.screen, Palette):
            self.push_screen(Palette())  # no fixed id: the last one may still be on its way out

    async def action_quit(self) -> None:
        """ctrl+q and the palette's Quit: the same question as q during a run."""
        self.action_request_quit()

    def action_interrupt(self) -> None:
        """ctrl+c: during a run, ask whether to abort it (a second ctrl+c answers yes: modals.AbortQuestion;
        one more while it tears down forces the teardown, as in the CLI); with no run going, the same as q."""
        view = self.run_view if self.view(RUN) is not None else None
        lab = view.lab if view is not None else None
        if lab is None or view is None:
            self.action_request_quit()
        elif lab.stopping:
            lab.force()
        else:
            view.action_abort("aborted by ctrl+c")

    def action_request_quit(self) -> None:
        """Quit; while a run is active, ask whether to tear its instances down or leave them running."""
        lab = getattr(self.view(RUN), "lab", None)
        if lab is None:
            self.exit(0)
            return
        if lab.sessions_ended:  # only the last feed is left: wait for it, there is nothing to ask
            self.run_worker(self._quit_after_run(self.run_view.run_worker_handle), group="quit")
            return
        from labtui.ui.modals import QuitScreen

        if isinstance(self.screen, QuitScreen):
            return

        def answered(answer: str | None) -> None:
            if answer is not None and self.run_view.lab is lab:
                worker = self.run_view.quit_run(leave=answer == "leave")
                self.run_worker(self._quit_after_run(worker), group="quit")
            elif answer is not None:
                self.exit(0)

        self.push_screen(QuitScreen(lab.sessions[0].session_id, [str(i) for i in lab.live_instances()]), answered)

    async def _quit_after_run(self, worker: Worker | None) -> None:
        """Exit once the session has ended and its store writer has committed."""
        if worker is not None:
            with suppress(WorkerCancelled, WorkerFailed):
                await worker.wait()
        self.exit(0)

    def _handle_exception(self, error: Exception) -> None:
        """Any unhandled error ends the console (Textual's handling) with its traceback in a crash log
        (labtui.ui.crash) instead of on the screen; open_console then prints one line and returns 1."""
        from labtui.ui.crash import record_crash

        if self.crash is None:
            self.crash = record_crash(error)
            self._abort_run_after_crash(error)
        super()._handle_exception(error)
        self._exit_renderables.clear()  # Textual would print the full traceback when the screen closes

    def _abort_run_after_crash(self, error: Exception) -> None:
        """Abort the console's run, if any: its thread tears down and ends, and the process can exit
        (a run left waiting for `n` would keep it alive)."""
        lab = getattr(self.view(RUN), "lab", None)
        if lab is not None:
            lab.abort(f"the console crashed: {type(error).__name__}")

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every console action in the command palette (ctrl+p)."""
        yield from super().get_system_commands(screen)
        for command in COMMANDS:
            yield SystemCommand(command.help, f":{command.name} {command.usage}".rstrip(),
                                self._palette_callback(command))
        commands: list[PaletteCommand] = []
        for tab in TABS:
            view = self.view(tab)
            if view is not None:
                commands += cast("LabView", view).palette()
        commands.append(("Help: every key", "?", self.action_help))
        for title, help_text, callback in commands:
            yield SystemCommand(title, help_text, callback)


def _files_written(out: str) -> str:
    """The files a command printed one per line: the one path, or their directory and names."""
    files = [Path.cwd() / line for line in out.splitlines() if line.strip()]
    if len(files) < 2:
        return str(files[0]) if files else "no file"
    where = Path(os.path.commonpath(files))
    return f"{len(files)} files in {where}: " + ", ".join(str(f.relative_to(where)) for f in files)


def open_console(db_path: Path | None = None, backend: str = "process", host: str = "local") -> int:
    """Run the console until the user quits; returns the exit status."""
    return run_console(LabApp(db_path, backend, host))


def run_console(app: LabApp, **run_options: Any) -> int:
    """Run app (App.run's options); after a crash print one line on stderr and return 1, else its status."""
    status = app.run(**run_options)
    if app.crash is not None:
        print(app.crash, file=sys.stderr)
        return 1
    return status or 0
