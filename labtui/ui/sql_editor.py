"""The SQL editor: a code editor with completion from the store's catalog, find, and `esc` out to the result.

`tab` completes the word before the cursor from the catalog and SQL keywords (labtui.ui.model.completion)
and lists the candidates in the Completer under it; where there is nothing to complete it indents.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.binding import BindingType
from textual.geometry import Offset
from textual.widget import Widget
from textual.widgets import OptionList, TextArea
from textual.widgets.text_area import Document, Selection

from labtui.ui.model.completion import Catalog, Completion, complete, word_before
from labtui.ui.model.text_find import find_next

if TYPE_CHECKING:
    from textual import events


class Completer(OptionList, can_focus=False):
    """The names the editor completes from, listed under the word being completed (keys stay in the editor)."""

    BINDINGS: ClassVar[list[BindingType]] = []  # it never has the focus: nothing for `?` to list

    DEFAULT_CSS = """
    Completer { display: none; position: absolute; overlay: screen; constrain: inside inside;
                width: auto; max-width: 40; height: auto; max-height: 8; border: none; padding: 0;
                background: $panel; }
    Completer.shown { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        #: Table and column names, loaded with the schema tree on every refresh.
        self.catalog = Catalog()

    def show(self, names: list[str], current: str, at: Offset) -> None:
        """List `names` with `current` highlighted, its top left at the screen offset `at` (no names: hide)."""
        if not names:
            self.hide()
            return
        if [str(self.get_option_at_index(i).prompt) for i in range(self.option_count)] != names:
            self.set_options(Text(name) for name in names)
        self.highlighted = names.index(current) if current in names else None
        parent = self.parent.region.offset if isinstance(self.parent, Widget) else Offset()
        self.styles.offset = (at.x - parent.x, at.y - parent.y)
        self.add_class("shown")

    def hide(self) -> None:
        self.remove_class("shown")


class SqlEditor(TextArea):
    """SQL with completion and find; its query tab (labtui.ui.sql_tabs) binds `esc` to leave it for the result."""

    #: None of its own: `?` lists a labtui widget's BINDINGS, and TextArea's (its ctrl+k among them, which the
    #: pane takes for the next tab) are an editor's usual keys.
    BINDINGS: ClassVar[list[BindingType]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: The candidates listed under the word while the list shows: tab puts the next in the word's place.
        self._cycle: list[str] = []

    # --- completion ---------------------------------------------------------------------------

    @property
    def completer(self) -> Completer | None:
        """The screen's candidate list (the SQL pane's), None outside it."""
        return next(iter(self.screen.query(Completer)), None)

    async def _on_key(self, event: events.Key) -> None:
        if event.key == "tab" and self.complete_word():
            event.stop()
            event.prevent_default()
            return
        self.hide_completions()
        await super()._on_key(event)

    def _on_blur(self, event: events.Blur) -> None:
        self.hide_completions()

    def complete_word(self) -> bool:
        """Complete the word before the cursor (see labtui.ui.model.completion); False when nothing matches.

        One match is inserted; several extend the word to their common prefix, or else to the shortest of them,
        and are listed under the word; tab again, while the list shows, puts the next in its place.
        """
        completer = self.completer
        if completer is None or self.selected_text:
            return False
        row, column = self.cursor_location
        line = self.document.get_line(row)
        word = word_before(line, column)[0]
        if word in self._cycle:
            found: Completion | None = Completion(word, self._cycle[(self._cycle.index(word) + 1) % len(self._cycle)],
                                                  self._cycle)
        else:
            found = complete(completer.catalog, line, column)
        if found is None:
            return False
        self.replace(found.insert, (row, column - len(found.prefix)), (row, column))
        self._cycle = found.candidates if found.insert in found.candidates else []
        cursor = self.cursor_screen_offset
        completer.show(found.candidates, found.insert, Offset(cursor.x - len(found.insert), cursor.y + 1))
        return True

    def hide_completions(self) -> None:
        """Hide the candidate list (any key but tab, or leaving the editor); the next tab completes afresh."""
        self._cycle = []
        if (completer := self.completer) is not None:
            completer.hide()

    # --- find and replace the whole text ------------------------------------------------------

    def select_next(self, needle: str, *, again: bool) -> bool:
        """Select the next match of `needle` (ignoring case, wrapping to the top): from the selection's start as
        the needle is typed, past it when `again`; False when there is none."""
        document = self.document
        if not isinstance(document, Document):  # a code editor's always is
            return False
        start, end = sorted(self.selection)
        found = find_next(self.text, needle, document.get_index_from_location(end if again else start))
        if found is None:
            return False
        self.selection = Selection(document.get_location_from_index(found[0]),
                                   document.get_location_from_index(found[1]))
        return True

    def replace_all(self, text: str) -> None:
        """Put `text` in place of the whole text as one edit, so that ctrl+z brings the old text back."""
        self.replace(text, (0, 0), self.document.end)
