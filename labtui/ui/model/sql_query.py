"""One read-only query as an Arrow table of at most a row cap of rows, and the lines that describe it.

No Textual here: the SQL pane (labtui.ui.sql_view) runs `query_arrow` in a thread worker and draws the
table with labtui.ui.sql_grid.  DuckDB reads one row more than the cap to know whether there were more.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

#: Rows a query shows at most unless $LABTUI_SQL_ROWS or LabApp(sql_row_cap=...) says otherwise.
DEFAULT_ROW_CAP = 100_000
ROW_CAP_ENV = "LABTUI_SQL_ROWS"
#: The store's tables and columns: the schema tree and the completion catalog.
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


def displayable(table: pa.Table) -> pa.Table:
    """Columns the grid cannot draw (DuckDB INTERVAL) as durations; a month is 30 days, as labtui.store."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_interval(field.type):
            values = [None if v is None else timedelta(days=v.months * 30 + v.days, microseconds=v.nanoseconds // 1000)
                      for v in table.column(i).to_pylist()]
            table = table.set_column(i, field.name, pa.array(values, type=pa.duration("us")))
    return table
