"""Modal screens: a confirmation that lists what will happen, and the key help."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmScreen(ModalScreen[bool]):
    """Ask yes/no about a destructive action, listing exactly what it touches."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 90; max-width: 95%; height: auto; max-height: 80%;
        border: thick $error; background: $surface; padding: 1 2; }
    ConfirmScreen #confirm-title { text-style: bold; margin-bottom: 1; }
    ConfirmScreen VerticalScroll { height: auto; max-height: 20; }
    ConfirmScreen Horizontal { height: auto; margin-top: 1; }
    ConfirmScreen Button { margin-right: 2; }
    """
    BINDINGS = [
        Binding("y", "answer(True)", "yes"),
        Binding("n,escape", "answer(False)", "no"),
    ]

    def __init__(self, title: str, lines: Sequence[str], yes: str = "Yes (y)", no: str = "No (n)") -> None:
        super().__init__()
        self._title, self._lines, self._yes, self._no = title, list(lines), yes, no

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, id="confirm-title")
            with VerticalScroll():
                yield Static("\n".join(self._lines), id="confirm-list", markup=False)
            with Horizontal():
                yield Button(self._yes, variant="error", id="yes")
                yield Button(self._no, id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)


HELP = """\
[b]Everywhere[/b]
  1 2 3        Run, Instances, Sessions+SQL views
  ?            this help            ctrl+p  command palette
  /            filter the current list
  esc          back (close filter or dialog, leave an editor)
  q, ctrl+q    quit (asks first while a run is active, then tears it down)

[b]Run[/b]
  s  start the chosen suite      n  next step (manual stepping)
  a  auto: run the steps on      p  pause: manual stepping after this step
  x  abort and tear down         m  next metric in the chart
  tab moves between suite, overrides, "manual" and the panes

[b]Instances[/b]
  r  refresh                     space  select / unselect
  d  destroy selected (or the one under the cursor), after confirming
  c  clean up every orphan of the session under the cursor, after confirming

[b]Sessions+SQL[/b]
  enter   open the session under the cursor (slowdown table and chart)
  r       refresh sessions and schema
  ctrl+r or ctrl+enter   run the SQL (read-only, 500 rows shown)
  ctrl+up / ctrl+down    older / newer query from the history
  e       export the current result (.csv or .parquet path)
  m       next metric in the replayed chart
"""


class HelpScreen(ModalScreen[None]):
    """Every key of every view."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; max-width: 95%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 1 2; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(HELP, id="help-text")
