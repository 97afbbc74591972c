"""The command line's one definition: every `labtui` command, its arguments and its help (``build_parser``).

Each subcommand's parser names its handler (``set_defaults(func=Handler(...))``); the handler's module is imported
only when the command runs, so building the parser imports nothing heavy and `labtui --help` stays fast.  The
console's `:` command line takes the usage and help of the CLI commands it runs from here (``command_usage``,
``command_help``), so the two never disagree.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from functools import cache

from labtui import __version__
from labtui.commands import Handler
from labtui.parsers.registry import IMPORT_FORMATS

#: Options that mean the same before or after any subcommand; the last one given wins, as in git and docker.
GLOBAL_OPTIONS = {
    "--db": "the DuckDB store (default: $LABTUI_DB or sessions/lab.duckdb)",
    "--config": "the lab config naming SSH hosts (default: $LABTUI_CONFIG or ./labtui.toml)",
}


def _global_options(p: argparse.ArgumentParser, *, top: bool) -> None:
    """The global options; below the top level they default to 'not given', so they never undo a value given before."""
    for flag, help_text in GLOBAL_OPTIONS.items():
        _completes_files(p.add_argument(flag, metavar="PATH", help=help_text, default=None if top else argparse.SUPPRESS))


def _completes_files(action: argparse.Action) -> None:
    """Shell completion offers file names for this argument (shtab's FILE, without importing shtab at start-up)."""
    action.complete = {"bash": "_shtab_compgen_files", "zsh": "_files"}  # type: ignore[attr-defined]


def every_subparser(p: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """Every subparser below `p`, depth first, each once."""
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield child
                yield from every_subparser(child)


#: How a listing command prints its rows (labtui.commands.listing).
LISTING_FORMATS = ("table", "json", "csv")


#: Shells `labtui completion` writes a script for.
COMPLETION_SHELLS = ("bash", "zsh")


def _format_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=LISTING_FORMATS, default="table",
                   help="a table for people, or JSON (a list of objects) or CSV for scripts (default: table)")


def _target_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", metavar="B", help="backend to use (default: all usable ones, or process for run)")
    p.add_argument("--host", metavar="H", default="local", help="host name from the lab config (default: local)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="labtui",
        description="A terminal lab console for measuring virtualization. With no command, opens the console.",
    )
    parser.add_argument("--version", action="version", version=f"labtui {__version__}")
    _global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("run", help="run a suite headless and record it in the store")
    p.set_defaults(func=Handler("labtui.commands.run", "cmd_run"))
    p.add_argument("suite", help="a built-in suite name (see `labtui suites`) or a path to a .toml file")
    p.add_argument("--backend", metavar="B", help="backend to use (default: the suite's, else process)")
    p.add_argument("--host", dest="hosts", action="append", default=[], metavar="H",
                   help="host name from the lab config (default: local); repeat it to run the suite on "
                   "several hosts at once, one session per host")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a suite value, e.g. --set scale.steps=3 (repeatable)")
    p.add_argument("--profile", metavar="NAME",
                   help="apply the suite's [profiles.NAME] table before any --set, e.g. --profile quick")
    p.add_argument("--step", action="store_true", help="pause after every step and wait for Enter (q aborts)")
    p.add_argument("--tag", dest="tags", action="append", default=[], metavar="KEY=VALUE",
                   help="a label recorded with the session, shown by sessions, report and compare (repeatable)")
    p.add_argument("--note", default="", metavar="TEXT", help="a note recorded with the session")

    p = sub.add_parser("suites", help="list the built-in suites")
    p.set_defaults(func=Handler("labtui.commands.catalog", "cmd_suites"))
    _format_option(p)

    p = sub.add_parser("sessions", help="list recorded sessions; `sessions rm ID...` deletes finished ones")
    p.set_defaults(func=Handler("labtui.commands.query", "cmd_sessions"))
    _format_option(p)
    sessions = p.add_subparsers(dest="sessions_command", metavar="[ACTION]", title="actions (none: list them)")
    p = sessions.add_parser("rm", help="delete finished sessions and all their rows, after a confirmation")
    p.add_argument("ids", nargs="+", metavar="ID", help="session ids (or unique prefixes)")
    p.add_argument("--yes", action="store_true", help="delete without asking")

    p = sub.add_parser("sql", help="run a read-only SQL query against the store")
    p.set_defaults(func=Handler("labtui.commands.query", "cmd_sql"))
    p.add_argument("query", help="the SQL text, or - to read it from standard input")
    _format_option(p)
    p.add_argument("--limit", type=int, default=500, help="at most this many rows (default 500)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S",
                   help="stop the query after S seconds (default 60); Ctrl-C stops it too")

    p = sub.add_parser("instances", help="labtui instances alive on a backend/host")
    p.set_defaults(func=Handler("labtui.commands.instances", "cmd_instances"))
    _target_options(p)
    p.add_argument("--session", metavar="ID", help="only this session's instances")
    _format_option(p)

    p = sub.add_parser("cleanup", help="destroy labtui instances")
    p.set_defaults(func=Handler("labtui.commands.instances", "cmd_cleanup"))
    p.add_argument("--backend", metavar="B", help="backend to use (default: every usable one)")
    p.add_argument("--host", metavar="H", help="only this host (default: local, every lab config host, and every "
                   "host the store has open instance rows or running sessions on)")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", metavar="ID", help="every instance of this session")
    which.add_argument("--orphans", action="store_true", help="instances whose session is no longer running")
    which.add_argument("--all", action="store_true", help="every labtui instance")
    p.add_argument("--dry-run", action="store_true", help="list what would be destroyed, destroy nothing")

    p = sub.add_parser("images", help="docker images labtui builds from its probes")
    p.set_defaults(func=Handler("labtui.commands.images", "cmd_images"))
    images = p.add_subparsers(dest="images_command", metavar="ACTION", required=True)
    p = images.add_parser("build", help="build the labtui/<probe> images FROM scratch (missing or stale ones)")
    p.add_argument("--host", metavar="H", default="local", help="host name from the lab config (default: local)")
    p.add_argument("--force", action="store_true", help="rebuild even the images that are up to date")

    p = sub.add_parser("backends", help="list backends and whether they are usable here")
    p.set_defaults(func=Handler("labtui.commands.catalog", "cmd_backends"))
    p.add_argument("--host", metavar="H", default="local", help="check them on this host from the lab config "
                   "(default: local)")
    _format_option(p)

    p = sub.add_parser("hosts", help="the lab's hosts; `hosts check` tests them, `hosts trust NAME` records a host key")
    p.set_defaults(func=Handler("labtui.commands.hosts", "cmd_hosts"))
    p.add_argument("--tag", dest="tags", action="append", default=[], metavar="T",
                   help="only hosts with this tag (repeatable: any of them)")
    _format_option(p)
    hosts = p.add_subparsers(dest="hosts_command", metavar="ACTION")
    p = hosts.add_parser("check", help="reachable? OS, CPUs, memory and usable backends of every host, concurrently")
    p.add_argument("--tag", dest="tags", action="append", default=argparse.SUPPRESS, metavar="T",
                   help="only hosts with this tag (repeatable: any of them; local is skipped)")
    p = hosts.add_parser("trust", help="record the host key NAME offers now in its known_hosts (shows the fingerprint)")
    p.add_argument("name", help="a host from the lab config")
    p.add_argument("--replace", action="store_true", help="replace a different key recorded for the host")
    p.add_argument("--fingerprint", metavar="SHA256:...", help="record only if the offered key has this fingerprint")
    hosts.add_parser("disconnect", help="close the connections `labtui exec` keeps open for hosts with persist_s")

    p = sub.add_parser("exec", help="run one command on many hosts at once: labtui exec --host A --tag T -- CMD ARGS...")
    p.set_defaults(func=Handler("labtui.commands.exec", "cmd_exec"))
    p.add_argument("--host", dest="hosts", action="append", default=[], metavar="H",
                   help="a host from the lab config, or local (repeatable; default: every config host)")
    p.add_argument("--tag", dest="tags", action="append", default=[], metavar="T",
                   help="every host with this tag (repeatable)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds per host (default 60)")
    p.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the command, after --")

    p = sub.add_parser("report", help="figures and an HTML page of a session, or of several side by side and overlaid")
    p.set_defaults(func=Handler("labtui.commands.report", "cmd_report"))
    p.add_argument("sessions", nargs="+", metavar="SESSION",
                   help="session ids (or unique prefixes); more than one: side by side against the first, overlaid")
    p.add_argument("--out", metavar="DIR", help="output directory (default: reports/<session>)")
    p.add_argument("--format", choices=["html", "png", "svg"], default="html",
                   help="one self-contained HTML page, or one image file per figure (default: html)")

    p = sub.add_parser("export", help="write every table of a session to parquet or CSV files")
    p.set_defaults(func=Handler("labtui.commands.report", "cmd_export"))
    p.add_argument("session", help="session id (or a unique prefix)")
    p.add_argument("--format", choices=["parquet", "csv"], default="parquet",
                   help="one file per table in this format (default: parquet)")
    p.add_argument("--out", metavar="DIR", help="output directory (default: exports/<session>)")

    p = sub.add_parser("compare", help="each metric of session B against session A: change, slowdown, Welch's t-test")
    p.set_defaults(func=Handler("labtui.commands.compare", "cmd_compare"))
    p.add_argument("a", metavar="A", help="the baseline session id (or a unique prefix)")
    p.add_argument("b", metavar="B", help="the session compared with A")
    p.add_argument("more", nargs="*", metavar="C", help="more sessions: a side-by-side table, one column each")
    _format_option(p)

    p = sub.add_parser("trend", help="Δ%% and d%% of study 000: each metric's trendline against the background count")
    p.set_defaults(func=Handler("labtui.commands.trend", "cmd_trend"))
    p.add_argument("sessions", nargs="+", metavar="SESSION", help="session ids (or unique prefixes) to fit")
    p.add_argument("--baseline", metavar="SESSION", help="the baseline session (the global zone): d%% is measured from it")
    p.add_argument("--metric", metavar="NAME", help="only this metric")
    _format_option(p)

    p = sub.add_parser("import", help="results measured elsewhere (a CSV or a real tool's output) into a new session")
    p.set_defaults(func=Handler("labtui.commands.import_results", "cmd_import"))
    _completes_files(p.add_argument("files", nargs="+", metavar="FILE", help="a CSV, or one tool output per repetition"))
    p.add_argument("--session", required=True, metavar="NAME", help="the new session's id")
    p.add_argument("--format", metavar="F", help=f"{', '.join(IMPORT_FORMATS[:-1])} or {IMPORT_FORMATS[-1]} "
                   "(default: csv for .csv files)")
    p.add_argument("--step", type=int, default=0, metavar="N", help="step of a tool's results, or a CSV's default (0)")
    p.add_argument("--background", type=int, default=0, metavar="N", help="background instances (default 0)")
    p.add_argument("--repetition", type=int, default=0, metavar="N", help="repetition of the first file (default 0)")
    p.add_argument("--host", default="local", metavar="H", help="host the results were measured on (default: local)")

    p = sub.add_parser("store", help="the store's upkeep: `store sync` moves finished sessions' journals in now")
    p.set_defaults(func=Handler("labtui.commands.store", "cmd_store"))
    store = p.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    p = store.add_parser("sync", help="move the journals of finished and crashed sessions into the store")
    p.add_argument("--wait", type=float, default=60.0, metavar="S",
                   help="wait up to S seconds for a store another program holds (default 60)")

    p = sub.add_parser("info", help="versions, paths and the store's contents")
    p.set_defaults(func=Handler("labtui.commands.query", "cmd_info"))
    _format_option(p)

    p = sub.add_parser("completion", help="print a shell completion script: eval \"$(labtui completion bash)\"")
    p.add_argument("shell", choices=COMPLETION_SHELLS)
    p.set_defaults(func=lambda args: _completion(parser, args.shell))
    for child in every_subparser(parser):
        _global_options(child, top=False)
    return parser


def _completion(parser: argparse.ArgumentParser, shell: str) -> int:
    """Print the completion script of `shell` for the whole parser (shtab reads it)."""
    import shtab

    print(shtab.complete(parser, shell=shell))
    return 0


@cache
def _subcommands() -> argparse._SubParsersAction:
    """The parser's subcommands (built once: the console asks for their usage and help)."""
    return next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))


def command_usage(name: str) -> str:
    """What follows `labtui NAME` in its usage, without the global options and -h, on one line: "A B [C ...]
    [--format {table,json,csv}]" for compare."""
    parser = _subcommands().choices[name]
    actions = [a for a in parser._actions
               if not isinstance(a, argparse._HelpAction) and not set(a.option_strings) & set(GLOBAL_OPTIONS)]
    formatter = argparse.HelpFormatter(prog=f"labtui {name}", width=10_000)
    formatter.add_usage(None, actions, [], prefix="")
    return formatter.format_help().strip().removeprefix(f"labtui {name}").strip()


def command_help(name: str) -> str:
    """The one-line help `labtui --help` gives the command."""
    return next(str(c.help) for c in _subcommands()._choices_actions if c.dest == name).replace("%%", "%")
