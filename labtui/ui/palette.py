"""The command palette (ctrl+p): Textual's, made safe against its search ending after it closed."""

from __future__ import annotations

from textual.command import Command, CommandList, CommandPalette
from textual.timer import Timer, TimerCallback
from textual.widgets import Button, Input


class Palette(CommandPalette):
    """Textual's command palette, whose search and timers may run on after the palette has gone.

    The search runs in a worker and "no matches" shows after a timer; keys typed
    fast and then `esc` (or a chosen command) dismiss the palette while the
    worker is between two results or the timer is pending, and their next
    update of the list met a palette without children: NoMatches, and the
    console crashed.  Once the list is gone, they do nothing.  And `pagedown`
    or `pageup` before the list is laid out (it has no region until shown) asked
    Textual's OptionList for the line of an option it had not placed: KeyError;
    there is nothing to page through then.  And a command chosen twice in a row
    (`enter` on the list as it closes) dismissed a palette that was no longer the
    top screen: ScreenStackError.
    """

    def _shown(self) -> bool:
        """The palette still has its list."""
        return bool(self.query(CommandList))

    def _refresh_command_list(self, command_list: CommandList, commands: list[Command], clear_current: bool) -> None:
        if self._shown():
            super()._refresh_command_list(command_list, commands, clear_current)

    def _watch__list_visible(self) -> None:
        if self._shown():
            super()._watch__list_visible()

    async def _watch__show_busy(self) -> None:
        if self._shown():
            await super()._watch__show_busy()

    def _select_or_command(self, event: Input.Submitted | Button.Pressed | None = None) -> None:
        if self.is_current:  # once dismissed, a late selection has no palette to close
            super()._select_or_command(event)

    def _action_command_list(self, action: str) -> None:
        if action in ("page_up", "page_down") and not self.query_one(CommandList).scrollable_content_region:
            return
        super()._action_command_list(action)

    def set_timer(self, delay: float, callback: TimerCallback | None = None, *, name: str | None = None,
                  pause: bool = False) -> Timer:
        """Textual's set_timer; the callback is skipped once the list is gone."""
        if callback is None:
            return super().set_timer(delay, name=name, pause=pause)
        call = callback

        def while_shown() -> object:
            return call() if self._shown() else None

        return super().set_timer(delay, while_shown, name=name, pause=pause)
