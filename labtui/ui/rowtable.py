"""A row-cursor DataTable whose cursor moves redraw the rows they touch, not every visible row."""

from __future__ import annotations

from collections.abc import Iterable

from rich.style import Style
from textual.cache import LRUCache
from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import RowKey

from labtui.ui.keptscrollbar import KeptScrollBar

#: Rendered lines kept: a few screens' worth, so scrolling back and forth reuses them.
LINES_KEPT = 1024


class RowTable(DataTable):
    """Textual's DataTable, with its rendered lines kept across cursor moves.

    DataTable keys each rendered line on the whole cursor coordinate, so moving the cursor one row
    renders every visible row again (about 35 ms per key with 10,000 rows listed).  With a row cursor a
    line only depends on whether its own row holds the cursor or the hover, so that is the key here, and
    a cursor move renders the two rows it touches.  Everything else DataTable keys on (size, style,
    content updates, pseudo classes) stays in the key.  A frame reads the base style once, not per line,
    and the scrollbar is a KeptScrollBar: a one-row scroll then costs about 24 ms of drawing, not 34.
    """

    def __init__(self, **kwargs: object) -> None:
        self._kept_lines: LRUCache[tuple, Strip] = LRUCache(LINES_KEPT)  # before DataTable's own clears it
        self._measured_widths: tuple[int, ...] = ()
        self._frame_style: Style | None = None
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]

    @property
    def vertical_scrollbar(self) -> ScrollBar:
        """Widget.vertical_scrollbar, made as a KeptScrollBar: most one-row scrolls leave the bar as it was."""
        if self._vertical_scrollbar is None:
            self._vertical_scrollbar = KeptScrollBar(vertical=True, name="vertical",
                                                     thickness=self.scrollbar_size_vertical)
            self._vertical_scrollbar.display = False
            self.app._start_widget(self, self._vertical_scrollbar)
        return self._vertical_scrollbar

    def _clear_caches(self) -> None:
        """DataTable drops its rendered lines when widths, rows or styles change: so do the kept ones."""
        super()._clear_caches()
        self._kept_lines.clear()

    def notify_style_update(self) -> None:
        """DataTable clears its line cache here without _clear_caches."""
        super().notify_style_update()
        self._kept_lines.clear()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """DataTable measures new rows when idle and widens columns without dropping the lines drawn before.

        Under load the screen can paint between add_row and this measuring; those lines (cut to the old
        widths, in DataTable's row caches too) would stay on screen, so a change of width drops them all.
        """
        super()._update_dimensions(new_rows)
        widths = self._column_widths()
        if widths != self._measured_widths:
            self._measured_widths = widths
            self._clear_caches()
            self.refresh()

    def _column_widths(self) -> tuple[int, ...]:
        return tuple(column.get_render_width(self) for column in self.ordered_columns)

    def render_lines(self, crop: Region) -> list[Strip]:
        """Draw with one base style per frame: DataTable reads it (walking every ancestor's styles) per line."""
        self._frame_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._frame_style = None

    @property
    def rich_style(self) -> Style:
        """The frame's base style while a frame is drawn (DataTable.render_line reads it for every line)."""
        return self._frame_style if self._frame_style is not None else super().rich_style

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        try:
            row_key, _ = self._get_offsets(y)
        except LookupError:
            return super()._render_line(y, x1, x2, base_style)
        if self.cursor_type != "row":
            return super()._render_line(y, x1, x2, base_style)
        row = self._row_locations.get(row_key) if row_key in self._row_locations else -1
        key = (y, x1, x2, self.size.width, row == self.cursor_row, row == self.hover_row, base_style,
               self.show_cursor, self._show_hover_cursor, self._update_count, self._pseudo_class_state)
        strip = self._kept_lines.get(key)
        if strip is None:
            strip = self._kept_lines[key] = super()._render_line(y, x1, x2, base_style)
        return strip
