"""Where a suite's keys are: each key path's line in the TOML text, and the SuiteError that points at it
(or at the ``--set`` override that gave the value)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from labtui.core.errors import UsageError
from labtui.core.words import name_list

#: Stands in for the file name in errors caused by a ``--set`` override.
OVERRIDE = "--set"

KeyPath = tuple[str, ...]


class SuiteError(UsageError):
    """A suite file or a ``--set`` override is wrong; ``str()`` says where and why."""

    def __init__(self, file: str, line: int | None, key: str | None, message: str) -> None:
        super().__init__(file, line, key, message)
        self.file = file
        self.line = line
        self.key = key
        self.message = message

    def __str__(self) -> str:
        if self.file == OVERRIDE:
            where = f"{OVERRIDE} {self.key}" if self.key else OVERRIDE
            return f"{where}: {self.message}"
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return ": ".join(part for part in (where, self.key, self.message) if part)


_HEADER = re.compile(r"\[\[?\s*(?P<path>[^\]]+?)\s*\]\]?\s*(?:#.*)?")
_BARE_OR_QUOTED = r"(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
_ASSIGN = re.compile(rf"(?P<path>{_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*)\s*=")
_PART = re.compile(_BARE_OR_QUOTED)


def _split(dotted: str) -> KeyPath:
    return tuple(part.strip("\"'") for part in _PART.findall(dotted))


def key_lines(text: str) -> dict[KeyPath, int]:
    """Map each table and key path in TOML text to the line (1-based) that first names it."""
    lines: dict[KeyPath, int] = {}
    table: KeyPath = ()
    in_string = False
    for number, line in enumerate(text.splitlines(), 1):
        if not in_string:
            table = _note_line(line.strip(), table, number, lines)
        if (line.count('"""') + line.count("'''")) % 2:
            in_string = not in_string
    return lines


def _note_line(stripped: str, table: KeyPath, number: int, lines: dict[KeyPath, int]) -> KeyPath:
    """Record a header or assignment line; return the table that is current after it."""
    if header := _HEADER.fullmatch(stripped):
        table = _split(header["path"])
        path = table
    elif assign := _ASSIGN.match(stripped):
        path = table + _split(assign["path"])
    else:
        return table
    for end in range(1, len(path) + 1):
        lines.setdefault(path[:end], number)
    return table


@dataclass(frozen=True, slots=True)
class Source:
    """Turns a key path into a SuiteError pointing at the file line or at ``--set``."""

    file: str
    lines: Mapping[KeyPath, int]
    overridden: frozenset[KeyPath] = frozenset()

    def error(self, path: KeyPath, message: str) -> SuiteError:
        key = ".".join(path) or None
        if path in self.overridden:
            return SuiteError(OVERRIDE, None, key, message)
        return SuiteError(self.file, self._line(path), key, message)

    def _line(self, path: KeyPath) -> int | None:
        """The key's line, else its nearest table's (a missing key points at its table)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


def show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        return "an array of tables"
    return repr(value)


def unknown(what: str, name: str, valid: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, valid, n=1)
    if close:
        return f"unknown {what}, did you mean '{close[0]}'?"
    return f"unknown {what}, not one of {name_list(valid, 'docs/suites.md')}"
