"""The Sessions+SQL view: past sessions, replay of one, and a read-only SQL editor.

Everything here reads the store through labtui.store's read-only API, in
thread workers so the UI never waits on DuckDB.  While this console runs a
session its writer holds the file, so reads are refused until the run ends.
"""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Input, Static, TextArea, Tree

from labtui.store import QueryResult, list_sessions, run_sql, slowdown_frame
from labtui.ui.export import export, open_in_desktop, result_frame
from labtui.ui.format import cell, count_rows
from labtui.ui.history import History
from labtui.ui.panes import SlowdownPanel
from labtui.ui.replay import replay_availability
from labtui.ui.tablesync import sync_rows

ROW_CAP = 500
SCHEMA_SQL = (
    "select table_name, column_name, data_type from information_schema.columns "
    "where table_schema = 'main' order by table_name, ordinal_position"
)
BUSY = "a run in this console is writing the store (DuckDB allows one writer); reads resume when it ends"


class SessionsView(Horizontal):
    """Past sessions on the left (open one to replay it), SQL on the right."""

    DEFAULT_CSS = """
    SessionsView #sess-left { width: 45%; }
    SessionsView #sessions { height: 1fr; border: round $primary; }
    SessionsView #replay { height: 2fr; }
    SessionsView #editor-row { height: 10; }
    SessionsView #sql { width: 1fr; }
    SessionsView #schema { width: 32; border: round $secondary; }
    SessionsView #sql-status { height: 1; padding: 0 1; }
    SessionsView #sql-status.error { color: $error; text-style: bold; }
    SessionsView #result { height: 1fr; border: round $secondary; }
    SessionsView .hidden-input { display: none; }
    SessionsView .hidden-input.shown { display: block; }
    """
    BINDINGS = [
        Binding("r", "refresh", "refresh"),
        Binding("ctrl+r", "run_sql", "run SQL", priority=True),
        Binding("ctrl+enter", "run_sql", "run SQL", show=False, priority=True),
        Binding("ctrl+up", "history(-1)", "older query", show=False, priority=True),
        Binding("ctrl+down", "history(1)", "newer query", show=False, priority=True),
        Binding("e", "export", "export"),
        Binding("o", "report", "open report"),
    ]

    def __init__(self, db_path: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.db_path = db_path
        self.history = History()
        self.result: QueryResult | None = None
        self.sessions = pl.DataFrame()
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        with Vertical(id="sess-left"):
            yield Input(placeholder="filter sessions", id="sess-filter", classes="hidden-input")
            yield DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
            yield SlowdownPanel(id="replay")
        with Vertical(id="sess-right"):
            with Horizontal(id="editor-row"):
                yield TextArea.code_editor("select * from sessions order by 1 desc", id="sql")
                yield Tree("store", id="schema")
            yield Static("ctrl+r runs the query (read-only)", id="sql-status")
            yield Input(placeholder="export to: path ending in .csv or .parquet, then Enter", id="export-path",
                        classes="hidden-input")
            yield DataTable(id="result", zebra_stripes=True)

    def on_mount(self) -> None:
        editor = self.query_one("#sql", TextArea)
        if "sql" in editor.available_languages:
            editor.language = "sql"
        self.query_one("#sessions").border_title = "sessions (enter opens)"
        self.query_one("#schema").border_title = "schema"
        self.query_one("#result").border_title = "result"
        self.action_refresh()

    def busy(self) -> bool:
        return bool(getattr(self.app, "run_active", False))

    def status(self, message: str, error: bool = False) -> None:
        box = self.query_one("#sql-status", Static)
        box.set_class(error, "error")
        box.update(message)

    # --- sessions and schema ------------------------------------------------------------

    def action_refresh(self) -> None:
        if self.busy():
            self.status(BUSY, error=True)
            return
        if not self.db_path.exists():
            self.status(f"no store yet at {self.db_path}: run a session first")
            return
        self._load_sessions()

    @work(thread=True, exclusive=True, group="sessions", exit_on_error=False)
    def _load_sessions(self) -> None:
        try:
            frame = list_sessions(self.db_path)
            schema = run_sql(self.db_path, SCHEMA_SQL, limit=10_000)
        except Exception as exc:  # any store failure is shown, never raised into the UI
            self.app.call_from_thread(self.status, f"cannot read the store: {exc}", True)
            return
        self.app.call_from_thread(self._show_sessions, frame, schema)

    def _show_sessions(self, frame: pl.DataFrame, schema: QueryResult) -> None:
        self.sessions = frame
        self.status(f"{frame.height} session(s) · ctrl+r runs the query (read-only)")
        table = self.query_one("#sessions", DataTable)
        if [str(c.label) for c in table.columns.values()] != frame.columns:
            table.clear(columns=True)
            for name in frame.columns:
                table.add_column(name, key=name)
        self.render_sessions()
        tree = self.query_one("#schema", Tree)
        tree.clear()
        tree.root.expand()
        nodes: dict[str, object] = {}
        for table_name, column, dtype in schema.rows:
            if table_name not in nodes:
                nodes[table_name] = tree.root.add(table_name, data=table_name)
            nodes[table_name].add_leaf(f"{column}  [dim]{dtype}[/]", data=column)  # type: ignore[attr-defined]

    def render_sessions(self) -> None:
        if self.sessions.is_empty() or "session_id" not in self.sessions.columns:
            rows = {}
        else:
            needle = self.filter_text.lower()
            rows = {}
            for row in self.sessions.iter_rows(named=True):
                cells = tuple(cell(v) for v in row.values())
                if not needle or needle in " ".join(cells).lower():
                    rows[str(row["session_id"])] = cells
        with self.app.batch_update():
            sync_rows(self.query_one("#sessions", DataTable), rows)

    @on(Tree.NodeSelected, "#schema")
    def _insert_name(self, event: Tree.NodeSelected) -> None:
        if event.node.data:
            self.query_one("#sql", TextArea).insert(str(event.node.data))

    # --- replay -------------------------------------------------------------------------

    @on(DataTable.RowSelected, "#sessions")
    def _open(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self.open_session(event.row_key.value)

    def open_session(self, session_id: str) -> None:
        if self.busy():
            self.status(BUSY, error=True)
            return
        self.status(f"opening session {session_id}...")
        self._replay(session_id)

    @work(thread=True, exclusive=True, group="replay", exit_on_error=False)
    def _replay(self, session_id: str) -> None:
        try:
            slow = slowdown_frame(self.db_path, session_id)
            avail = replay_availability(self.db_path, session_id)
        except Exception as exc:  # shown in the status line
            self.app.call_from_thread(self.status, f"cannot open {session_id}: {exc}", True)
            return
        self.app.call_from_thread(self._show_replay, session_id, slow, avail)

    def _show_replay(self, session_id: str, slow: pl.DataFrame, avail: pl.DataFrame) -> None:
        panel = self.query_one("#replay", SlowdownPanel)
        panel.border_title = f"session {session_id}"
        panel.show(slow, avail)
        self.status(f"session {session_id}: {slow.height} slowdown row(s)")

    # --- report -----------------------------------------------------------------------------

    def action_report(self) -> None:
        """Write the HTML report of the session under the cursor and open it where a desktop is."""
        table = self.query_one("#sessions", DataTable)
        if table.row_count == 0:
            self.status("no session to report on", error=True)
            return
        if self.busy():
            self.status(BUSY, error=True)
            return
        session_id = str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)
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

    # --- SQL ------------------------------------------------------------------------------

    def action_run_sql(self) -> None:
        """Run the editor's SQL read-only in a thread; show at most 500 rows."""
        sql = self.query_one("#sql", TextArea).text.strip()
        if not sql:
            self.status("nothing to run", error=True)
            return
        if self.busy():
            self.status(BUSY, error=True)
            return
        self.history.add(sql)
        self.status("running...")
        self._query(sql)

    @work(thread=True, exclusive=True, group="sql", exit_on_error=False)
    def _query(self, sql: str) -> None:
        started = time.perf_counter()
        try:
            result = run_sql(self.db_path, sql, limit=ROW_CAP)
        except Exception as exc:  # StoreError for refused writes; shown, never raised
            self.app.call_from_thread(self.status, f"error: {exc}", True)
            return
        self.app.call_from_thread(self._show_result, result, time.perf_counter() - started)

    def _show_result(self, result: QueryResult, seconds: float) -> None:
        self.result = result
        table = self.query_one("#result", DataTable)
        with self.app.batch_update():
            table.clear(columns=True)
            for name in result.columns:
                table.add_column(name)
            table.add_rows([tuple(cell(v) for v in row) for row in result.rows])
        self.status(f"{count_rows(len(result.rows), result.truncated)} · {seconds * 1000:.0f} ms")

    def action_history(self, step: int) -> None:
        query = self.history.older() if step < 0 else self.history.newer()
        if query is not None:
            self.query_one("#sql", TextArea).text = query

    # --- export -----------------------------------------------------------------------------

    def action_export(self) -> None:
        if self.result is None:
            self.status("run a query first, then export its result", error=True)
            return
        box = self.query_one("#export-path", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Submitted, "#export-path")
    def _export_to(self, event: Input.Submitted) -> None:
        if self.result is not None and event.value.strip():
            self._export(self.result, Path(event.value.strip()))
        event.input.remove_class("shown")
        self.query_one("#result", DataTable).focus()

    @work(thread=True, group="export", exit_on_error=False)
    def _export(self, result: QueryResult, path: Path) -> None:
        try:
            written = export(result_frame(result.columns, result.rows), path)
        except Exception as exc:  # a bad path or an unconvertible column
            self.app.call_from_thread(self.status, f"export failed: {exc}", True)
            return
        self.app.call_from_thread(self.status, f"exported {len(result.rows)} row(s) to {written}")

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
        for box in self.query(".hidden-input.shown").results(Input):
            if box.id == "export-path" or not box.value:
                box.remove_class("shown")
            self.query_one("#sessions", DataTable).focus()
            return True
        if self.query_one("#sql", TextArea).has_focus:
            self.query_one("#result", DataTable).focus()
            return True
        return False
