"""RowTable draws exactly what Textual's DataTable draws, a cursor move renders only the rows it touches,
and its scrollbar draws what Textual's draws."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.scrollbar import ScrollBar
from textual.widgets import DataTable

from labtui.ui.keptscrollbar import KeptScrollBar
from labtui.ui.rowtable import RowTable

ROWS = 300


class Tables(App):
    """A RowTable and a plain DataTable holding the same rows, the one focused is driven by keys."""

    def compose(self) -> ComposeResult:
        yield RowTable(id="kept")
        yield DataTable(id="plain", cursor_type="row", zebra_stripes=True)

    def on_mount(self) -> None:
        for table in self.query(DataTable):
            table.styles.height = 12
            for column in ("name", "state", "age"):
                table.add_column(column, key=column)
            for i in range(ROWS):
                table.add_row(Text(f"lab-{i:04d}"), Text("running" if i % 3 else "[/]stuck"), Text(f"{i}s"),
                              key=str(i))


def lines(table: DataTable) -> list[str]:
    """Every visible line as its segments' text and style, as the compositor gets it (one frame)."""
    return [repr(list(strip)) for strip in table.render_lines(Region(0, 0, *table.size))]


async def press_on_both(app: Tables, pilot, keys: list[str]) -> None:
    """The same keys to each table in turn; then neither holds the focus, so both draw alike."""
    for table_id in ("kept", "plain"):
        app.query_one(f"#{table_id}", DataTable).focus()
        await pilot.press(*keys)
        await pilot.pause()
    app.set_focus(None)
    await pilot.pause()


async def test_a_row_table_draws_what_a_data_table_draws_after_moves_scrolls_and_updates() -> None:
    app = Tables()
    async with app.run_test(size=(80, 30)) as pilot:
        await pilot.pause()
        kept, plain = app.query_one("#kept", RowTable), app.query_one("#plain", DataTable)
        await press_on_both(app, pilot, [])
        assert lines(kept) == lines(plain)
        await press_on_both(app, pilot, ["down"] * 25)  # past the bottom: the table scrolls
        assert kept.cursor_row == plain.cursor_row == 25
        assert lines(kept) == lines(plain)
        for table in (kept, plain):
            table.update_cell("24", "state", Text("gone"))
        await pilot.pause()
        assert "gone" in "".join(lines(kept))
        assert lines(kept) == lines(plain)
        for table in (kept, plain):  # a wider value widens its column: every kept line is stale
            table.update_cell("23", "state", Text("destroying-now"), update_width=True)
        await pilot.pause()
        assert "destroying-now" in "".join(lines(kept))
        assert lines(kept) == lines(plain)
        await press_on_both(app, pilot, ["up"] * 3 + ["pagedown", "up"])
        assert kept.cursor_row == plain.cursor_row > 25
        assert lines(kept) == lines(plain)


async def test_a_cursor_move_renders_only_the_rows_it_touches(monkeypatch) -> None:
    rendered: list[int] = []
    plain_render_line = DataTable._render_line

    def counting(self, y, x1, x2, base_style):
        rendered.append(y)
        return plain_render_line(self, y, x1, x2, base_style)

    monkeypatch.setattr(DataTable, "_render_line", counting)
    app = Tables()
    async with app.run_test(size=(80, 30)) as pilot:
        kept = app.query_one("#kept", RowTable)
        kept.focus()
        await pilot.press("down", "down", "down", "down", "down", "down", "down", "down")  # cursor on row 8, of 11 shown
        await pilot.pause()
        rendered.clear()
        await pilot.press("down")
        await pilot.pause()
        # row 9 (line 10 under the header) got the cursor; row 8 without it was drawn before the cursor came
        assert sorted(set(rendered)) in ([10], [9, 10]), sorted(set(rendered))
        rendered.clear()
        await pilot.press("down", "down", "down", "down")  # the table scrolls: only the rows new on screen and the cursor's
        await pilot.pause()
        assert len(set(rendered)) <= 8, sorted(set(rendered))


async def test_a_line_drawn_before_the_table_measured_its_new_row_is_drawn_again_after() -> None:
    """Under load the screen can paint between add_row and the table's idle measuring: that paint must not stay."""
    app = Tables()
    async with app.run_test(size=(80, 30)) as pilot:
        await pilot.pause()
        kept = app.query_one("#kept", RowTable)
        kept.clear()
        kept.add_row(Text("boot_time_of_a_long_metric"), Text("running"), Text("1s"), key="long")
        early = "".join(segment.text for segment in kept.render_line(1))  # columns still as wide as before
        assert "boot_time_of_a_long_metric" not in early
        await pilot.pause()
        assert "boot_time_of_a_long_metric" in "".join(segment.text for segment in kept.render_line(1))


async def test_the_scrollbar_draws_what_textuals_draws_at_every_row_and_again_when_the_thumb_moves() -> None:
    app = Tables()
    async with app.run_test(size=(80, 30)) as pilot:
        kept = app.query_one("#kept", RowTable)
        kept.focus()
        await pilot.pause()
        bar = kept.vertical_scrollbar
        assert isinstance(bar, KeptScrollBar)
        drawn: set[str] = set()
        for _ in range(60):  # the thumb moves an eighth of a cell every few rows
            await pilot.press("down")
            await pilot.pause()
            crop = Region(0, 0, *bar.size)
            kept_lines = [repr(list(strip)) for strip in bar.render_lines(crop)]
            assert kept_lines == [repr(list(strip)) for strip in ScrollBar.render_lines(bar, crop)]
            drawn.add("".join(kept_lines))
        assert len(drawn) > 3  # the thumb was seen at several places, each drawn anew
