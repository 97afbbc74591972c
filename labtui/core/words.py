"""Error lines that fit the terminal: one line each, and lists of known names cut to the width with a count.

An error that names everything it knows (the built-in suites, a suite's keys, the probes, the
hosts) builds that list with `name_list()`, which returns it in full, so ``str(error)`` stays whole for
a log or the console.  The CLI prints each error with `one_line()`, which folds it onto one line
and, when that line is wider than the terminal, cuts the lists in it to the names that fit and a
count of the rest (``one of aim9-arithmetic, aim9-disk, ... (57 more: `labtui suites`)``), or to the count
alone where not even one name fits (``one of the 59 in `labtui suites```).
"""

from __future__ import annotations

import shutil
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

#: The narrowest width a line is held to, whatever the terminal (or $COLUMNS) says.
MIN_WIDTH = 80


def line_width() -> int:
    """How wide an error line may be: the terminal's width ($COLUMNS first), at least MIN_WIDTH."""
    return max(MIN_WIDTH, shutil.get_terminal_size((MIN_WIDTH, 24)).columns)


@dataclass(frozen=True, slots=True)
class _Names:
    """A list of names as a message spells it, and where the whole list can be read."""

    names: tuple[str, ...]
    more: str

    @property
    def whole(self) -> str:
        return ", ".join(self.names)

    def cut(self, room: int) -> str:
        """The first names that fit in `room` characters and ``... (N more: where)``; where not even one
        does, ``the N in where``."""
        count = len(self.names)
        for shown in range(count - 1, 0, -1):
            text = f"{', '.join(self.names[:shown])}, ... ({count - shown} more: {self.more})"
            if len(text) <= room:
                return text
        return f"the {count} in {self.more}"


#: A list of at most this many names is never cut: it says more than a count would.
SHORT = 8
#: The lists `name_list()` spelled lately, newest last; `one_line()` looks for them in the line it prints.
_SPELLED: deque[_Names] = deque(maxlen=32)


def name_list(items: Iterable[str], more: str) -> str:
    """Every name of `items`, comma-separated, for a message that `one_line()` may cut to the terminal's
    width when there are more than SHORT; `more` says where the whole list is (```labtui suites```,
    ``docs/suites.md``), and reads well after "the 59 in"."""
    listed = _Names(tuple(items), more)
    if len(listed.names) > SHORT:
        _SPELLED.append(listed)
    return listed.whole


def one_line(prefix: str, message: object, width: int | None = None) -> str:
    """`prefix` and the message on one line (its lines joined by spaces), with the lists of names in it
    (`name_list()`) cut so that the line is at most `width` wide (the terminal's, `line_width()`).

    A line that is wider for another reason (a long path) keeps its words: only lists are cut.
    """
    lines = str(message).replace("\r\n", "\n").split("\n")
    line = prefix + " ".join(part.strip() for part in lines if part.strip())
    width = line_width() if width is None else width
    for listed in reversed(tuple(_SPELLED)):
        if len(line) <= width:
            break
        whole = listed.whole
        at = line.find(whole)
        if at >= 0:
            line = line[:at] + listed.cut(width - (len(line) - len(whole))) + line[at + len(whole):]
    return line
