"""The `labtui` console script: parse the command line (labtui.commands.parser), then run the command, or open the
console without one; a closed pipe, Ctrl-C and the lab config are handled here, once for every command."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from labtui.commands.parser import build_parser

EXIT_USAGE = 2
#: A command whose reader closed the pipe: 128 + SIGPIPE, what a shell reports for git, docker or kubectl.
EXIT_CLOSED_PIPE = 141


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
