"""The SQL pane of the Sessions+SQL view: query tabs, the prompts under them, and the keys of the workbench.

Each tab (labtui.ui.sql_tabs) holds a query's editor, schema tree, status line and Arrow-backed result;
this pane loads the schema for all of them, runs the current tab's query, and asks for what a key needs
(a path to open, save or export to, a word to find) in a prompt under the tabs.  Queries run read-only
in a thread worker and come back as one Arrow table of at most `row_cap` rows: `LabApp(sql_row_cap=...)`,
`:rows N`, or `$LABTUI_SQL_ROWS` (default 100,000).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Input

from labtui.ui.model.completion import Catalog
from labtui.ui.model.history import History
from labtui.ui.model.sql_query import ROW_CAP_ENV, SCHEMA_SQL, row_cap_from_env
from labtui.ui.model.sql_statements import statement_at
from labtui.ui.sql_editor import Completer, SqlEditor
from labtui.ui.sql_grid import grid_backend
from labtui.ui.sql_tabs import QueryTab, QueryTabs

if TYPE_CHECKING:
    import pyarrow as pa
    from rich.text import Text
    from textual import events

#: Below this many columns the SQL pane hides the schema tree (F2 shows it), so the editor keeps the width.
NARROW_PANE = 80
#: The first tab's query.
FIRST_QUERY = "select * from sessions order by 1 desc"
#: What each prompt asks for.
PROMPTS = {
    "export": "export to: path ending in .csv, .json or .parquet, then enter (esc: back)",
    "open": "open: path of a .sql file, then enter; it opens in a new tab (esc: back)",
    "save": "save to: path ending in .sql, then enter (esc: back)",
    "find": "find in the query: enter for the next match (F3 too), esc back to the editor",
}


class SqlPane(Vertical):
    """The query tabs, then the prompt a key opened, if any."""

    DEFAULT_CSS = """
    SqlPane.narrow #schema, SqlPane.schema-flip #schema { display: none; }
    SqlPane.narrow.schema-flip #schema { display: block; width: 1fr; }
    SqlPane .prompt { display: none; }
    SqlPane .prompt.shown { display: block; }
    """
    BINDINGS = [
        Binding("ctrl+r", "run_sql", "run SQL", priority=True),
        Binding("ctrl+enter", "run_sql", "run SQL", show=False, priority=True),
        Binding("ctrl+up", "history(-1)", "older query", show=False),
        Binding("ctrl+down", "history(1)", "newer query", show=False),
        Binding("f2", "toggle_schema", "schema", show=False, priority=True),
        Binding("f4", "full_screen", "full screen", priority=True),
        Binding("e", "export", "export"),
        Binding("r", "refresh", "refresh schema"),
        # the workbench's keys, as in Harlequin where the console leaves them free
        Binding("ctrl+n", "new_tab", "new tab", show=False, priority=True),
        Binding("ctrl+k", "next_tab", "next tab", show=False, priority=True),
        Binding("ctrl+g", "close_tab", "close tab", show=False, priority=True),
        Binding("ctrl+o", "open_file", "open file", show=False, priority=True),
        Binding("ctrl+s", "save_file", "save file", show=False, priority=True),
        Binding("f5", "format_sql", "format", show=False, priority=True),
        Binding("ctrl+f", "find", "find", show=False, priority=True),
        Binding("f3", "find_next", "find next", show=False, priority=True),
        Binding("f8", "history_list", "history", show=False, priority=True),
    ]

    def __init__(self, db_path: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.db_path = db_path
        self.history = History()
        #: The schema rows last read, for a tab opened after.
        self._schema: list[tuple[Any, ...]] = []
        #: What the path prompt is open for: "open" or "save".
        self._file_mode = "open"
        #: The word to find (ctrl+f, F3).
        self._needle = ""
        #: The tab that ctrl+g asked about (its query is not saved): ctrl+g again closes it.
        self._close_asked: QueryTab | None = None

    def compose(self) -> ComposeResult:
        with QueryTabs(id="queries") as tabs:
            pane_id, title = tabs.new_id()
            yield QueryTab(title, FIRST_QUERY, id=pane_id)
        yield Input(placeholder=PROMPTS["export"], id="export-path", classes="prompt")
        yield Input(id="file-path", classes="prompt")
        yield Input(placeholder=PROMPTS["find"], id="find", classes="prompt")
        yield Completer(id="completions")

    def on_mount(self) -> None:
        self.show_row_cap()  # the schema loads with the sessions
        self._warm_up()

    # --- the current tab ----------------------------------------------------------------------

    @property
    def tabs(self) -> QueryTabs:
        return self.query_one(QueryTabs)

    @property
    def tab(self) -> QueryTab:
        """The tab shown."""
        return self.tabs.current

    @property
    def editor(self) -> SqlEditor:
        return self.tab.editor

    @property
    def result(self) -> pa.Table | None:
        """The current tab's result (an Arrow table), None before its first."""
        return self.tab.result

    @property
    def catalog(self) -> Catalog:
        """Names for completion, loaded with the schema tree on every refresh."""
        return self.query_one(Completer).catalog

    @property
    def row_cap(self) -> int:
        cap = getattr(self.app, "sql_row_cap", None)
        return cap if isinstance(cap, int) and cap > 0 else row_cap_from_env()

    def show_row_cap(self) -> None:
        """A grid with no result yet says how many rows a result shows at most, and where that is set."""
        for tab in self.tabs.tabs:
            tab.show_row_cap(self.row_cap, ROW_CAP_ENV)

    def status(self, message: str | Text, error: bool = False) -> None:
        """Show a line under the current tab's editor; a str is plain text (an error may quote '[/]' from the data)."""
        self._close_asked = None
        self.tab.status(message, error)

    def focus_editor(self) -> None:
        """Focus the current tab's editor; its first query, while untouched, is selected, so that what the user
        types replaces it (typed after `4`, a query went in front of it)."""
        editor = self.editor
        if editor.text == FIRST_QUERY and not editor.selected_text:
            editor.select_all()
        self.app.set_focus(editor)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """ctrl+k in a prompt is the input's own (delete to the end)."""
        return not (action == "next_tab" and isinstance(self.app.focused, Input))

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW_PANE, "narrow")

    def action_full_screen(self) -> None:
        """The editor or the result grid (whichever has the focus; else the grid) over the whole screen, and back
        (f4 again, or esc)."""
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        editor, grid = self.editor, self.tab.grid
        target = editor if self.app.focused is editor else grid
        target.focus()
        screen.maximize(target, container=False)

    def action_toggle_schema(self) -> None:
        """Show the schema tree where it is hidden (a narrow pane), hide it where it is shown."""
        self.toggle_class("schema-flip")

    @work(thread=True, group="warm-up", exit_on_error=False)
    def _warm_up(self) -> None:
        """Measure a tiny table once, so that the first real result does not pay for Arrow's compute set-up."""
        import pyarrow as pa

        grid_backend(pa.table({"s": ["a", None], "i": [1, 2], "f": [0.5, None]}))

    # --- schema -------------------------------------------------------------------------------

    def action_refresh(self) -> None:
        if not self.db_path.exists():
            return
        self._load_schema()

    @work(thread=True, exclusive=True, group="schema", exit_on_error=False)
    def _load_schema(self) -> None:
        from labtui.store import run_sql

        try:
            schema = run_sql(self.db_path, SCHEMA_SQL, limit=10_000)
        except Exception as exc:  # shown, never raised into the UI
            self.app.call_from_thread(self.status, f"cannot read the schema: {exc}", True)
            return
        self.app.call_from_thread(self._show_schema, schema.rows)

    def _show_schema(self, rows: list[tuple[Any, ...]]) -> None:
        self._schema = rows
        self.query_one(Completer).catalog = Catalog.from_rows(rows)
        for tab in self.tabs.tabs:
            tab.schema.show(rows)

    # --- running and the history --------------------------------------------------------------

    def action_run_sql(self) -> None:
        """Run the editor's selection, else the statement under its cursor, read-only in a thread (at most row_cap rows)."""
        editor = self.editor
        offset = len(editor.get_text_range((0, 0), editor.cursor_location))
        sql = editor.selected_text.strip() or statement_at(editor.text, offset)
        if not sql:
            self.status("nothing to run", error=True)
            return
        self.history.add(sql)
        self._close_asked = None
        self.tab.run(self.db_path, sql, self.row_cap)

    def action_history(self, step: int) -> None:
        query = self.history.older() if step < 0 else self.history.newer()
        if query is not None:
            self.editor.text = query

    def action_history_list(self) -> None:
        """F8: the history to filter and pick from; the query picked replaces the editor's text (ctrl+z undoes)."""
        if not self.history.items:
            self.status("no query in the history yet: ctrl+r runs one")
            return
        from labtui.ui.sql_history import HistoryScreen

        self.app.push_screen(HistoryScreen(self.history), self._load_picked)

    def _load_picked(self, query: str | None) -> None:
        if query is None:
            return
        self.editor.replace_all(query)
        self.focus_editor()
        self.status("loaded from the history (ctrl+z brings the text before back)")

    # --- tabs ---------------------------------------------------------------------------------

    async def action_new_tab(self) -> None:
        await self._open_tab("")

    async def _open_tab(self, text: str, path: Path | None = None) -> QueryTab:
        """A new tab after the current one, shown, with the focus in its editor."""
        tabs = self.tabs
        pane_id, title = tabs.new_id()
        tab = QueryTab(path.name if path else title, text, path=path, id=pane_id)
        await tabs.add(tab)
        tab.schema.show(self._schema)
        tab.show_row_cap(self.row_cap, ROW_CAP_ENV)
        self.focus_editor()
        return tab

    def action_next_tab(self) -> None:
        self.tabs.next_tab()
        self.focus_editor()

    async def action_close_tab(self) -> None:
        """Close the current tab; one whose query is not saved only on a second ctrl+g."""
        tabs, tab = self.tabs, self.tab
        if tabs.tab_count < 2:
            self.status("the last query tab stays open (ctrl+n opens another)")
            return
        if tab.unsaved and self._close_asked is not tab:
            self.status("this tab's query is not saved: ctrl+g again closes it, ctrl+s saves it", error=True)
            self._close_asked = tab
            return
        self._close_asked = None
        await tabs.close(tab)
        self.focus_editor()

    # --- files --------------------------------------------------------------------------------

    def action_open_file(self) -> None:
        self._ask_path("open", "")

    def action_save_file(self) -> None:
        self._ask_path("save", str(self.tab.path or ""))

    def _ask_path(self, mode: str, value: str) -> None:
        self._file_mode = mode
        box = self.query_one("#file-path", Input)
        box.placeholder = PROMPTS[mode]
        box.value = value
        self._show_prompt(box)

    @on(Input.Submitted, "#file-path")
    def _file_submitted(self, event: Input.Submitted) -> None:
        """Open or save the typed path; on an error the status says why and the box stays, as typed."""
        from labtui.ui.model.sql_files import QueryFileError, query_path, read_query, write_query

        if not event.value.strip():
            self.status("type a path, or esc", error=True)
            return
        path = query_path(event.value)
        try:
            if self._file_mode == "open":
                text = read_query(path)
            else:
                write_query(path, self.editor.text)
        except QueryFileError as exc:
            self.status(str(exc), error=True)
            return
        event.input.remove_class("shown")
        if self._file_mode == "open":
            # from the app's loop, as ctrl+n: awaited in this handler (the pane's loop, which the tab mounts under)
            # the new tab showed only once the next key came
            self.app.call_later(self._open_file_tab, text, path)
        else:
            self.tab.saved(path)
            self.focus_editor()
            self.status(f"saved to {path}")

    async def _open_file_tab(self, text: str, path: Path) -> None:
        await self._open_tab(text, path)
        self.status(f"opened {path} ({len(text.splitlines())} lines)")

    # --- format and find ----------------------------------------------------------------------

    def action_format_sql(self) -> None:
        """Pretty-print the query (sqlglot); one that does not parse stays as it is, and the status says why."""
        from labtui.ui.model.sql_format import FormatError, format_sql

        editor = self.editor
        try:
            text = format_sql(editor.text)
        except FormatError as exc:
            self.status(f"not formatted, left as it is: {exc}", error=True)
            return
        if text != editor.text:
            editor.replace_all(text)
        self.status("formatted (ctrl+z undoes)")

    def action_find(self) -> None:
        box = self.query_one("#find", Input)
        box.value = self._needle
        self._show_prompt(box)

    def action_find_next(self) -> None:
        if not self._needle:
            self.action_find()
            return
        self._find(again=True)

    @on(Input.Changed, "#find")
    def _find_typed(self, event: Input.Changed) -> None:
        self._needle = event.value
        self._find(again=False)

    @on(Input.Submitted, "#find")
    def _find_again(self) -> None:
        self._find(again=True)

    def _find(self, *, again: bool) -> None:
        """Select the next match in the editor and say how many there are."""
        from labtui.ui.model.text_find import count_matches

        needle = self._needle
        if not needle:
            return
        editor = self.editor
        if not editor.select_next(needle, again=again):
            self.status(f"no match for {needle!r}", error=True)
            return
        count = count_matches(editor.text, needle)
        self.status(f"{count} match{'' if count == 1 else 'es'} for {needle!r} (enter or F3: next)")

    # --- export -------------------------------------------------------------------------------

    def action_export(self) -> None:
        if self.result is None:
            self.status("run a query first, then export its result", error=True)
            return
        self._show_prompt(self.query_one("#export-path", Input))

    @on(Input.Submitted, "#export-path")
    def _export_to(self, event: Input.Submitted) -> None:
        """Export to the typed path; a name that asks for no known format is refused and the box stays."""
        from labtui.core.outputs import ExportError
        from labtui.ui.model.query_export import export_format

        name = event.value.strip()
        if self.result is not None and name:
            try:
                export_format(Path(name))
            except ExportError as exc:
                self.status(str(exc), error=True)
                return
            self._export(self.tab, self.result, Path(name))
        event.input.remove_class("shown")
        self.tab.grid.focus()

    @work(thread=True, group="export", exit_on_error=False)
    def _export(self, tab: QueryTab, table: pa.Table, path: Path) -> None:
        from labtui.ui.model.query_export import export_arrow

        try:
            written = export_arrow(table, path)
        except Exception as exc:  # a bad path or an unconvertible column
            self.app.call_from_thread(tab.status, f"export failed: {exc}", True)
            return
        self.app.call_from_thread(tab.status, f"exported {table.num_rows:,} row(s) to {written}")

    # --- prompts and back ---------------------------------------------------------------------

    def _show_prompt(self, box: Input) -> None:
        """Show `box` (one prompt at a time) and give it the focus."""
        for other in self.query(".prompt"):
            other.set_class(other is box, "shown")
        self.app.set_focus(box)

    def close(self) -> bool:
        """Close a prompt (back to the editor, or the grid from an export) or leave the editor; True when something
        happened."""
        for box in self.query(".prompt.shown"):
            box.remove_class("shown")
            if box.id == "export-path":
                self.tab.grid.focus()
            else:
                self.focus_editor()
            return True
        if self.editor.has_focus:
            self.tab.grid.focus()
            return True
        return False
