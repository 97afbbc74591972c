"""`:` in the console: k9s's command line, and the one list of commands the palette shows too.

A command either switches the view (`:sessions`, `:instances`, `:run`, `:sql`),
acts in a view (`:cleanup orphans`, `:q`) or runs the CLI's own command in a
child process (`:compare A B` is `labtui compare A B`, with the same options),
so the console and the command line can never disagree.  Tab completes the
command's name, `orphans` after `cleanup`, and session ids after the CLI's
commands (read from the store when the line opens).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from textual.binding import Binding
from textual.widgets import Input

from labtui.ui.tabs import TABS


@dataclass(frozen=True, slots=True)
class Command:
    """One command of the command line and the palette: a view or a console action, described here, or a CLI
    command, whose usage and help are the CLI parser's own (labtui.commands.parser)."""

    name: str
    #: How it runs: "view" (switches to a tab), "app" (a console action) or "cli" (`labtui NAME ARGS`).
    kind: str
    #: A view or app command's palette title, and what follows its name ("" for none).
    title: str = ""
    arguments: str = ""
    #: The tab of a "view" command, the console action of an "app" one.
    target: str = ""
    #: Words that may follow the name (completed with Tab).
    words: tuple[str, ...] = ()

    @property
    def usage(self) -> str:
        """What follows the name ("" for none); a command with arguments opens the command line from the palette."""
        if self.kind != "cli":
            return self.arguments
        from labtui.commands.parser import command_usage  # argparse and the parser: not before the first frame

        return command_usage(self.name)

    @property
    def help(self) -> str:
        """The palette's title for it (the palette's help line is the command itself)."""
        if self.kind != "cli":
            return self.title
        from labtui.commands.parser import command_help

        return f"{self.name.capitalize()}: {command_help(self.name)}"


COMMANDS: tuple[Command, ...] = (
    *(Command(tab.name, "view", f"Go to the {tab.title} view", target=tab.pane_id) for tab in TABS),
    Command("sql", "app", "Go to the SQL editor", target="sql"),
    *(Command(name, "cli") for name in ("compare", "report", "export", "trend")),
    Command("cleanup", "app", "Clean up: destroy the instances of sessions no longer running (asks first)", "orphans",
            "cleanup_orphans", ("orphans",)),
    Command("rows", "app", "SQL: show at most N rows of a result (the row cap)", "N", "sql_rows"),
    Command("q", "app", "Quit (asks during a run)", target="request_quit"),
)
BY_NAME = {c.name: c for c in COMMANDS}


class CommandError(ValueError):
    """A command line that names no command, or lacks its arguments: the message is one line."""


def parse(text: str) -> tuple[Command, list[str]]:
    """The command a line names and its arguments (shell words)."""
    try:
        words = shlex.split(text.strip().removeprefix(":"))
    except ValueError as exc:
        raise CommandError(f"cannot read {text!r}: {exc}") from None
    if not words:
        raise CommandError("type a command: " + " ".join(c.name for c in COMMANDS))
    command = BY_NAME.get(words[0])
    if command is None:
        raise CommandError(f"no command {words[0]!r}; the commands are: " + " ".join(c.name for c in COMMANDS))
    args = words[1:]
    if command.words and args != list(command.words):
        raise CommandError(f":{command.name} {command.usage} (got {' '.join(args) or 'nothing'})")
    if command.kind == "cli" and not args:
        raise CommandError(f":{command.name} {command.usage}: name a session")
    if command.kind in ("view", "app") and not command.words and not command.usage and args:
        raise CommandError(f":{command.name} takes no arguments (got {' '.join(args)})")
    if command.kind == "app" and command.usage and not command.words and len(args) != 1:
        raise CommandError(f":{command.name} {command.usage} (got {' '.join(args) or 'nothing'})")
    return command, args


def completions(text: str, sessions: Sequence[str] = ()) -> list[str]:
    """The ways the last word of `text` can end: a command's name, its own words, or a session id
    (an argument of a CLI command that is not an option or an option's value)."""
    words = text.split(" ")
    last = words[-1]
    if len(words) == 1:
        return [c.name for c in COMMANDS if c.name.startswith(last)]
    command = BY_NAME.get(words[0])
    if command is None:
        return []
    if command.kind == "cli":
        if last.startswith("-") or words[-2].startswith("--"):
            return []
        return [s for s in sessions if s.startswith(last)]
    return [w for w in command.words if w.startswith(last)] if len(words) == 2 else []


def complete(text: str, sessions: Sequence[str] = ()) -> str:
    """`text` with its last word completed as far as every completion agrees (a space after a unique one)."""
    found = completions(text, sessions)
    if not found:
        return text
    head = text.rsplit(" ", 1)[0] + " " if " " in text else ""
    if len(found) == 1:
        return head + found[0] + " "
    return head + os.path.commonprefix(found)


async def run_cli(db_path: Path, argv: list[str], width: int = 200) -> tuple[int, str, str]:
    """Run `labtui --db DB ARGV` in a child process (the CLI's own code); (status, stdout, stderr)."""
    env = {**os.environ, "COLUMNS": str(width), "NO_COLOR": "1"}
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "labtui", "--db", str(db_path), *argv,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
    try:
        out, err = await child.communicate()
    except asyncio.CancelledError:
        child.kill()
        await child.wait()
        raise
    return child.returncode or 0, out.decode(errors="replace"), err.decode(errors="replace")


class CommandLine(Input):
    """The `:` line docked at the bottom: Tab completes; Enter and Esc are the app's (Submitted, back)."""

    DEFAULT_CSS = """
    CommandLine { dock: bottom; margin-bottom: 1; display: none; border: tall $accent; }  /* above the footer */
    CommandLine.shown { display: block; }
    """
    BINDINGS = [
        Binding("tab", "complete", "complete", show=False),
        # Enter typed ahead while the console starts (`labtui`, then `:sessions` Enter at once) is read by the
        # terminal in line mode, which turns it into a newline: it arrives as ctrl+j
        Binding("ctrl+j", "submit", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        # disabled while hidden, so it never takes the focus (Textual's auto focus picks the first input)
        super().__init__(placeholder=" ".join(c.name for c in COMMANDS), id=id, disabled=True)
        self.border_title = ":"
        #: The store's session ids, completed after the CLI's commands (the app fills it in when the line opens).
        self.sessions: tuple[str, ...] = ()

    def open(self, text: str = "") -> None:
        """Show the line with `text` typed, the cursor at its end, and focus it."""
        self.value = text
        self.cursor_position = len(text)
        self.disabled = False
        self.add_class("shown")
        # at once, not a refresh later as focus() does: keys typed right after `:` (a paste, typing ahead) are
        # already queued, and would reach the view's bindings (`s` opened the start dialog)
        self.screen.set_focus(self)

    def close(self) -> None:
        """Hide the line and forget its text."""
        self.value = ""
        self.border_subtitle = ""
        self.remove_class("shown")
        self.disabled = True

    def action_complete(self) -> None:
        before = self.value
        self.value = complete(before, self.sessions)
        self.cursor_position = len(self.value)
        found = completions(before, self.sessions)
        self.border_subtitle = "  ".join(found) if len(found) > 1 else ""
