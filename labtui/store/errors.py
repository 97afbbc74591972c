"""The store's errors: one root for everything a store can refuse, and the busy case apart."""

from __future__ import annotations

from labtui.core.errors import LabError


class StoreError(LabError):
    """A store could not be opened, read or written; the message says why.

    Exit status 2: most are a wrong path, session or statement; a run that loses its
    store mid-way reports that itself (exit 1).
    """

    exit_status = 2


class UnknownSession(StoreError):
    """No session id of the store is, or starts with, the one asked for (or several start with it)."""


class SessionExists(StoreError):
    """A new session was given the id of one the store (or one of its journals) has already."""


class StoreBusy(StoreError):
    """Another process (or a connection with other settings) held the store for the whole wait."""


#: What DuckDB says when a file is shorter than its own blocks: it was cut short (a copy that stopped half way).
_TRUNCATED = "Could not read enough bytes"


def damaged(path: object, error: BaseException) -> StoreError | None:
    """The StoreError saying that the store at `path` is damaged, when DuckDB's `error` shows it (a file cut
    short); None for any other error.  DuckDB finds it only when it reads a block past the end, which may be
    at the open, at the schema check or at a query."""
    if _TRUNCATED in str(error):
        return StoreError(f"cannot open store {path}: it is damaged (truncated)")
    return None


def first_line(text: str) -> str:
    """The first line of a DuckDB message (its later lines are context a one-line error leaves out)."""
    return text.strip().splitlines()[0] if text.strip() else text
