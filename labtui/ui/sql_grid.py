"""The SQL result grid: textual-fastdatatable's Arrow-backed DataTable, which draws only the rows on screen.

textual-fastdatatable and pyarrow are imported on first use (a grid is made once a view is mounted).
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from rich.text import Text
from textual.binding import Binding

from labtui.core.units import MISSING

if TYPE_CHECKING:
    import pyarrow as pa
    from textual.widget import Widget
    from textual_fastdatatable import ArrowBackend, DataTable


def grid_backend(table: pa.Table) -> ArrowBackend:
    """The grid's data: an Arrow backend with its column widths measured (a pass over every row: do it in a thread)."""
    from textual_fastdatatable import ArrowBackend

    backend = ArrowBackend(table)
    backend.render_markup = False  # a value is shown as it is, brackets and all
    backend.column_content_widths  # noqa: B018  (measured and cached here, not on the UI thread)
    return backend


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
