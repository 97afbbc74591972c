"""A vertical scrollbar that draws its lines again only when what it shows changes."""

from __future__ import annotations

from rich.segment import Segments
from textual.geometry import Region, Size
from textual.scrollbar import ScrollBar, ScrollBarRender
from textual.strip import Strip


class KeptScrollBar(ScrollBar):
    """Textual's ScrollBar, keeping its drawn lines while its bar (thumb, colours, size) stays the same.

    A table scrolled one row of 10,000 moves the thumb by 1/240 of a cell, so the bar looks the same for
    hundreds of rows, yet ScrollBar draws all its lines on every scroll: about 8 ms of a 32 ms frame in
    the Instances view.  The key is the bar's segments, so whatever changes them (a move of the thumb
    by an eighth of a cell, hover, grab, a theme) draws it again.
    """

    def __init__(self, vertical: bool = True, name: str | None = None, *, thickness: int = 1) -> None:
        super().__init__(vertical, name, thickness=thickness)
        self._kept: tuple[tuple[object, ...], list[Strip]] | None = None

    def render_lines(self, crop: Region) -> list[Strip]:
        key = self._drawn_key(crop)
        if key is not None and self._kept is not None and self._kept[0] == key:
            return list(self._kept[1])
        strips = super().render_lines(crop)
        self._kept = None if key is None else (key, strips)
        return strips

    def _drawn_key(self, crop: Region) -> tuple[object, ...] | None:
        """What the lines in crop depend on: the bar's segments at this size (None: not a plain bar)."""
        bar = self.render()
        if type(bar) is not ScrollBarRender:
            return None
        size: Size = self.size
        options = self.app.console.options.update_dimensions(size.width, size.height)
        drawn = [segment for part in bar.__rich_console__(self.app.console, options) if isinstance(part, Segments)
                 for segment in part.segments]
        return (crop, size, tuple(drawn))
