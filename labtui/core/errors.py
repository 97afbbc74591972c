"""The root of the errors labtui shows a person: one line each, and the exit status it means.

Every layer raises a subclass of `LabError` (a host, backend, store, suite or
session error); the CLI catches `LabError` once, in `labtui.commands.dispatch`,
prints ``labtui COMMAND: message`` and exits with the error's `exit_status`.
The console shows the same message in place of the action that failed.

Exit statuses: 0 done, 1 a failure while working, 2 bad input or a request
refused before anything started, 130 stopped by a signal.
"""

from __future__ import annotations


class LabError(Exception):
    """Something labtui reports as one line; a failure while working (exit status 1)."""

    exit_status = 1


class UsageError(LabError):
    """Bad input (command line, suite file, lab config, a value), or a request refused before it started (exit 2)."""

    exit_status = 2


class BackendError(LabError):
    """A backend failed to do what was asked; the message says what and where.

    Here rather than in labtui.backends, so that what backends build on (labtui.programs) can raise
    it without importing the backends.
    """
