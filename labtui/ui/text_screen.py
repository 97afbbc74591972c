"""Modals that show a block of plain text (a command's output, an instance's description), and a log followed live."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
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


#: How often a followed log is read again (seconds).
FOLLOW_S = 1.0


class LogScreen(TextScreen):
    """An instance's log, read again every FOLLOW_S and kept scrolled to its end while followed (`f` stops and
    starts following), as `tail -f` or k9s's logs do."""

    BINDINGS = [Binding("f", "toggle_follow", "follow")]

    def __init__(self, title: str, text: str, read: Callable[[], Awaitable[str]]) -> None:
        super().__init__(title, text)
        self._read = read
        self.following = True
        self._reading = False

    def on_mount(self) -> None:
        self._show_title()
        self.query_one(ScrollableContainer).scroll_end(animate=False)
        self.set_interval(FOLLOW_S, self._read_again)

    def _show_title(self) -> None:
        how = "following (f stops)" if self.following else "not following (f follows)"
        self.query_one(ScrollableContainer).border_title = f"{self.title_text} · {how}"

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        self._show_title()

    async def _read_again(self) -> None:
        if not self.following or self._reading:
            return
        self._reading = True
        try:
            text = await self._read()
        finally:
            self._reading = False
        if text != self.text and self.is_mounted:
            self.text = text
            self.query_one("#text-body", Static).update(Text(text))
            self.query_one(ScrollableContainer).scroll_end(animate=False)
