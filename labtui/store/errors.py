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


class StoreBusy(StoreError):
    """Another process (or a connection with other settings) held the store for the whole wait."""


def first_line(text: str) -> str:
    """The first line of a DuckDB message (its later lines are context a one-line error leaves out)."""
    return text.strip().splitlines()[0] if text.strip() else text
