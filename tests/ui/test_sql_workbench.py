"""The SQL view as a workbench: completion from the store's catalog, SQL highlighting, the editor's width at
80x24, and ctrl+enter running the statement under the cursor."""

from __future__ import annotations

from pathlib import Path

from pilot_wait import wait_for
from test_console import make_store

from labtui.ui.model.completion import Catalog, complete, word_before
from labtui.ui.model.sql_statements import statement_at

CATALOG = Catalog.from_rows([("resources", "cpu_avail", "DOUBLE"), ("results", "metric", "TEXT"),
                             ("results", "session_id", "TEXT"), ("sessions", "session_id", "TEXT"),
                             ("sessions", "suite", "TEXT")])


def test_completion_takes_names_from_the_catalog_and_keywords() -> None:
    line = "select * from resu"
    found = complete(CATALOG, line, len(line))
    assert found is not None and (found.prefix, found.insert, found.candidates) == ("resu", "results", [])
    several = complete(CATALOG, "from res", 8)
    assert several is not None and several.insert == "results" and several.candidates == ["results", "resources"]
    common = complete(CATALOG, "select sess", 11)
    assert common is not None and common.insert == "session" and common.candidates == ["sessions", "session_id"]
    assert word_before("where results.me", 16) == ("me", "results")
    qualified = complete(CATALOG, "where results.me", 16)
    assert qualified is not None and qualified.insert == "metric"
    assert complete(CATALOG, "select cpu_avail", 16) is None  # complete already
    keyword = complete(CATALOG, "SEL", 3)
    assert keyword is not None and keyword.insert == "SELECT"
    assert complete(CATALOG, "select ", 7) is None


def test_the_statement_under_the_cursor() -> None:
    text = "select 1 as a;\nselect ';' as b, 3 as c; -- a ; in a comment\nselect 4"
    assert statement_at(text, 3) == "select 1 as a"
    assert statement_at(text, text.index("3 as c")) == "select ';' as b, 3 as c"
    assert statement_at(text, len(text)) == "-- a ; in a comment\nselect 4"  # the comment's ; splits nothing
    assert statement_at("select 1;\n\n", 11) == "select 1"


async def test_workbench_at_80x24_completes_highlights_and_runs_the_statement_under_the_cursor(lab: Path) -> None:
    from textual.widgets import OptionList, TextArea

    from labtui.ui.app import LabApp
    from labtui.ui.sql_view import SqlPane

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        pane = app.query_one(SqlPane)
        editor = app.query_one("#sql", TextArea)
        status = app.query_one("#sql-status")
        await wait_for(pilot, lambda: "results" in pane.catalog.columns, 30, "the catalog")
        assert editor.language == "sql" and editor._highlight_query is not None  # tree-sitter, not plain text
        await wait_for(pilot, lambda: editor.region.width > 0, 30, "the editor's layout")
        assert editor.region.width >= 80 // 2 and not app.query_one("#schema").display

        editor.text = "select * from res"
        editor.move_cursor((0, len(editor.text)))
        await pilot.press("tab")
        listed = app.query_one("#completions", OptionList)
        names = [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]
        assert editor.text == "select * from results" and listed.display
        assert names == ["results", "resources", "results_by_step"] and listed.highlighted == 0
        await pilot.press("tab")
        assert editor.text == "select * from resources" and listed.highlighted == 1
        await pilot.press("space")
        assert not listed.display and editor.text == "select * from resources "

        editor.text = "select metr"
        editor.move_cursor((0, len(editor.text)))
        await pilot.press("tab")
        assert editor.text == "select metric"
        await pilot.press("tab")  # nothing left to complete: tab indents
        assert editor.text.startswith("select metric ") and editor.text.strip() == "select metric"

        editor.text = "select 1 as a;\nselect 2 as b, 3 as c;\nselect 4 as d"
        editor.move_cursor((1, 3))
        await pilot.press("ctrl+enter")
        await wait_for(pilot, lambda: "1 row" in str(status.content), 30, "the result")
        assert pane.result is not None and pane.result.column_names == ["b", "c"]

        await pilot.press("f2")
        assert app.query_one("#schema").display


async def test_the_result_full_screen_at_80x24_shows_six_columns_and_f4_brings_it_back(lab: Path) -> None:
    from labtui.ui.app import LabApp

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        app.query_one("#sql").text = ("select session_id, repetition, step, background, benchmark, metric, value, unit "
                                      "from results")
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: app.query_one("#result").row_count == 10, 30, "the result")  # a new grid
        grid = app.query_one("#result")
        await pilot.press("escape", "f4")  # to the result, then full screen
        await pilot.pause(0.2)
        assert app.screen.maximized is grid and grid.region.width == 80
        widths = [column.render_width for column in grid.ordered_columns]
        shown = sum(1 for end in (sum(widths[:i + 1]) for i in range(len(widths))) if end <= grid.region.width)
        assert shown >= 6, widths
        await pilot.press("f4")
        assert app.screen.maximized is None and grid.region.width < 80


async def test_rows_sets_the_row_cap_in_the_app_and_c_copies_a_cell_or_a_row(lab: Path) -> None:
    from labtui.ui.app import LabApp

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("4")
        app.query_one("#sql").text = "select step, value from results order by step, value"
        await pilot.press("escape", ":", *"rows x", "enter")  # out of the editor; refused in one line
        assert any("whole number" in str(n.message) for n in app._notifications)  # before it times out
        await pilot.press(":", *"rows 3", "enter")
        assert app.sql_row_cap == 3 and "row cap 3 (:rows N" in str(app.query_one("#result").border_subtitle)
        await pilot.press("4", "ctrl+r")
        await wait_for(pilot, lambda: app.query_one("#result").row_count == 3, 30, "3 rows of 10")
        await pilot.press("escape", "c")  # the grid, then copy its first cell
        assert app.clipboard == "0"
        await pilot.press("C")
        assert app.clipboard == "0\t0.01"
