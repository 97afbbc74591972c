"""One module per group of CLI commands; dispatch() routes parsed arguments."""

from __future__ import annotations

import argparse
import importlib
import sys

from labtui.core.errors import LabError

_ROUTES = {
    "run": "labtui.commands.run",
    "suites": "labtui.commands.catalog",
    "backends": "labtui.commands.catalog",
    "sessions": "labtui.commands.query",
    "sql": "labtui.commands.query",
    "info": "labtui.commands.query",
    "instances": "labtui.commands.instances",
    "cleanup": "labtui.commands.instances",
    "hosts": "labtui.commands.hosts",
    "exec": "labtui.commands.exec",
    "images": "labtui.commands.images",
    "report": "labtui.commands.report",
    "export": "labtui.commands.report",
    "compare": "labtui.commands.compare",
    "trend": "labtui.commands.trend",
    "import": "labtui.commands.import_results",
    "store": "labtui.commands.store",
}


def dispatch(args: argparse.Namespace) -> int:
    """Run the command named in args; a LabError prints one line and exits with its status (see labtui.core.errors)."""
    module = importlib.import_module(_ROUTES[args.command])
    handler = getattr(module, f"cmd_{args.command}")
    try:
        return handler(args)
    except LabError as exc:
        print(f"labtui {args.command}: {exc}", file=sys.stderr)
        return exc.exit_status
