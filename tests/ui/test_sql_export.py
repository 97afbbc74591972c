"""The SQL result's export writes the format its file name asks for (csv, json, parquet) or refuses it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import polars as pl
import pytest
from pilot_wait import wait_for
from test_console import SIZE, make_store

from labtui.core.outputs import ExportError
from labtui.ui.model.query_export import export, export_format, result_frame


def test_each_extension_writes_its_format(tmp_path: Path) -> None:
    frame = result_frame(["a", "a", "b"], [(1, 2, "x"), (3, 4, None)])
    as_json = json.loads(export(frame, tmp_path / "res.json").read_text())
    assert as_json == [{"a": 1, "a_2": 2, "b": "x"}, {"a": 3, "a_2": 4, "b": None}]
    with export(frame, tmp_path / "res.CSV").open(newline="") as file:
        assert list(csv.reader(file)) == [["a", "a_2", "b"], ["1", "2", "x"], ["3", "4", ""]]
    for name in ("res.parquet", "res.pq"):
        assert pl.read_parquet(export(frame, tmp_path / name)).rows() == [(1, 2, "x"), (3, 4, None)]
    assert [export_format(Path(n)) for n in ("a.json", "b.Parquet", "c.csv")] == ["json", "parquet", "csv"]


@pytest.mark.parametrize("name, says", [("res.txt", "extension '.txt'"), ("res", "no extension"),
                                        ("res.json.gz", "extension '.gz'")])
def test_an_unknown_extension_is_refused_in_one_line_and_nothing_is_written(tmp_path: Path, name: str,
                                                                             says: str) -> None:
    with pytest.raises(ExportError) as refused:
        export(result_frame(["a"], [(1,)]), tmp_path / "out" / name)
    message = str(refused.value)
    assert f"cannot export to {tmp_path / 'out' / name}: {says}" in message and "\n" not in message
    assert ".csv, .json or .parquet" in message and not (tmp_path / "out").exists()


async def test_e_in_the_console_writes_json_to_a_json_name_and_refuses_a_txt_one(lab: Path, tmp_path: Path) -> None:
    from textual.widgets import Input, TextArea

    from labtui.ui.app import LabApp

    make_store(lab, results=10)
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4")
        status = app.query_one("#sql-status")
        app.query_one("#sql", TextArea).text = "select 1 as one, 'x' as label union all select 2, null"
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: "2 rows" in str(status.content), 30, "the result")
        box = app.query_one("#export-path", Input)

        app.query_one("#result").focus()
        await pilot.press("e")
        assert app.focused is box
        box.value = str(tmp_path / "res.txt")
        await pilot.press("enter")
        assert f"cannot export to {tmp_path / 'res.txt'}: extension '.txt'" in str(status.content)
        assert app.focused is box and box.has_class("shown") and not (tmp_path / "res.txt").exists()
        await pilot.pause()  # the refusal wraps onto the lines it needs: it was cut at the pane's width
        assert len(str(status.content)) > status.content_size.width and status.size.height > 1, status.size

        box.value = str(tmp_path / "res.json")
        await pilot.press("enter")
        await wait_for(pilot, lambda: "exported 2 row(s)" in str(status.content), 30, "the export")
        assert json.loads((tmp_path / "res.json").read_text()) == [{"one": 1, "label": "x"},
                                                                   {"one": 2, "label": None}]
