"""Find in the SQL editor: the next match of a needle in a text, ignoring case, wrapping past the end."""

from __future__ import annotations


def find_next(text: str, needle: str, start: int) -> tuple[int, int] | None:
    """(start, end) offsets of the first match at or after `start`, else the first from the top; None when none."""
    if not needle:
        return None
    haystack, wanted = text.lower(), needle.lower()
    found = haystack.find(wanted, max(0, start))
    if found < 0:
        found = haystack.find(wanted)
    return None if found < 0 else (found, found + len(needle))


def count_matches(text: str, needle: str) -> int:
    """How many times `needle` occurs in `text` (ignoring case, not overlapping)."""
    return text.lower().count(needle.lower()) if needle else 0
