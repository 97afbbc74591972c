"""The Sessions+SQL view: past sessions, replay of one, and a read-only SQL editor (labtui.ui.sql_view).

Everything here reads the store through labtui.store's read-only API, in
thread workers so the UI never waits on DuckDB.  While this console runs a
session its writer holds the file, so reads are refused until the run ends.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import polars as pl
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import DataTable, Input

from labtui.figures.table import session_figures
from labtui.store import list_sessions
from labtui.store.overlay import behind_note
from labtui.store.reader import marked_status
from labtui.ui.model.format import cell, plain
from labtui.ui.model.query_export import open_in_desktop
from labtui.ui.model.replay import replay_availability
from labtui.ui.panes import SlowdownPanel
from labtui.ui.rowtable import RowTable
from labtui.ui.sql_editor import SqlEditor
from labtui.ui.sql_view import SqlPane
from labtui.ui.tablesync import sync_rows
from labtui.ui.tabs import ConsoleSettings, PaletteCommand


class SessionsView(Horizontal):
    """Past sessions on the left (open one to replay it), SQL on the right."""

    DEFAULT_CSS = """
    SessionsView #sess-left { width: 45%; }
    SessionsView #sessions { height: 1fr; border: round $primary; }
    SessionsView #replay { height: 2fr; }
    SessionsView .hidden-input { display: none; }
    SessionsView .hidden-input.shown { display: block; }
    """
    class ShowInstances(Message):
        """`i`: the app shows the Instances view filtered to this session's instances."""

        def __init__(self, session_id: str) -> None:
            super().__init__()
            self.session_id = session_id

    BINDINGS = [
        Binding("r", "refresh", "refresh"),
        Binding("o", "report", "open report"),
        Binding("i", "instances", "its instances"),
    ]

    def __init__(self, db_path: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.db_path = db_path
        self.sessions = pl.DataFrame()
        self.filter_text = ""

    # --- what the console asks of every view (labtui.ui.tabs.LabView) -------------------------

    #: The SQL editor takes typed text.
    TEXT_ENTRY: ClassVar[tuple[type, ...]] = (SqlEditor,)

    @classmethod
    def for_console(cls, console: ConsoleSettings, *, id: str) -> SessionsView:
        return cls(console.db_path, id=id)

    def tab_shown(self) -> None:
        self.action_refresh()  # the store is readable during a run too: show what it holds now

    def palette(self) -> list[PaletteCommand]:
        return [
            ("Sessions: refresh sessions and schema", "r in the Sessions view", self.action_refresh),
            ("SQL: run the query", "ctrl+r / ctrl+enter", self.sql.action_run_sql),
            ("SQL: export the result", "e", self.sql.action_export),
            ("SQL: new query tab", "ctrl+n", self.sql.action_new_tab),
            ("SQL: next query tab", "ctrl+k", self.sql.action_next_tab),
            ("SQL: close the query tab", "ctrl+g", self.sql.action_close_tab),
            ("SQL: open a .sql file in a new tab", "ctrl+o", self.sql.action_open_file),
            ("SQL: save the query to a .sql file", "ctrl+s", self.sql.action_save_file),
            ("SQL: format the query", "F5", self.sql.action_format_sql),
            ("SQL: find in the query", "ctrl+f, then F3", self.sql.action_find),
            ("SQL: pick a query from the history", "F8", self.sql.action_history_list),
        ]

    def compose(self) -> ComposeResult:
        with Vertical(id="sess-left"):
            yield Input(placeholder="filter sessions", id="sess-filter", classes="hidden-input")
            yield RowTable(id="sessions")
            yield SlowdownPanel(id="replay")
        yield SqlPane(self.db_path, id="sess-right")

    @property
    def sql(self) -> SqlPane:
        return self.query_one(SqlPane)

    def on_mount(self) -> None:
        self.query_one("#sessions").border_title = "sessions (enter opens)"
        self.action_refresh()

    def status(self, message: str, error: bool = False) -> None:
        self.sql.status(plain(message), error)  # ids, paths and errors are shown as written, never as markup

    # --- sessions and schema ------------------------------------------------------------

    def action_refresh(self) -> None:
        if not self.db_path.exists():
            self.status(f"no store yet at {self.db_path}: run a session first")
            return
        self._load_sessions()
        self.sql.action_refresh()

    @work(thread=True, exclusive=True, group="sessions", exit_on_error=False)
    def _load_sessions(self) -> None:
        try:
            frame = list_sessions(self.db_path)
        except Exception as exc:  # any store failure is shown, never raised into the UI
            self.app.call_from_thread(self.status, f"cannot read the store: {exc}", True)
            return
        self.app.call_from_thread(self._show_sessions, frame)

    def _show_sessions(self, frame: pl.DataFrame) -> None:
        pending = frame.filter(~pl.col("in_store"))["session_id"].to_list()
        frame = marked_status(frame)
        # the id and its status first: the list is 34 columns wide at 80x24
        frame = self.sessions = frame.select("session_id", "status", pl.exclude("session_id", "status"))
        if pending:
            self.status(f"{frame.height} session(s) · *{behind_note(pending)}")
        else:
            self.status(f"{frame.height} session(s) · ctrl+r runs the query (read-only)")
        table = self.query_one("#sessions", DataTable)
        if [str(c.label) for c in table.columns.values()] != frame.columns:
            table.clear(columns=True)
            for name in frame.columns:
                table.add_column(plain(name), key=name)
        self.render_sessions()

    def render_sessions(self) -> None:
        if self.sessions.is_empty() or "session_id" not in self.sessions.columns:
            rows: dict[str, tuple[Text, ...]] = {}
        else:
            needle = self.filter_text.lower()
            rows = {}
            for row in self.sessions.iter_rows(named=True):
                texts = [cell(v) for v in row.values()]
                if not needle or needle in " ".join(texts).lower():
                    rows[str(row["session_id"])] = tuple(plain(t) for t in texts)  # a DataTable reads str as markup
        with self.app.batch_update():
            sync_rows(self.query_one("#sessions", DataTable), rows)

    # --- replay -------------------------------------------------------------------------

    @on(DataTable.RowSelected, "#sessions")
    def _open(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.open_session(event.row_key.value)

    def open_session(self, session_id: str) -> None:
        self.status(f"opening session {session_id}...")
        self._replay(session_id)

    @work(thread=True, exclusive=True, group="replay", exit_on_error=False)
    def _replay(self, session_id: str) -> None:
        try:
            slow = session_figures(self.db_path, session_id)
            avail = replay_availability(self.db_path, session_id)
        except Exception as exc:  # shown in the status line
            self.app.call_from_thread(self.status, f"cannot open {session_id}: {exc}", True)
            return
        self.app.call_from_thread(self._show_replay, session_id, slow, avail)

    def _show_replay(self, session_id: str, slow: pl.DataFrame, avail: pl.DataFrame) -> None:
        panel = self.query_one("#replay", SlowdownPanel)
        panel.border_title = plain(f"session {session_id}")
        panel.show(slow, avail)
        self.status(f"session {session_id}: {slow.height} slowdown row(s)")

    # --- report -----------------------------------------------------------------------------

    def cursor_session(self) -> str | None:
        """The id of the session under the cursor, None when the list is empty."""
        table = self.query_one("#sessions", DataTable)
        if table.row_count == 0:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def action_instances(self) -> None:
        """The Instances view, filtered to the instances of the session under the cursor."""
        session_id = self.cursor_session()
        if session_id is None:
            self.status("no session to show the instances of", error=True)
            return
        self.post_message(self.ShowInstances(session_id))

    def action_report(self) -> None:
        """Write the HTML report of the session under the cursor and open it where a desktop is."""
        session_id = self.cursor_session()
        if session_id is None:
            self.status("no session to report on", error=True)
            return
        self.status(f"drawing the report of {session_id}...")
        self._report(session_id)

    @work(thread=True, exclusive=True, group="report", exit_on_error=False)
    def _report(self, session_id: str) -> None:
        from labtui.report.build import write_report

        try:
            (page,) = write_report(self.db_path, [session_id], Path("reports") / session_id, "html")
        except Exception as exc:  # shown in the status line
            self.app.call_from_thread(self.status, f"report of {session_id} failed: {exc}", True)
            return
        opened = open_in_desktop(page)
        self.app.call_from_thread(self.status, f"report: {page.resolve()}" + (" (opened)" if opened else ""))

    # --- filter and back ---------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#sess-filter", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Changed, "#sess-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        self.render_sessions()

    @on(Input.Submitted, "#sess-filter")
    def _filter_done(self) -> None:
        self.query_one("#sessions", DataTable).focus()

    def close_filter(self) -> bool:
        """Close an open filter or export box, or leave the editor; True when something closed."""
        if self.sql.close():
            return True
        box = self.query_one("#sess-filter", Input)
        if box.has_class("shown"):
            if not box.value:
                box.remove_class("shown")
            self.query_one("#sessions", DataTable).focus()
            return True
        return False
