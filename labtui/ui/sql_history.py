"""`F8` in the SQL view: the queries run before, newest first, filtered as you type; `enter` picks one."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from labtui.ui.model.history import History


def flat(query: str) -> Text:
    """A query as the list shows it: its whitespace and line breaks as single spaces (a long one wraps)."""
    return Text(" ".join(query.split()))


class HistoryScreen(ModalScreen[str | None]):
    """The history as a list under a filter box; the answer is the query picked, None on `esc`."""

    DEFAULT_CSS = """
    HistoryScreen { align: center middle; }
    HistoryScreen > Vertical { width: 100; max-width: 95%; height: 80%; border: thick $primary;
                               background: $surface; padding: 0 1; }
    HistoryScreen #history-list { height: 1fr; }
    """
    BINDINGS = [
        Binding("escape", "dismiss(None)", "close"),
        Binding("down", "move(1)", "next query", show=False),
        Binding("up", "move(-1)", "previous query", show=False),
    ]

    def __init__(self, history: History) -> None:
        super().__init__()
        self.history = history
        #: The queries listed, in the list's order.
        self.shown: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "query history, newest first"
            yield Label("type words to filter · ↑ ↓ choose · enter loads it · esc closes")
            yield Input(placeholder="filter: words the query holds", id="history-filter")
            yield OptionList(id="history-list")

    def on_mount(self) -> None:
        self._list("")

    @on(Input.Changed, "#history-filter")
    def _filter(self, event: Input.Changed) -> None:
        self._list(event.value)

    def _list(self, words: str) -> None:
        self.shown = self.history.matching(words)
        box = self.query_one("#history-list", OptionList)
        box.set_options(Option(flat(query)) for query in self.shown)
        box.highlighted = 0 if self.shown else None

    def action_move(self, step: int) -> None:
        box = self.query_one("#history-list", OptionList)
        if self.shown:
            box.highlighted = max(0, min(len(self.shown) - 1, (box.highlighted or 0) + step))

    @on(Input.Submitted, "#history-filter")
    def _pick_highlighted(self) -> None:
        highlighted = self.query_one("#history-list", OptionList).highlighted
        if highlighted is not None and self.shown:
            self.dismiss(self.shown[highlighted])

    @on(OptionList.OptionSelected, "#history-list")
    def _pick(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.shown[event.option_index])
