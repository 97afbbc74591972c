"""The SQL pane of the Sessions+SQL view: a read-only editor, the schema browser and an Arrow-backed result grid.

Queries run read-only in a thread worker and come back as one Arrow table of at
most `row_cap` rows (DuckDB reads one row more to know whether there were
more).  The grid is textual-fastdatatable's DataTable over that table: it
renders only the rows on screen, so 100,000 rows paint as fast as 100.  The
row cap comes from `LabApp(sql_row_cap=...)` or `$LABTUI_SQL_ROWS` (default
100,000), and the grid's bottom border states it.
"""

from __future__ import annotations

import os
import re
import time
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, OptionList, Static, TextArea, Tree

from labtui.core.units import MISSING
from labtui.ui.model.completion import Catalog, Completion, complete, word_before
from labtui.ui.model.history import History
from labtui.ui.model.sql_statements import statement_at

if TYPE_CHECKING:
    import pyarrow as pa
    from textual import events
    from textual.widget import Widget
    from textual_fastdatatable import ArrowBackend, DataTable

#: Rows a query shows at most unless $LABTUI_SQL_ROWS or LabApp(sql_row_cap=...) says otherwise.
DEFAULT_ROW_CAP = 100_000
#: Below this many columns the SQL pane hides the schema tree (F2 shows it), so the editor keeps the width.
NARROW_PANE = 80
ROW_CAP_ENV = "LABTUI_SQL_ROWS"
SCHEMA_SQL = (
    "select table_name, column_name, data_type from information_schema.columns "
    "where table_schema = 'main' order by table_name, ordinal_position"
)


def row_cap_from_env(default: int = DEFAULT_ROW_CAP) -> int:
    """$LABTUI_SQL_ROWS as a positive integer, else default (a bad value is ignored)."""
    try:
        value = int(os.environ.get(ROW_CAP_ENV, ""))
    except ValueError:
        return default
    return value if value > 0 else default


def count_line(shown: int, truncated: bool) -> str:
    """'1 row', '12,345 rows', or '100,000 of more than 100,000 rows' when capped."""
    if truncated:
        return f"{shown:,} of more than {shown:,} rows"
    return "1 row" if shown == 1 else f"{shown:,} rows"


def cap_line(shown: int, truncated: bool, cap: int) -> str:
    """The grid's footer: the count and the row cap, and how to change it."""
    return f"{count_line(shown, truncated)} · row cap {cap:,} (${ROW_CAP_ENV})"


def query_arrow(db: Path, sql: str, cap: int) -> tuple[pa.Table, bool]:
    """One read-only statement (labtui.store's guard) as an Arrow table of at most cap rows; True when cut."""
    import duckdb
    import pyarrow as pa

    from labtui.store import StoreError
    from labtui.store.reader import connect_readonly, read_statement

    con = connect_readonly(db)
    try:
        query = read_statement(con, sql)
        reader = con.sql(query).to_arrow_reader(64 * 1024)
        try:
            schema, batches, rows = reader.schema, [], 0
            for batch in reader:
                batches.append(batch)
                rows += batch.num_rows
                if rows > cap:
                    break
        finally:
            reader.close()
    except duckdb.Error as exc:
        raise StoreError(str(exc)) from exc
    finally:
        con.close()
    table = pa.Table.from_batches(batches, schema=schema)
    return displayable(table.slice(0, cap)), rows > cap


def grid_backend(table: pa.Table) -> ArrowBackend:
    """The grid's data: an Arrow backend with its column widths measured (a pass over every row: do it in a thread)."""
    from textual_fastdatatable import ArrowBackend

    backend = ArrowBackend(table)
    backend.render_markup = False  # a value is shown as it is, brackets and all
    backend.column_content_widths  # noqa: B018  (measured and cached here, not on the UI thread)
    return backend


