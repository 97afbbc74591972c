"""The SQL view's workbench keys (issue 42 item 4): query tabs that keep their results, a .sql file opened and
saved, the query formatted, found in, and picked from the history."""

from __future__ import annotations

from pathlib import Path

import pytest
from pilot_wait import wait_for
from test_console import make_store

from labtui.ui.model.history import History
from labtui.ui.model.sql_files import QueryFileError, read_query, write_query
from labtui.ui.model.sql_format import FormatError, format_sql
from labtui.ui.model.text_find import count_matches, find_next

SIZE = (120, 40)


def test_format_pretty_prints_and_refuses_what_does_not_parse() -> None:
    assert format_sql("select a,b from results where x>1") == "SELECT\n  a,\n  b\nFROM results\nWHERE\n  x > 1"
    assert format_sql("select 1; select 2;") == "SELECT\n  1;\n\nSELECT\n  2;"
    with pytest.raises(FormatError, match="line 1, column 14"):
        format_sql("select * frm x")
    with pytest.raises(FormatError, match="tokeniz"):
        format_sql("select 'abc")
    with pytest.raises(FormatError, match="nothing to format"):
        format_sql("  \n")


def test_find_wraps_and_ignores_case() -> None:
    text = "select a from Results; select b from results"
    assert find_next(text, "results", 0) == (14, 21)
    assert find_next(text, "results", 15) == (37, 44)
    assert find_next(text, "results", 40) == (14, 21)  # past the last: from the top
    assert find_next(text, "nothing", 0) is None and find_next(text, "", 0) is None
    assert count_matches(text, "RESULTS") == 2


def test_query_files_name_what_went_wrong(tmp_path: Path) -> None:
    with pytest.raises(QueryFileError, match=f"cannot open {tmp_path / 'none.sql'}: no such file or directory"):
        read_query(tmp_path / "none.sql")
    with pytest.raises(QueryFileError, match="is a directory"):
        read_query(tmp_path)
    (tmp_path / "bin.sql").write_bytes(b"\xff\xfe\x00select")
    with pytest.raises(QueryFileError, match="not UTF-8 text"):
        read_query(tmp_path / "bin.sql")
    with pytest.raises(QueryFileError, match=f"no such directory {tmp_path / 'gone'}"):
        write_query(tmp_path / "gone" / "q.sql", "select 1")
    with pytest.raises(QueryFileError, match=r"end the name with \.sql"):
        write_query(tmp_path / "q.txt", "select 1")
    write_query(tmp_path / "q.sql", "select 1")
    assert read_query(tmp_path / "q.sql") == "select 1\n" and sorted(p.name for p in tmp_path.iterdir()) == ["bin.sql",
                                                                                                        "q.sql"]


def test_history_lists_matching_queries_newest_first(tmp_path: Path) -> None:
    history = History(tmp_path / "history.json")
    for query in ("select 1 from results", "select 2 from sessions", "select 3 from results where step = 1"):
        history.add(query)
    assert history.matching("") == ["select 3 from results where step = 1", "select 2 from sessions",
                                    "select 1 from results"]
    assert history.matching("RESULTS step") == ["select 3 from results where step = 1"]


async def test_query_tabs_keep_their_results_and_ask_before_closing_unsaved_text(lab: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.sql_view import SqlPane

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        pane = app.query_one(SqlPane)
        first = pane.tab
        first.editor.text = "select 1 as a"
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: first.result is not None, 30, "the first tab's result")

        await pilot.press("ctrl+n")
        second = pane.tab
        assert second is not first and app.focused is second.editor and second.editor.text == ""
        assert pane.tabs.tab_count == 2 and pane.tabs.query_one("ContentTabs").display  # the row of tabs shows
        await pilot.press(*"select 2 as b, 3 as c", "ctrl+r")
        await wait_for(pilot, lambda: second.result is not None, 30, "the second tab's result")

        await pilot.press("ctrl+k")
        assert pane.tab is first and app.focused is first.editor
        assert pane.result is not None and pane.result.column_names == ["a"]
        assert first.grid.display and first.grid.row_count == 1 and "1 row" in str(first.query_one("#sql-status").content)
        await pilot.press("ctrl+k")
        assert pane.tab is second and pane.result is not None and pane.result.column_names == ["b", "c"]

        await pilot.press("ctrl+g")  # its query is in no file: asked first
        assert pane.tabs.tab_count == 2 and "ctrl+g again closes it" in str(second.query_one("#sql-status").content)
        await pilot.press("ctrl+g")
        assert pane.tabs.tab_count == 1 and pane.tab is first and app.focused is first.editor
        assert not pane.tabs.query_one("ContentTabs").display
        await pilot.press("ctrl+g")  # the last one stays
        assert pane.tabs.tab_count == 1 and "stays open" in str(first.query_one("#sql-status").content)


