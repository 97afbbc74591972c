"""Completion for the SQL editor: the store's table, view and column names, and SQL keywords.

Pure functions over text, so they are tested without a screen.  The catalog is built from the
rows the SQL view already loads for its schema tree (labtui.ui.model.sql_query.SCHEMA_SQL), once per refresh.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

#: Keywords offered after the catalog's names (DuckDB's common ones; lower case, matched case-insensitively).
KEYWORDS = (
    "select", "from", "where", "group", "by", "order", "having", "limit", "offset", "join", "left", "right",
    "inner", "outer", "full", "cross", "on", "using", "as", "and", "or", "not", "in", "is", "null", "like",
    "ilike", "between", "case", "when", "then", "else", "end", "distinct", "union", "all", "except",
    "intersect", "with", "desc", "asc", "count", "avg", "sum", "min", "max", "median", "quantile_cont",
    "stddev", "cast", "coalesce", "over", "partition", "window", "qualify", "describe", "summarize",
    "exists", "true", "false", "interval", "filter", "nulls", "first", "last",
)
_WORD = re.compile(r"[A-Za-z0-9_]*\Z")
_QUALIFIER = re.compile(r"([A-Za-z0-9_]+)\.\Z")


@dataclass(frozen=True)
class Catalog:
    """Names in the store: relations (tables and views) and each one's columns, in catalog order."""

    columns: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[object, ...]]) -> Catalog:
        """From (table_name, column_name, ...) rows, as SCHEMA_SQL returns them."""
        columns: dict[str, list[str]] = {}
        for row in rows:
            columns.setdefault(str(row[0]), []).append(str(row[1]))
        return cls(columns)

    def names(self, relation: str | None = None) -> list[str]:
        """Relations, then every column once, then keywords; only that relation's columns when one is named."""
        if relation is not None:
            return next((cols for name, cols in self.columns.items() if name.lower() == relation.lower()), [])
        seen: dict[str, None] = dict.fromkeys(self.columns)
        for cols in self.columns.values():
            seen.update(dict.fromkeys(cols))
        seen.update(dict.fromkeys(KEYWORDS))
        return list(seen)


@dataclass(frozen=True)
class Completion:
    """What tab does: replace `prefix` (the word before the cursor) with `insert`; `candidates` when several
    (shortest first), of which `insert` is the first unless it is their longer common prefix."""

    prefix: str
    insert: str
    candidates: list[str]


def word_before(line: str, column: int) -> tuple[str, str | None]:
    """The identifier ending at column, and the relation it is qualified with (`results.ses` -> ('ses', 'results'))."""
    head = line[:column]
    match = _WORD.search(head)
    word = match.group(0) if match else ""
    qualifier = _QUALIFIER.search(head[: len(head) - len(word)])
    return word, (qualifier.group(1) if qualifier else None)


def complete(catalog: Catalog, line: str, column: int) -> Completion | None:
    """The completion of the word before column: the unique match, else the matches' common prefix when it is
    longer than the word, else the shortest match; None when nothing matches."""
    word, relation = word_before(line, column)
    if not word and relation is None:
        return None
    needle = word.lower()
    matches = [name for name in catalog.names(relation) if name.lower().startswith(needle) and name.lower() != needle]
    if not matches:
        return None
    matches.sort(key=len)  # stable: relations, then columns, then keywords among names of one length
    if word.isupper():  # a keyword typed in capitals is completed in capitals
        matches = [m.upper() if m in KEYWORDS else m for m in matches]
    if len(matches) == 1:
        return Completion(word, matches[0], [])
    common = os.path.commonprefix([m.lower() for m in matches])
    if len(common) > len(word):
        return Completion(word, word + matches[0][len(word):len(common)], matches)
    return Completion(word, matches[0], matches)