def displayable(table: pa.Table) -> pa.Table:
    """Columns the grid cannot draw (DuckDB INTERVAL) as durations; a month is 30 days, as labtui.store."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_interval(field.type):
            values = [None if v is None else timedelta(days=v.months * 30 + v.days, microseconds=v.nanoseconds // 1000)
                      for v in table.column(i).to_pylist()]
            table = table.set_column(i, field.name, pa.array(values, type=pa.duration("us")))
    return table


class SqlEditor(TextArea):
    """The SQL editor: `esc` leaves it for the result grid (a code editor's own esc only moves to the next
    widget), and the footer says so while typing.  `tab` completes the word before the cursor from the
    store's catalog and SQL keywords; where there is nothing to complete it indents."""

    BINDINGS = [Binding("escape", "leave", "to results", priority=True)]

    @property
    def pane(self) -> SqlPane | None:
        return next((a for a in self.ancestors if isinstance(a, SqlPane)), None)

    def action_leave(self) -> None:
        if self.pane is not None:
            self.pane.query_one("#result").focus()
            return
        self.screen.focus_next()

    async def _on_key(self, event: events.Key) -> None:
        pane = self.pane
        if pane is not None and event.key == "tab" and pane.complete_word():
            event.stop()
            event.prevent_default()
            return
        if pane is not None:
            pane.hide_completions()
        await super()._on_key(event)

    def _on_blur(self, event: events.Blur) -> None:
        if self.pane is not None:
            self.pane.hide_completions()


@cache
def _grid_class() -> type[DataTable]:
    """textual-fastdatatable's DataTable as `ResultGrid`, with its CSS kept to itself.

    Its CSS names the type `DataTable`, as Textual's own DataTable does, so inherited as is it
    would restyle every other table in the console.  ResultGrid inherits no CSS and carries
    its bases' rules under its own name instead.
    """
    from textual_fastdatatable import DataTable

    bases = [cls for cls in DataTable.__mro__ if "DEFAULT_CSS" in cls.__dict__]
    names = "|".join(cls.__name__ for cls in bases)
    css = "\n".join(re.sub(rf"\b({names})\b", "ResultGrid", cls.__dict__["DEFAULT_CSS"]) for cls in reversed(bases))

    class ResultGrid(DataTable, inherit_css=False):
        """`tab` moves the focus on, as everywhere else in the console (not to the next cell)."""

        DEFAULT_CSS = css
        COMPONENT_CLASSES = DataTable.COMPONENT_CLASSES  # not inherited along with the CSS
        BINDINGS = [Binding("tab", "app.focus_next", show=False), Binding("shift+tab", "app.focus_previous", show=False),
                    Binding("c", "copy_cell", "copy cell"), Binding("C", "copy_row", "copy row")]

        def action_copy_cell(self) -> None:
            """Copy the cell under the cursor to the clipboard (the terminal's, by OSC 52)."""
            if self.row_count:
                self._copy(_cell_text(self.get_cell_at(self.cursor_coordinate)), "cell")

        def action_copy_row(self) -> None:
            """Copy the row under the cursor, its cells separated by tabs (pastes as a spreadsheet row)."""
            if self.row_count:
                self._copy("\t".join(map(_cell_text, self.get_row_at(self.cursor_row))), "row")

        def _copy(self, text: str, what: str) -> None:
            self.app.copy_to_clipboard(text)
            self.notify(f"copied the {what} ({len(text)} characters)", markup=False, timeout=3)

    return ResultGrid


def _cell_text(value: object) -> str:
    """A cell as copied: MISSING for a NULL, else its text."""
    return MISSING if value is None else str(value)


def result_grid(backend: ArrowBackend | None = None, columns: list[str] | None = None) -> Widget:
    """textual-fastdatatable's grid (imported with pyarrow on first use) over a result."""
    return _grid_class()(backend=backend, id="result", zebra_stripes=True, null_rep=MISSING, render_markup=False,
                      column_labels=None if columns is None else [Text(name) for name in columns])