async def test_open_a_sql_file_in_a_tab_and_save_it_with_the_errors_named(lab: Path, tmp_path: Path) -> None:
    from textual.widgets import Input

    from labtui.ui.app import LabApp
    from labtui.ui.sql_view import SqlPane

    make_store(lab, results=10)
    query = tmp_path / "steps.sql"
    query.write_text("-- the steps\nselect step, count(*) as n\nfrom results\ngroup by step order by step;\n")
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        pane = app.query_one(SqlPane)
        first = pane.tab
        box = app.query_one("#file-path", Input)

        await pilot.press("ctrl+o")
        assert app.focused is box and box.has_class("shown")
        box.value = str(tmp_path / "nope.sql")
        await pilot.press("enter")
        assert f"cannot open {tmp_path / 'nope.sql'}: no such file or directory" in str(
            first.query_one("#sql-status").content)
        assert app.focused is box and box.value == str(tmp_path / "nope.sql") and pane.tabs.tab_count == 1

        box.value = str(query)
        await pilot.press("enter")
        opened = pane.tab
        assert opened is not first and opened.editor.text == query.read_text() and opened.path == query
        assert str(pane.tabs.get_tab(opened.id or "").label) == "steps.sql" and not box.has_class("shown")
        assert app.focused is opened.editor and first.editor.text.startswith("select * from sessions")
        await pilot.press("ctrl+r")  # the statement under the cursor, at the top: the comment and the select
        await wait_for(pilot, lambda: opened.result is not None, 30, "the file's query")
        assert opened.result is not None and opened.result.column_names == ["step", "n"]

        opened.editor.text = "select 42 as answer\n"
        await pilot.press("ctrl+s")
        assert app.focused is box and box.value == str(query)  # saved where it came from unless told otherwise
        box.value = str(tmp_path / "missing" / "q.sql")
        await pilot.press("enter")
        assert f"no such directory {tmp_path / 'missing'}" in str(opened.query_one("#sql-status").content)
        assert box.has_class("shown") and opened.editor.text == "select 42 as answer\n"  # nothing lost
        box.value = str(query)
        await pilot.press("enter")
        assert query.read_text() == "select 42 as answer\n" and not opened.unsaved
        assert f"saved to {query}" in str(opened.query_one("#sql-status").content)
        await pilot.press("ctrl+g")  # saved: closed at once
        assert pane.tabs.tab_count == 1


async def test_f5_formats_a_query_and_leaves_one_that_does_not_parse(lab: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.sql_view import SqlPane

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        tab = app.query_one(SqlPane).tab
        status = tab.query_one("#sql-status")
        tab.editor.text = "select step,count(*) n from results where value>0 group by step"
        await pilot.press("f5")
        assert tab.editor.text == ("SELECT\n  step,\n  COUNT(*) AS n\nFROM results\nWHERE\n  value > 0\n"
                                   "GROUP BY\n  step")
        assert "formatted" in str(status.content)
        await pilot.press("ctrl+z")
        assert tab.editor.text == "select step,count(*) n from results where value>0 group by step"

        tab.editor.text = "select * frm results"
        await pilot.press("f5")
        assert tab.editor.text == "select * frm results" and status.has_class("error")
        assert "not formatted, left as it is" in str(status.content) and "line 1" in str(status.content)


async def test_ctrl_f_selects_each_match_in_turn(lab: Path) -> None:
    from textual.widgets import Input

    from labtui.ui.app import LabApp
    from labtui.ui.sql_view import SqlPane

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        editor = app.query_one(SqlPane).editor
        editor.text = "select metric\nfrom results\nwhere metric in (select METRIC from results)"
        editor.move_cursor((0, 0))
        await pilot.press("ctrl+f", *"metric")
        box = app.query_one("#find", Input)
        assert app.focused is box and editor.selected_text == "metric" and editor.selection.start == (0, 7)
        await pilot.press("enter")
        assert editor.selection.start == (2, 6)
        await pilot.press("enter")
        assert editor.selection.start == (2, 24) and editor.selected_text == "METRIC"
        await pilot.press("f3")  # past the last: the first again
        assert editor.selection.start == (0, 7)
        assert "3 matches for 'metric'" in str(app.query_one(SqlPane).tab.query_one("#sql-status").content)
        await pilot.press("escape")
        assert app.focused is editor and not box.has_class("shown") and editor.selected_text == "metric"
        await pilot.press("f3")  # from the editor too
        assert editor.selection.start == (2, 6)


async def test_f8_lists_the_history_to_filter_and_loads_the_pick(lab: Path) -> None:
    from textual.widgets import OptionList

    from labtui.ui.app import LabApp
    from labtui.ui.sql_history import HistoryScreen
    from labtui.ui.sql_view import SqlPane

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        pane = app.query_one(SqlPane)
        for query in ("select count(*) as n\nfrom results", "select 2 as two", "select session_id from sessions"):
            pane.editor.text = query
            await pilot.press("ctrl+r")
        pane.editor.text = "select 'draft'"
        await pilot.press("f8")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen), 10, "the history")
        listed = app.screen.query_one("#history-list", OptionList)
        assert [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)] == [
            "select session_id from sessions", "select 2 as two", "select count(*) as n from results"]
        await pilot.press(*"from", "down")
        assert listed.option_count == 2 and listed.highlighted == 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: not isinstance(app.screen, HistoryScreen), 10, "the history to close")
        assert pane.editor.text == "select count(*) as n\nfrom results" and app.focused is pane.editor
        await pilot.press("ctrl+z")  # the text before is one undo away
        assert pane.editor.text == "select 'draft'"
