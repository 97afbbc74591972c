"""The schema tree beside a query's editor: the store's tables and their columns (`enter` inserts a name)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.binding import BindingType
from textual.widgets import Tree


class SchemaTree(Tree[str]):
    """Tables, each with its columns and their types; a node's data is the name it inserts."""

    BINDINGS: ClassVar[list[BindingType]] = []  # a tree's usual keys, which `?` does not list

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("store", id=id)

    def on_mount(self) -> None:
        self.border_title = "schema"

    def show(self, rows: list[tuple[Any, ...]]) -> None:
        """Fill the tree from (table, column, type) rows, as labtui.ui.model.sql_query.SCHEMA_SQL reads them."""
        self.clear()
        self.root.expand()
        tables: dict[str, Any] = {}
        for table_name, column, dtype in rows:
            if table_name not in tables:
                tables[table_name] = self.root.add(Text(table_name), data=table_name)
            tables[table_name].add_leaf(Text.assemble(column, "  ", (dtype, "dim")), data=column)
