"""`?`: every key of the console, read from the bindings of the app and of each mounted view.

The lists are built from the widgets' BINDINGS, so a key added to a view shows
here without editing a text; LONGER gives some actions a fuller description
than the footer's one word, and NOTES adds keys that are not bindings (enter on
a list, typing in the editor).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from labtui.ui.tabs import TABS

if TYPE_CHECKING:
    from textual.app import App
    from textual.widget import Widget

#: Fuller descriptions by action name (the footer shows the binding's short one).
LONGER = {
    "request_quit": "quit; during a run asks: t tear down, l leave instances running, esc stay",
    "quit": "quit from anywhere, even while typing (asks during a run, as q)",
    "help": "this help",
    "filter": "filter the current list (Instances, Sessions)",
    "command_line": "command line: :sessions :instances :run :sql :compare A B :report ID :export ID :trend ... "
                    ":cleanup orphans :q (tab completes, esc closes)",
    "sql": "the SQL editor (Sessions+SQL view), from any view",
    "back": "back: close a filter or a prompt (export, open, save, find), leave the SQL editor",
    "start": "start a run: suite, backend, host, steps, per step, repetitions, stepping",
    "next_step": "next step (manual stepping)",
    "next_steps": "run N more steps one after another, then wait (asks for N)",
    "auto": "auto: let the remaining steps run on",
    "pause": "pause: manual stepping after the current step",
    "abort": "abort (asks first): stop at the next gate and tear down",
    "next_metric": "next metric in the chart",
    "toggle_select": "select / unselect the row under the cursor",
    "destroy": "destroy the selected instances (or the one under the cursor), after confirming",
    "describe": "describe the instance under the cursor: labels, backend, handle, host, times, its store rows",
    "log": "the log or console output of the instance under the cursor (where its backend keeps one)",
    "exec": "run a command in the instance under the cursor (process, docker, zones; xen with guest logins)",
    "shell": "a shell in the instance under the cursor, the console suspended until it ends (docker exec -it, "
             "zlogin, xl console; process and unikraft instances have none and say why)",
    "sort_next": "sort by the next column (or click a column's header; again reverses)",
    "sort_reverse": "reverse the order",
    "sort_column": "sort by a column: its first letter, E for session (the same key again: the other way)",
    "toggle_pause": "pause / resume the automatic refresh (the table's border says which)",
    "cleanup": "clean up every stuck or orphaned instance of the session under the cursor, after confirming",
    "report": "write and open the HTML report of the session under the cursor",
    "instances": "the Instances view, showing only the instances of the session under the cursor",
    "run_sql": "run the SQL in the editor (read-only)",
    "export": "export the current result to a .csv, .json or .parquet path",
    "history": "older / newer query from the history (in the editor)",
    "interrupt": "during a run, ask whether to abort it (a second ctrl+c answers yes); else quit",
    "refresh": "read the list again now",
    "toggle_schema": "show or hide the schema tree beside the editor",
    "leave": "leave the editor for the result grid",
    "copy_cell": "copy the cell under the cursor (the terminal's clipboard, OSC 52)",
    "copy_row": "copy the row under the cursor, its cells separated by tabs",
    "full_screen": "the editor or the result over the whole screen, and back (f4 or esc)",
    "new_tab": "a new query tab: its own editor, result and file",
    "next_tab": "the next query tab (in the editor, instead of deleting to the end of the line)",
    "close_tab": "close the query tab (one whose text is in no file: press again); the last one stays",
    "open_file": "open a .sql file in a new query tab (type its path, then enter)",
    "save_file": "save the query to a .sql file (type the path; the tab's own file is filled in)",
    "format_sql": "format the query (sqlglot, DuckDB's SQL); one that does not parse is left as it is",
    "find": "find in the query: type, enter for the next match, esc back to the editor",
    "find_next": "the next match of the last find",
    "history_list": "the query history to filter and pick from: enter loads one into the editor (ctrl+z undoes)",
}
#: Keys that are not bindings, per view title.
NOTES = {
    "Everywhere": [(" ".join(str(key) for key, _ in enumerate(TABS, start=1)),
                    ", ".join(tab.title for tab in TABS) + " views"), ("^p", "command palette: every action"),
                   ("tab", "next pane; in an input or the editor, letters and digits type")],
    "Sessions+SQL": [("enter", "open the session under the cursor / insert a schema name into the editor")],
}
HIDDEN = {"show_tab"}  # the tab keys are listed once in NOTES


def _bindings(widget_classes: list[type]) -> list[tuple[str, Binding]]:
    seen: set[tuple[str, str]] = set()
    found: list[tuple[str, Binding]] = []
    for cls in widget_classes:
        for binding in getattr(cls, "BINDINGS", []):
            if not isinstance(binding, Binding):
                continue
            action = binding.action.split("(")[0]
            if action in HIDDEN or (action, binding.key) in seen:
                continue
            seen.add((action, binding.key))
            found.append((action, binding))
    return found


def _rows(app: App, widget_classes: list[type]) -> list[tuple[str, str]]:
    by_action: dict[str, tuple[list[str], str]] = {}
    for action, binding in _bindings(widget_classes):
        keys, text = by_action.setdefault(action, ([], LONGER.get(action, binding.description or action)))
        changed = getattr(app, "user_keys", {})  # keys.toml (labtui.ui.keymap), by binding id
        for key in (changed.get(binding.id, binding.key) if binding.id else binding.key).split(","):
            shown = app.get_key_display(Binding(key.strip(), binding.action))
            if shown not in keys:
                keys.append(shown)
    return [(" ".join(keys), text) for keys, text in by_action.values()]


def _own_classes(view: Widget) -> list[type]:
    """The view's class and the classes of labtui widgets inside it (panes with their own keys)."""
    classes: list[type] = [type(view)]
    for widget in view.query("*"):
        cls = type(widget)
        if cls.__module__.startswith("labtui.") and cls not in classes:
            classes.append(cls)
    return classes


def sections(app: App, views: dict[str, type]) -> list[tuple[str, list[tuple[str, str]]]]:
    """(title, [(keys, what they do)]) for the app and each view (mounted views include their panes)."""
    result = [("Everywhere", NOTES["Everywhere"] + _rows(app, [type(app)]))]
    for title, cls in views.items():
        mounted = [w for w in app.query("*") if type(w) is cls]
        classes = _own_classes(mounted[0]) if mounted else [cls]
        rows = _rows(app, classes) + NOTES.get(title, [])
        result.append((title, rows))
    return result


def render(sections_: list[tuple[str, list[tuple[str, str]]]], current: str = "") -> str:
    """Console markup: the current view's keys first, then the others."""
    ordered = sorted(sections_, key=lambda s: (s[0] != "Everywhere", s[0] != current))
    lines: list[str] = []
    for title, rows in ordered:
        mark = "  [i](this view)[/i]" if title == current else ""
        lines.append(f"[b]{escape(title)}[/b]{mark}")
        width = max((len(k) for k, _ in rows), default=0)
        lines += [f"  {escape(keys).ljust(width)}  {escape(text)}" for keys, text in rows]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


class HelpScreen(ModalScreen[None]):
    """Every key of every view, the current view's first."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 100; max-width: 95%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]

    def __init__(self, sections_: list[tuple[str, list[tuple[str, str]]]], current: str = "") -> None:
        super().__init__()
        self.text = render(sections_, current)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.text, id="help-text")
