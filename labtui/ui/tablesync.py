"""Keyed diff of a DataTable: add, update only changed cells, remove gone rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from textual.widgets import DataTable

def sync_rows(table: DataTable, rows: Mapping[str, Sequence[object]]) -> int:
    """Make table show rows (key -> cells); return how many cells changed.

    Call inside App.batch_update() so the whole diff paints once.
    """
    columns = list(table.columns)
    changed = 0
    for key in [k.value for k in table.rows if k.value not in rows]:
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
