"""LabApp: the console `labtui` opens with no arguments (Run, Instances, Sessions+SQL)."""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from pathlib import Path

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, TabbedContent, TabPane
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from labtui.paths import default_db_path
from labtui.ui.instances_view import InstancesView
from labtui.ui.modals import HelpScreen, QuitScreen
from labtui.ui.run_view import RunView
from labtui.ui.sessions_view import SessionsView

TABS = {"tab-run": "Run", "tab-instances": "Instances", "tab-sessions": "Sessions+SQL"}


class LabApp(App[int]):
    """k9s-style console: one key per action, `?` help, `/` filter, ctrl+p palette."""

    TITLE = "labtui"
    CSS = """
    TabPane { padding: 0; }
    """
    BINDINGS = [
        Binding("q", "request_quit", "quit"),
        Binding("ctrl+q", "request_quit", "quit", show=False, priority=True),
        Binding("question_mark", "help", "help"),
        Binding("slash", "filter", "filter"),
        Binding("escape", "back", "back", show=False),
        Binding("1", "show_tab('tab-run')", "run", show=False),
        Binding("2", "show_tab('tab-instances')", "instances", show=False),
        Binding("3", "show_tab('tab-sessions')", "sessions", show=False),
    ]

    def __init__(self, db_path: Path | None = None, backend: str = "process", host: str = "local", *,
                 idle_sampling: bool = True) -> None:
        super().__init__()
        self.db_path = Path(db_path) if db_path else default_db_path()
        self.backend_name, self.host_name = backend, host
        self.idle_sampling = idle_sampling
        self.sub_title = str(self.db_path)

    def compose(self) -> ComposeResult:
        yield Header()
        with TabbedContent(initial="tab-run"):
            with TabPane(TABS["tab-run"], id="tab-run"):
                yield RunView(self.db_path, self.backend_name, self.host_name, idle_sampling=self.idle_sampling,
                              id="run-view")
            with TabPane(TABS["tab-instances"], id="tab-instances"):
                yield InstancesView(self.db_path, self.host_name, id="instances-view")
            with TabPane(TABS["tab-sessions"], id="tab-sessions"):
                yield SessionsView(self.db_path, id="sessions-view")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#live DataTable", DataTable).focus()

    # --- views ------------------------------------------------------------------------

    @property
    def run_view(self) -> RunView:
        return self.query_one(RunView)

    @property
    def run_active(self) -> bool:
        return self.run_view.active

    def current_view(self) -> RunView | InstancesView | SessionsView:
        tab = self.query_one(TabbedContent).active
        return {"tab-run": self.run_view, "tab-instances": self.query_one(InstancesView),
                "tab-sessions": self.query_one(SessionsView)}[tab]

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab
        focus = {"tab-run": "#live DataTable", "tab-instances": "#inst-table", "tab-sessions": "#sessions"}[tab]
        self.query_one(focus).focus()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        if event.pane.id == "tab-run":
            self.call_after_refresh(self.run_view.redraw)  # it skips redraws while hidden
        if event.pane.id == "tab-instances" and not self.query_one(InstancesView).found:
            self.query_one(InstancesView).action_refresh()

    def on_run_view_finished(self, event: RunView.Finished) -> None:
        self.notify(f"session {event.session_id} {event.status}",
                    severity="information" if event.status == "completed" else "warning")
        self.query_one(SessionsView).action_refresh()

    # --- global actions -----------------------------------------------------------------

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_filter(self) -> None:
        view = self.current_view()
        if isinstance(view, RunView):
            self.notify("the Run view has nothing to filter; try Instances (2) or Sessions (3)")
        else:
            view.action_filter()

    def action_back(self) -> None:
        view = self.current_view()
        if not isinstance(view, RunView) and view.close_filter():
            return
        if isinstance(view, RunView):
            self.query_one("#live DataTable", DataTable).focus()

    def action_request_quit(self) -> None:
        """Quit; while a run is active, ask whether to tear its instances down or leave them running."""
        runner = self.run_view.runner
        if runner is None:
            self.exit(0)
            return

        def answered(answer: str | None) -> None:
            if answer is not None and self.run_view.runner is runner:
                worker = self.run_view.quit_run(leave=answer == "leave")
                self.run_worker(self._quit_after_run(worker), group="quit")
            elif answer is not None:
                self.exit(0)

        self.push_screen(QuitScreen(runner.session_id, [f"{i.name} ({i.labels.role})" for i in runner.ctx.live]),
                         answered)

    async def _quit_after_run(self, worker: Worker | None) -> None:
        """Exit once the session has ended and its store writer has committed."""
        if worker is not None:
            with suppress(WorkerCancelled, WorkerFailed):
                await worker.wait()
        self.exit(0)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every console action in the command palette (ctrl+p)."""
        yield from super().get_system_commands(screen)
        run, inst, sess = self.run_view, self.query_one(InstancesView), self.query_one(SessionsView)
        commands = [
            ("Run: start a run (suite, backend, host, overrides, stepping)", "s in the Run view", run.action_start),
            ("Run: next step", "n", run.action_next_step),
            ("Run: auto stepping", "a", run.action_auto),
            ("Run: pause (manual stepping)", "p", run.action_pause),
            ("Run: abort and tear down", "x (asks first)", run.action_abort),
            ("Instances: refresh", "r in the Instances view", inst.action_refresh),
            ("Instances: destroy selected", "d (asks first)", inst.action_destroy),
            ("Instances: clean up the session's stuck and orphaned instances", "c (asks first)", inst.action_cleanup),
            ("Sessions: refresh sessions and schema", "r in the Sessions view", sess.action_refresh),
            ("SQL: run the query", "ctrl+r / ctrl+enter", sess.action_run_sql),
            ("SQL: export the result", "e", sess.action_export),
            ("Help: every key", "?", self.action_help),
        ]
        for tab, title in TABS.items():
            yield SystemCommand(f"Go to {title}", f"view {title}", lambda t=tab: self.action_show_tab(t))
        for title, help_text, callback in commands:
            yield SystemCommand(title, help_text, callback)


def open_console(db_path: Path | None = None, backend: str = "process", host: str = "local") -> int:
    """Run the console until the user quits; returns the exit status."""
    return LabApp(db_path, backend, host).run() or 0
