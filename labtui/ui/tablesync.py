"""Keyed diff of a DataTable: add, update only changed cells, remove gone rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.widgets import DataTable

#: Removing a row from Textual's DataTable renumbers every row after it, so when more rows go
#: than this the table is rebuilt instead (10,000 removals one by one take minutes).
REBUILD_AFTER = 64


def sync_rows(table: DataTable, rows: Mapping[str, Sequence[object]]) -> int:
    """Make table show rows (key -> cells); return how many cells changed.

    Call inside App.batch_update() so the whole diff paints once.  The cursor
    stays on its row's key when that row is still shown.
    """
    gone = [k.value for k in table.rows if k.value not in rows]
    if len(gone) > REBUILD_AFTER:
        return _rebuild(table, rows) + len(gone)
    columns = list(table.columns)
    changed = 0
    for key in gone:
        table.remove_row(key)
        changed += 1
    for key, cells in rows.items():
        if key not in table.rows:
            table.add_row(*cells, key=key)
            changed += len(cells)
            continue
        current = table.get_row(key)
        for column, old, new in zip(columns, current, cells):
            if old != new:
                table.update_cell(key, column, new)
                changed += 1
    return changed


def _rebuild(table: DataTable, rows: Mapping[str, Sequence[object]]) -> int:
    cursor_key = None
    if table.row_count and table.cursor_row < table.row_count:
        cursor_key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    table.clear()
    changed = 0
    for key, cells in rows.items():
        table.add_row(*cells, key=key)
        changed += len(cells)
    if cursor_key in rows:
        table.move_cursor(row=table.get_row_index(cursor_key), animate=False)
    return changed