class SqlPane(Vertical):
    """Editor and schema on top, the status line, then the result grid with its row cap in the border."""

    DEFAULT_CSS = """
    SqlPane #editor-row { height: 10; }
    SqlPane #sql { width: 1fr; }
    SqlPane #schema { width: 32; border: round $secondary; }
    SqlPane.narrow #schema, SqlPane.schema-flip #schema { display: none; }
    SqlPane.narrow.schema-flip #schema { display: block; width: 1fr; }
    SqlPane #sql-status { height: auto; max-height: 3; padding: 0 1; }  /* a refusal wraps, not cut */
    SqlPane #sql-status.error { color: $error; text-style: bold; }
    SqlPane #result { height: 1fr; max-height: 100%; border: round $secondary; }
    SqlPane #result:focus { border: round $accent; }
    SqlPane #export-path { display: none; }
    SqlPane #completions { display: none; position: absolute; overlay: screen; constrain: inside inside;
                           width: auto; max-width: 40; height: auto; max-height: 8; border: none; padding: 0;
                           background: $panel; }
    SqlPane #completions.shown { display: block; }
    SqlPane #export-path.shown { display: block; }
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
    ]

    def __init__(self, db_path: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.db_path = db_path
        self.history = History()
        #: The last result shown (an Arrow table) and whether the cap cut it.
        self.result: pa.Table | None = None
        self.truncated = False
        #: Names for completion, loaded with the schema tree on every refresh.
        self.catalog = Catalog()
        #: The candidates listed under the word while the list shows: tab puts the next in the word's place.
        self._cycle: list[str] = []

    @property
    def row_cap(self) -> int:
        cap = getattr(self.app, "sql_row_cap", None)
        return cap if isinstance(cap, int) and cap > 0 else row_cap_from_env()

    def compose(self) -> ComposeResult:
        with Horizontal(id="editor-row"):
            yield SqlEditor.code_editor("select * from sessions order by 1 desc", id="sql")
            yield Tree("store", id="schema")
        yield Static("ctrl+r runs the query (read-only)", id="sql-status")
        yield Input(placeholder="export to: path ending in .csv, .json or .parquet, then Enter", id="export-path",
                    classes="hidden-input")
        yield result_grid()
        completions = OptionList(id="completions")
        completions.can_focus = False  # keys stay in the editor: tab moves through the list
        yield completions

    def on_mount(self) -> None:
        editor = self.query_one("#sql", TextArea)
        if "sql" in editor.available_languages:
            editor.language = "sql"
        self.query_one("#schema").border_title = "schema"
        result = self.query_one("#result")
        result.border_title = "result"
        self.show_row_cap()  # the schema loads with the sessions
        self._warm_up()

    def show_row_cap(self) -> None:
        """The result's border says how many rows a result shows at most, and where that is set."""
        self.query_one("#result").border_subtitle = f"row cap {self.row_cap:,} (:rows N, ${ROW_CAP_ENV})"

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW_PANE, "narrow")

    def action_full_screen(self) -> None:
        """The editor or the result grid (whichever has the focus; else the grid) over the whole screen, and back
        (f4 again, or esc)."""
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        editor, grid = self.query_one("#sql"), self.query_one("#result")
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

    def status(self, message: str | Text, error: bool = False) -> None:
        """Show a line under the editor; a str is plain text (an error may quote '[/]' from the data)."""
        box = self.query_one("#sql-status", Static)
        box.set_class(error, "error")
        box.update(Text(message) if isinstance(message, str) else message)

    def focus_editor(self) -> None:
        self.query_one("#sql", TextArea).focus()

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
        self.catalog = Catalog.from_rows(rows)
        tree = self.query_one("#schema", Tree)
        tree.clear()
        tree.root.expand()
        nodes: dict[str, Any] = {}
        for table_name, column, dtype in rows:
            if table_name not in nodes:
                nodes[table_name] = tree.root.add(Text(table_name), data=table_name)
            nodes[table_name].add_leaf(Text.assemble(column, "  ", (dtype, "dim")), data=column)

    @on(Tree.NodeSelected, "#schema")
    def _insert_name(self, event: Tree.NodeSelected) -> None:
        if event.node.data:
            self.query_one("#sql", TextArea).insert(str(event.node.data))

    # --- completion ---------------------------------------------------------------------------

    def complete_word(self) -> bool:
        """Complete the word before the editor's cursor (see labtui.ui.model.completion); False when nothing matches.

        One match is inserted; several extend the word to their common prefix, or else to the shortest of them,
        and are listed under the word; tab again, while the list shows, puts the next in its place.
        """
        editor = self.query_one("#sql", TextArea)
        if editor.selected_text:
            return False
        row, column = editor.cursor_location
        line = editor.document.get_line(row)
        word = word_before(line, column)[0]
        if word in self._cycle:
            found: Completion | None = Completion(word, self._cycle[(self._cycle.index(word) + 1) % len(self._cycle)],
                                                  self._cycle)
        else:
            found = complete(self.catalog, line, column)
        if found is None:
            return False
        editor.replace(found.insert, (row, column - len(found.prefix)), (row, column))
        self._cycle = found.candidates if found.insert in found.candidates else []
        self._show_completions(found.candidates, found.insert)
        return True

    def _show_completions(self, names: list[str], current: str) -> None:
        """List the candidates under the word being completed, the one in the editor highlighted (none: hide it)."""
        box = self.query_one("#completions", OptionList)
        if not names:
            self.hide_completions()
            return
        if [str(box.get_option_at_index(i).prompt) for i in range(box.option_count)] != names:
            box.set_options(Text(name) for name in names)
        box.highlighted = names.index(current) if current in names else None
        cursor = self.query_one("#sql", TextArea).cursor_screen_offset
        box.styles.offset = (cursor.x - len(current) - self.region.x, cursor.y + 1 - self.region.y)  # under the word
        box.add_class("shown")

    def hide_completions(self) -> None:
        """Hide the candidate list (any key but tab in the editor, or leaving it); the next tab completes afresh."""
        self._cycle = []
        self.query_one("#completions", OptionList).remove_class("shown")

    # --- running ------------------------------------------------------------------------------

    def action_run_sql(self) -> None:
        """Run the editor's selection, else the statement under its cursor, read-only in a thread (at most row_cap rows)."""
        editor = self.query_one("#sql", TextArea)
        offset = len(editor.get_text_range((0, 0), editor.cursor_location))
        sql = editor.selected_text.strip() or statement_at(editor.text, offset)
        if not sql:
            self.status("nothing to run", error=True)
            return
        self.history.add(sql)
        self.status("running...")
        self._query(sql, self.row_cap)

    @work(thread=True, exclusive=True, group="sql", exit_on_error=False)
    def _query(self, sql: str, cap: int) -> None:
        started = time.perf_counter()
        try:
            table, truncated = query_arrow(self.db_path, sql, cap)
            backend = grid_backend(table)
        except Exception as exc:  # StoreError for refused writes; shown, never raised
            self.app.call_from_thread(self.status, f"error: {exc}", True)
            return
        # call_from_thread takes Callable[..., T | Awaitable[T]]: mypy solves T to Never for a coroutine function
        self.app.call_from_thread(self.show_result, backend, truncated, cap,  # type: ignore[arg-type]
                                  time.perf_counter() - started)

    async def show_result(self, backend: ArrowBackend, truncated: bool, cap: int, seconds: float | None = None) -> None:
        """Show a result (see grid_backend): a new grid widget over it, which draws only the rows on screen."""
        table = backend.source_data
        self.result, self.truncated = table, truncated
        old = self.query_one("#result")
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

    def action_history(self, step: int) -> None:
        query = self.history.older() if step < 0 else self.history.newer()
        if query is not None:
            self.query_one("#sql", TextArea).text = query

    # --- export -------------------------------------------------------------------------------

    def action_export(self) -> None:
        if self.result is None:
            self.status("run a query first, then export its result", error=True)
            return
        box = self.query_one("#export-path", Input)
        box.add_class("shown")
        box.focus()

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
            self._export(self.result, Path(name))
        event.input.remove_class("shown")
        self.query_one("#result").focus()

    @work(thread=True, group="export", exit_on_error=False)
    def _export(self, table: pa.Table, path: Path) -> None:
        from labtui.ui.model.query_export import export_arrow

        try:
            written = export_arrow(table, path)
        except Exception as exc:  # a bad path or an unconvertible column
            self.app.call_from_thread(self.status, f"export failed: {exc}", True)
            return
        self.app.call_from_thread(self.status, f"exported {table.num_rows:,} row(s) to {written}")

    # --- back ---------------------------------------------------------------------------------

    def close(self) -> bool:
        """Close the export box or leave the editor (to the grid); True when something happened."""
        box = self.query_one("#export-path", Input)
        if box.has_class("shown"):
            box.remove_class("shown")
            self.query_one("#result").focus()
            return True
        if self.query_one("#sql", TextArea).has_focus:
            self.query_one("#result").focus()
            return True
        return False
