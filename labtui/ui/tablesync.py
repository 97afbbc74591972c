"""Keyed diff of a DataTable: add, update only changed cells, remove gone rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable

#: Removing a row from Textual's DataTable renumbers every row after it, so when more rows go
#: than this the table is rebuilt instead (10,000 removals one by one take minutes).
REBUILD_AFTER = 64


def sync_rows(table: DataTable, rows: Mapping[str, Sequence[object]]) -> int:
    """Make table show rows (key -> cells); return how many cells changed.

    Call inside App.batch_update() so the whole diff paints once.  The cursor
    stays on its row's key when that row is still shown.
    """
    gone = [k for k in table.rows if k.value not in rows]
    cursor_key = _cursor_key(table)
    added = [k for k in rows if k not in table.rows]
    # a DataTable adds rows at its end: new rows anywhere else (a new session atop a newest-first list) rebuild it
    misplaced = bool(added) and list(rows)[len(rows) - len(added):] != added
    if len(gone) > REBUILD_AFTER or misplaced:
        return _rebuild(table, rows, cursor_key) + len(gone)
    columns = list(table.columns)
    changed = 0
    for row_key in gone:
        table.remove_row(row_key)
        changed += 1
    for key, cells in rows.items():
        if key not in table.rows:
            table.add_row(*cells, key=key)
            changed += len(cells)
            continue
        current = table.get_row(key)
        for column, old, new in zip(columns, current, cells):
            if old != new:
                # a wider value widens its column (a narrower one keeps it: shrinking re-measures every row)
                table.update_cell(key, column, new, update_width=_width(new) > table.columns[column].content_width)
                changed += 1
    _keep_cursor(table, cursor_key)
    return changed


def _width(cell: object) -> int:
    """Cells a value takes on one line (Text by its plain text, anything else as str)."""
    return cell_len(cell.plain if isinstance(cell, Text) else str(cell))


def _cursor_key(table: DataTable) -> str | None:
    if table.row_count and 0 <= table.cursor_row < table.row_count:
        return table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    return None


def _keep_cursor(table: DataTable, key: str | None) -> None:
    """Put the cursor back on its row when rows before it came or went."""
    if key is not None and key in table.rows and table.get_row_index(key) != table.cursor_row:
        table.move_cursor(row=table.get_row_index(key), animate=False)


def _rebuild(table: DataTable, rows: Mapping[str, Sequence[object]], cursor_key: str | None) -> int:
    table.clear()
    changed = 0
    for key, cells in rows.items():
        table.add_row(*cells, key=key)
        changed += len(cells)
    _keep_cursor(table, cursor_key)
    return changed
