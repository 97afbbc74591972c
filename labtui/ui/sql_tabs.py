"""Query tabs: each open query with its own editor, schema tree, status line, result and file.

A result stays with the tab that ran it (its worker answers to that tab, whichever tab shows
meanwhile), so switching tabs keeps every result as it was.  The row of tabs shows once there
are two, so one query has the pane's full height as before.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane, TextArea, Tree

from labtui.ui.model.sql_query import cap_line, count_line, query_arrow
from labtui.ui.sql_editor import SqlEditor
from labtui.ui.sql_grid import grid_backend, result_grid
from labtui.ui.sql_schema import SchemaTree

if TYPE_CHECKING:
    import pyarrow as pa
    from textual_fastdatatable import ArrowBackend


class QueryTab(TabPane):
    """One query: the editor with the schema tree beside it, the status line, then the result grid."""

    DEFAULT_CSS = """
    QueryTab { height: 1fr; }
    QueryTab #editor-row { height: 10; }
    QueryTab #sql { width: 1fr; }
    QueryTab #schema { width: 32; border: round $secondary; }
    QueryTab #sql-status { height: auto; max-height: 3; padding: 0 1; }  /* a refusal wraps, not cut */
    QueryTab #sql-status.error { color: $error; text-style: bold; }
    QueryTab #result { height: 1fr; max-height: 100%; border: round $secondary; }
    QueryTab #result:focus { border: round $accent; }
    """
    # a code editor's own esc only moves to the next widget; the footer says where this one goes while typing
    BINDINGS = [Binding("escape", "leave", "to results", priority=True)]

    def __init__(self, title: str, text: str = "", *, path: Path | None = None, id: str | None = None) -> None:
        super().__init__(title, id=id)
        self._text = text
        #: The file the query was opened from or saved to, and the text it holds.
        self.path = path
        self.saved_text = text
        #: The last result shown (an Arrow table).
        self.result: pa.Table | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="editor-row"):
            yield SqlEditor.code_editor(self._text, id="sql")
            yield SchemaTree(id="schema")
        yield Static("ctrl+r runs the query (read-only)", id="sql-status")
        yield result_grid()

    def on_mount(self) -> None:
        if "sql" in self.editor.available_languages:
            self.editor.language = "sql"
        self.grid.border_title = "result"

    @property
    def editor(self) -> SqlEditor:
        return self.query_one("#sql", SqlEditor)

    @property
    def schema(self) -> SchemaTree:
        return self.query_one("#schema", SchemaTree)

    @property
    def grid(self) -> Widget:
        return self.query_one("#result")

    @property
    def unsaved(self) -> bool:
        """Whether the editor holds text that is in no file and was not there when the tab opened."""
        text = self.editor.text
        return bool(text.strip()) and text != self.saved_text

    def saved(self, path: Path) -> None:
        """The editor's text is now in `path`: the tab is named after it."""
        self.path, self.saved_text = path, self.editor.text
        tabs = next((a for a in self.ancestors if isinstance(a, TabbedContent)), None)
        if tabs is not None and self.id:
            tabs.get_tab(self.id).label = Text(path.name)

    def show_row_cap(self, cap: int, env: str) -> None:
        """Before the first result the grid's border says how many rows a result shows at most, and where that is set."""
        if self.result is None:
            self.grid.border_subtitle = f"row cap {cap:,} (:rows N, ${env})"

    def status(self, message: str | Text, error: bool = False) -> None:
        """Show a line under the editor; a str is plain text (an error may quote '[/]' from the data)."""
        if not self.is_attached:  # closed while its query ran
            return
        box = self.query_one("#sql-status", Static)
        box.set_class(error, "error")
        box.update(Text(message) if isinstance(message, str) else message)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """esc leaves the editor here; elsewhere it is the console's (back)."""
        return action != "leave" or self.editor.has_focus

    def action_leave(self) -> None:
        self.grid.focus()

    @on(Tree.NodeSelected, "#schema")
    def _insert_name(self, event: Tree.NodeSelected[str]) -> None:
        if event.node.data:
            self.query_one("#sql", TextArea).insert(str(event.node.data))

    # --- running ------------------------------------------------------------------------------

    def run(self, db: Path, sql: str, cap: int) -> None:
        """Run `sql` read-only in a thread (at most `cap` rows); the result comes back to this tab."""
        self.status("running...")
        self._query(db, sql, cap)

    @work(thread=True, exclusive=True, group="sql", exit_on_error=False)
    def _query(self, db: Path, sql: str, cap: int) -> None:
        started = time.perf_counter()
        try:
            table, truncated = query_arrow(db, sql, cap)
            backend = grid_backend(table)
        except Exception as exc:  # StoreError for refused writes; shown, never raised
            self.app.call_from_thread(self.status, f"error: {exc}", True)
            return
        # call_from_thread takes Callable[..., T | Awaitable[T]]: mypy solves T to Never for a coroutine function
        self.app.call_from_thread(self.show_result, backend, truncated, cap,  # type: ignore[arg-type]
                                  time.perf_counter() - started)

    async def show_result(self, backend: ArrowBackend, truncated: bool, cap: int, seconds: float | None = None) -> None:
        """Show a result (see labtui.ui.sql_grid.grid_backend): a new grid widget over it, which draws only the
        rows on screen."""
        if not self.is_attached:
            return
        table = backend.source_data
        self.result = table
        old = self.grid
        had_focus = old.has_focus
        grid = result_grid(backend, table.column_names)
        grid.border_title = "result"
        grid.border_subtitle = cap_line(table.num_rows, truncated, cap)
        with self.app.batch_update():
            await old.remove()
            await self.mount(grid)
        if had_focus:
            grid.focus()
        timing = f" · {seconds * 1000:.0f} ms" if seconds is not None else ""
        self.status(f"{count_line(table.num_rows, truncated)}{timing}")


class QueryTabs(TabbedContent):
    """The open queries, one tab each; `next_tab`, `add` and `close` keep at least one."""

    DEFAULT_CSS = """
    QueryTabs { height: 1fr; }
    QueryTabs > ContentSwitcher { height: 1fr; }
    QueryTabs > ContentTabs { height: 1; }  /* the names only: the active one is bright, the underline is cut */
    QueryTabs.single > ContentTabs { display: none; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="single")
        self._made = 0

    def new_id(self) -> tuple[str, str]:
        """A fresh (pane id, title) for the next tab: query-2, "query 2"."""
        self._made += 1
        return f"query-{self._made}", f"query {self._made}"

    @property
    def current(self) -> QueryTab:
        return cast(QueryTab, self.active_pane)

    @property
    def tabs(self) -> list[QueryTab]:
        return list(self.query(QueryTab))

    async def add(self, tab: QueryTab) -> None:
        """Open `tab` after the current one and show it."""
        await self.add_pane(tab, after=self.active_pane)
        self.active = tab.id or ""
        self.set_class(self.tab_count < 2, "single")

    async def close(self, tab: QueryTab) -> None:
        """Close `tab` (never the last) and show its neighbour."""
        ids = [t.id for t in self.tabs]
        if len(ids) < 2 or tab.id not in ids:
            return
        neighbour = ids[ids.index(tab.id) - 1] if ids.index(tab.id) else ids[1]
        self.active = neighbour or ""
        await self.remove_pane(tab.id or "")
        self.set_class(self.tab_count < 2, "single")

    def next_tab(self) -> None:
        """Show the next tab (after the last, the first)."""
        ids = [t.id for t in self.tabs]
        self.active = ids[(ids.index(self.active) + 1) % len(ids)] or ""

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A query tab is no console tab: the console's own tabs must not hear of it."""
        event.stop()
