"""One module per group of CLI commands; each subcommand's parser names its handler, dispatch() runs it."""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass

from labtui.core.errors import LabError
from labtui.core.words import one_line


@dataclass(frozen=True, slots=True)
class Handler:
    """A command's function, named where its parser is built (``set_defaults(func=...)``), imported when it runs.

    Building the parser imports no command module (DuckDB, polars, matplotlib), so ``labtui --help``
    stays fast; ``tests/unit/test_registries.py`` checks that every handler named resolves.
    """

    module: str
    function: str

    def __call__(self, args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(self.module), self.function)(args)


def dispatch(args: argparse.Namespace) -> int:
    """Run the command's handler (``args.func``); a LabError prints one line, at most the terminal's width where
    its lists of names can be cut (labtui.core.words), and exits with its status (labtui.core.errors)."""
    try:
        return args.func(args)
    except LabError as exc:
        print(one_line(f"labtui {args.command}: ", exc), file=sys.stderr)
        return exc.exit_status
