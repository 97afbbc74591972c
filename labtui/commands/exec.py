"""`labtui exec [--host NAME]... [--tag TAG]... -- CMD ARGS...`: one command on many hosts at once.

Each host's output is printed as one block, prefixed with the host's name, as
soon as that host finishes; a summary (exit code or error, duration) follows.
Exit status 1 if any host failed or could not be reached.
"""

from __future__ import annotations

import asyncio
import sys

from rich.table import Table
from rich.text import Text

from labtui.commands.listing import PipeConsole
from labtui.core.errors import UsageError
from labtui.hosts.config import load_lab_config
from labtui.hosts.fanout import Outcome, run_on_hosts, select_hosts


def cmd_exec(args) -> int:
    """Run args.argv on the selected hosts at once; 0 only if every host ran it and it exited 0."""
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise UsageError("no command given; usage: labtui exec [--host H]... [--tag T]... -- CMD ARGS...")
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {args.timeout:g}")
    lab = load_lab_config()
    names = select_hosts(lab, args.hosts, args.tags)
    if not names:
        raise UsageError("no hosts selected: the lab config has none (name `--host local` for this machine)")
    width = max(len(n) for n in names)
    outcomes = asyncio.run(run_on_hosts(names, argv, timeout=args.timeout, on_done=lambda o: _print_block(o, width), lab=lab))
    _print_summary(outcomes)
    return 0 if all(o.ok for o in outcomes) else 1


def _print_block(outcome: Outcome, width: int) -> None:
    """The host's stdout on stdout and stderr (or its error) on stderr, every line prefixed."""
    prefix = f"{outcome.host:<{width}} | "
    if outcome.result is not None:
        for line in outcome.result.stdout.splitlines():
            sys.stdout.write(prefix + line + "\n")
        for line in outcome.result.stderr.splitlines():
            sys.stderr.write(prefix + line + "\n")
    else:
        sys.stderr.write(f"{prefix}error: {outcome.error}\n")
    sys.stdout.flush()
    sys.stderr.flush()


def _print_summary(outcomes: list[Outcome]) -> None:
    table = Table("host", "status", "duration", title="exec summary", title_justify="left")
    for o in outcomes:
        if o.result is not None:
            status = Text("exit 0", "green") if o.ok else Text(f"exit {o.result.returncode}", "red")
        elif o.timed_out:
            status = Text.assemble(("timed out", "red"), " ", str(o.error))
        else:
            status = Text.assemble(("error", "red"), " ", str(o.error))
        table.add_row(Text(o.host), status, f"{o.duration_s:.2f} s")
    failed = sum(not o.ok for o in outcomes)
    PipeConsole(width=max(PipeConsole().width, 120)).print(table)
    print(f"{len(outcomes) - failed} of {len(outcomes)} hosts ok" + (f", {failed} failed" if failed else ""))
