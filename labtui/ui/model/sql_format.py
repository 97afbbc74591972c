"""`F5` in the SQL editor: the query pretty-printed by sqlglot in DuckDB's dialect, statement by statement.

A query sqlglot cannot parse is not touched: FormatError says where it stops, in one line.
"""

from __future__ import annotations


class FormatError(ValueError):
    """The query could not be parsed, so it was left as it is."""


def format_sql(text: str) -> str:
    """`text` pretty-printed (keywords in capitals, one clause a line); several statements stay separated by `;`."""
    import sqlglot
    from sqlglot.errors import ParseError, SqlglotError

    if not text.strip():
        raise FormatError("nothing to format")
    try:
        statements = sqlglot.transpile(text, read="duckdb", write="duckdb", pretty=True)
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        where = f" at line {first['line']}, column {first['col']}" if "line" in first else ""
        raise FormatError(f"{first.get('description', exc)}{where}") from exc
    except SqlglotError as exc:  # a token error: an unclosed quote, say
        raise FormatError(" ".join(str(exc).split())) from exc
    end = ";" if text.rstrip().endswith(";") else ""
    return ";\n\n".join(statements) + end
