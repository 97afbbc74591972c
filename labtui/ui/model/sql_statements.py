"""The statement under the cursor in an editor holding several, separated by `;`.

Semicolons inside quotes ('...', "...") and comments (-- to the end of the line, /* ... */) do not
separate statements.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"'(?:[^']|'')*'?|\"(?:[^\"]|\"\")*\"?|--[^\n]*|/\*.*?(?:\*/|\Z)|;", re.DOTALL)


def statement_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each statement, its `;` included; the last may lack one."""
    spans, start = [], 0
    for match in _TOKEN.finditer(text):
        if match.group(0) == ";":
            spans.append((start, match.end()))
            start = match.end()
    spans.append((start, len(text)))
    return spans


def statement_at(text: str, offset: int) -> str:
    """The statement around offset, without its `;`; a blank spot (after the last `;`) gives the one before it."""
    found = ""
    for start, end in statement_spans(text):
        body = text[start:end].strip().removesuffix(";").strip()
        if start > offset and found:
            break
        if body:
            found = body
        if start <= offset <= end and body:
            break
    return found
