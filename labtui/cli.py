"""The headless command line: `labtui run`, `sql`, `cleanup`, ...

Each subcommand's parser names its handler (``set_defaults(func=Handler(...))``);
the handler's module is imported only when the command runs, so building the
parser imports nothing heavy and `labtui --help` stays fast.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from labtui import __version__
from labtui.commands import Handler

EXIT_USAGE = 2
#: A command whose reader closed the pipe: 128 + SIGPIPE, what a shell reports for git, docker or kubectl.
EXIT_CLOSED_PIPE = 141


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


def _every_subparser(p: argparse.ArgumentParser):
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield child
                yield from _every_subparser(child)


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
    p.add_argument("--format", metavar="F", help="csv, unixbench, aim9, aim9-ss, lmbench, sysbench, stress-ng, wrk, "
                   "redis-benchmark or stream (default: csv for .csv files)")
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
    for child in _every_subparser(parser):
        _global_options(child, top=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `labtui` console script.

    A reader that stops early (`labtui sessions | head -1`) ends the command quietly with status
    EXIT_CLOSED_PIPE, as git, docker and kubectl end on SIGPIPE.  Ctrl-C before a command took it
    over (while the arguments are read) ends it with "interrupted" and 130, not a traceback.
    """
    with _interrupts_noted() as interrupted:
        try:
            args = build_parser().parse_args(argv)
            status = _run(args)
            sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        except BrokenPipeError:
            _quiet_output()
            return EXIT_CLOSED_PIPE
        except Exception:
            if not interrupted:  # a native module's import turns Ctrl-C into its own error (duckdb: ImportError)
                raise
            print("interrupted", file=sys.stderr)
            return 130
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
    return status


@contextlib.contextmanager
def _interrupts_noted() -> Iterator[list[int]]:
    """In the block Ctrl-C raises KeyboardInterrupt as Python's own handler does, and is noted in the list
    yielded; an ignored SIGINT (a script's background job) stays ignored."""
    interrupted: list[int] = []
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield interrupted
        return

    def on_interrupt(signum: int, frame: object) -> None:
        interrupted.append(signum)
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield interrupted
    finally:
        if signal.getsignal(signal.SIGINT) is on_interrupt:
            signal.signal(signal.SIGINT, signal.default_int_handler)


def _run(args: argparse.Namespace) -> int:
    with _lab_config(getattr(args, "config", None)):
        # checked before any command (the console says it after its first frame; completion reads none)
        if args.command not in (None, "completion"):
            from labtui.core.words import one_line
            from labtui.hosts.config import named_config_error

            if error := named_config_error():
                print(one_line(f"labtui {args.command}: ", error), file=sys.stderr)
                return 2
        if args.command is None:
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                print("labtui: the console needs a terminal on standard input and output; in a script or a pipe "
                      "use a command (labtui run, sessions, sql, ...: labtui --help)", file=sys.stderr)
                return 2
            from labtui.ui import open_console

            return open_console(Path(args.db) if args.db else None)
        from labtui.commands import dispatch
        from labtui.core.stopsignals import StopSignal, stop_signals_noted

        try:
            with stop_signals_noted() if args.command == "run" else contextlib.nullcontext():
                return dispatch(args)
        except StopSignal as exc:  # before the run took the signals over: nothing was created
            print(f"stopped by {exc}", file=sys.stderr)
            return exc.exit_status


def _quiet_output() -> None:
    """Point stdout and stderr at /dev/null, so that nothing more is written into the closed pipe at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


def _completion(parser: argparse.ArgumentParser, shell: str) -> int:
    """Print the completion script of `shell` for the whole parser (shtab reads it)."""
    import shtab

    print(shtab.complete(parser, shell=shell))
    return 0


@contextlib.contextmanager
def _lab_config(path: str | None) -> Iterator[None]:
    """--config as LABTUI_CONFIG (read by labtui.hosts.get_host, here and in children) for this call only.

    Restored afterwards, so a caller that runs main() in-process keeps its own lab config.
    """
    if not path:
        yield
        return
    before = os.environ.get("LABTUI_CONFIG")
    os.environ["LABTUI_CONFIG"] = path
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("LABTUI_CONFIG", None)
        else:
            os.environ["LABTUI_CONFIG"] = before

if __name__ == "__main__":
    raise SystemExit(main())
