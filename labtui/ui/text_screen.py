"""A modal that shows a block of plain text (a command's output, an instance's description or log)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.screen import ModalScreen
from textual.widgets import Static


class TextScreen(ModalScreen[None]):
    """Plain text (never read as markup, never wrapped: long lines scroll) under a title; esc or q closes it."""

    DEFAULT_CSS = """
    TextScreen { align: center middle; }
    TextScreen > ScrollableContainer { width: 95%; height: auto; max-height: 90%;
        border: thick $primary; background: $surface; padding: 0 1; }
    TextScreen #text-body { width: auto; }
    """
    BINDINGS = [Binding("escape,q", "dismiss", "close")]

    def __init__(self, title: str, text: str) -> None:
        super().__init__()
        self.title_text, self.text = title, text

    def compose(self) -> ComposeResult:
        box = ScrollableContainer()
        box.border_title = self.title_text
        with box:
            yield Static(self.text, id="text-body", markup=False)
