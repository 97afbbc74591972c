"""Modal screens: a confirmation that lists what will happen, a one-line question, and the key help."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static


class ConfirmScreen(ModalScreen[bool]):
    """Ask yes/no about a destructive action, listing exactly what it touches."""

    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 90; max-width: 95%; height: auto; max-height: 80%;
        border: thick $error; background: $surface; padding: 1 2; }
    ConfirmScreen #confirm-title { text-style: bold; margin-bottom: 1; }
    /* a list of hundreds of instances scrolls; the answer's buttons always show, down to 80x24 */
    ConfirmScreen VerticalScroll { height: auto; max-height: 40vh; }
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
            yield Label(self._title, id="confirm-title", markup=False)
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


class AbortQuestion(ConfirmScreen):
    """Abort the run? A second ctrl+c answers yes, as a second Ctrl-C stops a CLI run."""

    BINDINGS = [Binding("ctrl+c", "answer(True)", "abort", show=False)]


class QuitScreen(ModalScreen[str | None]):
    """Quitting during a run: tear the instances down, leave them running, or stay."""

    DEFAULT_CSS = """
    QuitScreen { align: center middle; }
    QuitScreen > Vertical { width: 90; max-width: 95%; height: auto; max-height: 80%;
        border: thick $warning; background: $surface; padding: 1 2; }
    QuitScreen #quit-title { text-style: bold; margin-bottom: 1; }
    QuitScreen VerticalScroll { height: auto; max-height: 25vh; }
    QuitScreen Horizontal { height: auto; margin-top: 1; }
    QuitScreen Button { margin-right: 2; }
    """
    BINDINGS = [
        Binding("t", "answer('teardown')", "tear down"),
        Binding("l", "answer('leave')", "leave"),
        Binding("n,escape", "answer(None)", "stay"),
    ]

    def __init__(self, session_id: str, live: Sequence[str]) -> None:
        super().__init__()
        self._session_id, self._live = session_id, list(live)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Session {self._session_id} is running. Quit and do what with its instances?",
                        id="quit-title", markup=False)
            with VerticalScroll():
                listed = self._live or ["(no live instances right now)"]
                yield Static("\n".join([f"{len(self._live)} live instance(s):", *listed]), id="quit-list", markup=False)
            yield Static("Tear down: abort after the current step and destroy them (waits).\n"
                         "Leave: stop the engine now and leave them running; they show as orphans "
                         "in the Instances view and `labtui cleanup --orphans` removes them.")
            with Horizontal():
                yield Button("Tear down and quit (t)", variant="error", id="teardown")
                yield Button("Leave running and quit (l)", variant="warning", id="leave")
                yield Button("Stay (esc)", id="stay")

    def on_mount(self) -> None:
        self.query_one("#stay", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "stay" else event.button.id)

    def action_answer(self, answer: str | None) -> None:
        self.dismiss(answer)


class AskScreen(ModalScreen[str | None]):
    """One line of input under a title: enter gives the text (stripped), esc gives None."""

    DEFAULT_CSS = """
    AskScreen { align: center middle; }
    AskScreen > Vertical { width: 90; max-width: 95%; height: auto; border: thick $primary;
        background: $surface; padding: 1 2; }
    AskScreen #ask-title { text-style: bold; margin-bottom: 1; }
    AskScreen #ask-hint { color: $text-muted; margin-top: 1; }
    """
    BINDINGS = [Binding("escape", "cancel", "cancel")]

    def __init__(self, title: str, placeholder: str = "", hint: str = "") -> None:
        super().__init__()
        self._title, self._placeholder, self._hint = title, placeholder, hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, id="ask-title", markup=False)
            yield Input(placeholder=self._placeholder, id="ask-input")
            if self._hint:
                yield Static(self._hint, id="ask-hint", markup=False)

    def on_mount(self) -> None:
        self.query_one("#ask-input").focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
