"""Error lines fit the terminal: lists of every known name are cut to what fits, with a count of the rest."""

from __future__ import annotations

import pytest

from labtui.commands import dispatch
from labtui.core.errors import UsageError
from labtui.core.words import MIN_WIDTH, SHORT, line_width, name_list, one_line

SUITES = [f"suite-{n:02}" for n in range(60)]


def _error(names: list[str]) -> UsageError:
    return UsageError(f"nosuch: expected a suite file or one of {name_list(names, '`labtui suites`')}")


def test_the_error_keeps_every_name_and_the_line_keeps_what_fits() -> None:
    error = _error(SUITES)
    assert str(error).endswith(", ".join(SUITES))
    line = one_line("labtui run: ", error, width=120)
    assert line == ("labtui run: nosuch: expected a suite file or one of suite-00, suite-01, suite-02, "
                    "... (57 more: `labtui suites`)")
    assert len(line) == 112  # a fourth name would make it 122
    wider = one_line("labtui run: ", error, width=140)
    assert len(line) < len(wider) <= 140 and wider.startswith(line.split(" ... ")[0])


def test_where_not_one_name_fits_the_count_stands_for_them() -> None:
    line = one_line("labtui run: ", _error(SUITES), width=80)
    assert line == "labtui run: nosuch: expected a suite file or one of the 60 in `labtui suites`"


def test_a_line_that_fits_and_a_short_list_are_left_whole() -> None:
    assert one_line("labtui run: ", _error(SUITES[:3]), width=80).endswith("suite-00, suite-01, suite-02")
    short = _error([f"a-rather-long-backend-name-{n}" for n in range(SHORT)])
    assert one_line("labtui run: ", short, width=80) == f"labtui run: {short}"  # wider than 80, but not cut
    assert one_line("labtui run: ", _error(SUITES), width=1000) == f"labtui run: {_error(SUITES)}"


def test_lines_of_the_message_are_joined() -> None:
    assert one_line("labtui sql: ", "Table nosuch does not exist!\nDid you mean \"resources\"?\n") == \
        'labtui sql: Table nosuch does not exist! Did you mean "resources"?'


@pytest.mark.parametrize("columns,width", [("200", 200), ("40", MIN_WIDTH), ("80", 80)])
def test_the_width_is_the_terminals_and_at_least_80(columns: str, width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", columns)
    assert line_width() == width


def test_dispatch_prints_the_cut_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "120")

    class Args:
        command = "run"

        @staticmethod
        def func(args: object) -> int:
            raise _error(SUITES)

    assert dispatch(Args()) == 2  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err.rstrip("\n")) <= 120 and "(57 more: `labtui suites`)" in err


@pytest.mark.parametrize("query,line", [
    ("select * from thingz", 'table with name thingz does not exist! Did you mean "things"?'),
    ("selec 1", 'syntax error at or near "selec"'),
    ("select cast('a' as int)", "Conversion Error: Could not convert string 'a' to INT32"),
])
def test_what_duckdb_says_of_a_query_is_one_line(query: str, line: str) -> None:
    """The hint folded in, the query echoed back with carets left out, the kind of a mistake in the query dropped."""
    import duckdb

    from labtui.commands.query import said

    con = duckdb.connect()
    con.execute("CREATE TABLE things (x INTEGER)")
    with pytest.raises(duckdb.Error) as caught:
        con.execute(query).fetchall()
    assert "\n" in str(caught.value)
    assert said(caught.value) == line
