"""`labtui import`: a CSV or real tools' output into a new session of a real DuckDB store."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from labtui.cli import main
from labtui.parsers.unixbench import unixbench_slug
from labtui.store import fetch_frame

DATA = Path(__file__).parents[1] / "data" / "parsers"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "run"))
    return tmp_path / "store" / "lab.duckdb"


def _brandz_csv(path: Path) -> list[tuple[str, str]]:
    """The BrandZ post's table as a CSV, named as parse_unixbench names the tests (1 and 2 copies: _p1, _p2).

    The slowdown view takes the first background of a metric as its baseline:
    native is background 0, the lx zone background 1.  Returns (metric,
    printed percentage) for every cell the post prints.
    """
    text = (DATA / "brandz-lx-unixbench-post.txt").read_text()
    row = re.compile(r"^(.+?) ([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+) (lps|lpm|K Bps) (-?\d+,\d)% (-?\d+,\d)%$", re.M)
    printed = []
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["benchmark", "metric", "value", "unit", "better", "step", "background", "repetition", "host"])
        for m in row.finditer(text):
            for copies, zone, native, pct in ((1, m[2], m[4], m[7]), (2, m[3], m[5], m[8])):
                metric = f"{unixbench_slug(m[1])}_p{copies}"
                out.writerow(["unixbench", metric, native, m[6], "higher", 0, 0, 0, "native"])
                out.writerow(["unixbench", metric, zone, m[6], "higher", 0, 1, 0, "lx-zone"])
                printed.append((metric, pct.replace(",", ".")))
    return printed


def test_import_csv_reproduces_the_brandz_table_in_the_store(tmp_path: Path, db: Path, capsys) -> None:
    printed = _brandz_csv(tmp_path / "brandz.csv")
    assert main(["import", str(tmp_path / "brandz.csv"), "--session", "brandz", "--db", str(db)]) == 0
    assert "session brandz: 44 results" in capsys.readouterr().out
    session = fetch_frame(db, "SELECT kind, status FROM sessions WHERE session_id = 'brandz'").rows()
    assert session == [("import", "completed")]
    got = dict(
        fetch_frame(db, "SELECT metric, slowdown_pct FROM slowdown WHERE session_id = 'brandz' AND background = 1").rows()
    )
    assert len(got) == len(printed) == 22
    assert printed[0] == ("execl_throughput_p1", "-60.0")
    for metric, pct in printed:
        # the post prints the change of the zone against native: minus the slowdown
        assert f"{-got[metric]:.1f}" == pct, metric


def test_import_tool_outputs_one_repetition_per_file(db: Path) -> None:
    files = [str(DATA / "sysbench-1.0.20-cpu-pi5.txt"), str(DATA / "sysbench-1.0.20-memory.txt")]
    assert main(["import", *files, "--format", "sysbench", "--session", "sb", "--step", "3", "--db", str(db)]) == 0
    rows = fetch_frame(
        db, "SELECT repetition, step, metric, value, better FROM results WHERE session_id = 'sb' ORDER BY repetition, metric"
    ).rows()
    assert (0, 3, "cpu_events_per_s", 1033.96, "higher") in rows
    assert (1, 3, "memory_mib_s", 16705.94, "higher") in rows
    assert {r[0] for r in rows} == {0, 1}


def test_import_unixbench_report(db: Path) -> None:
    report = str(DATA / "unixbench-5.1.2-atom-2copies.txt")
    assert main(["import", report, "--format", "unixbench", "--session", "ub", "--host", "atom", "--db", str(db)]) == 0
    rows = fetch_frame(db, "SELECT host, value FROM results WHERE session_id = 'ub' AND metric = 'execl_throughput_p2'").rows()
    assert rows == [("atom", 2053.5)]


def test_import_refuses_an_existing_session(tmp_path: Path, db: Path, capsys) -> None:
    _brandz_csv(tmp_path / "b.csv")
    assert main(["import", str(tmp_path / "b.csv"), "--session", "twice", "--db", str(db)]) == 0
    assert main(["import", str(tmp_path / "b.csv"), "--session", "twice", "--db", str(db)]) == 2
    assert "session 'twice' already exists" in capsys.readouterr().err
    assert fetch_frame(db, "SELECT count(*) FROM results WHERE session_id = 'twice'").rows() == [(44,)]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("benchmark,metric,value,unit\nx,m,1,s\n", "line 1: missing column(s) better"),
        ("benchmark,metric,value,unit,better\nx,m,fast,s,higher\n", "line 2: value: expected a number, got 'fast'"),
        ("benchmark,metric,value,unit,better\nx,m,1,s,higher\nx,m,2,s,more\n", "line 3: better must be 'higher' or 'lower'"),
        ("benchmark,metric,value,unit,better,step\nx,m,1,s,lower,two\n", "line 2: step: expected a whole number"),
        ("benchmark,metric,value,unit,better\n", "no result lines"),
        # read by DuckDB's read_csv and validated in SQL: still the line and the column
        ("benchmark,metric,value,unit,better\nx,m,nan,s,lower\n", "line 2: value: expected a finite number, got 'nan'"),
        ("benchmark,metric,value,unit,better\nx,m,1,s,lower\nx,m,,s,lower\n", "line 3: value: expected a number, got ''"),
        ("benchmark,metric,value,unit,better,step\nx,m,1,s,lower,3.5\n", "line 2: step: expected a whole number, got '3.5'"),
        ("benchmark,metric,value,unit,better,background\nx,m,1,s,lower,99999999999\n",
         "line 2: background: expected a whole number, got '99999999999'"),
        ("benchmark,metric,value,unit,better\n\"two\nlines\",m,1,s,lower\nx,,2,s,lower\n", "line 4: metric is empty"),
        ("benchmark,metric,value,unit,better\nx,m,1,s,lower\n\n,m,1,s,lower\n", "line 4: benchmark is empty"),
        ("benchmark,metric,value,unit,better\nx,m,1,s,lower,9\n", "line 2: more fields than the header's 5"),
        ("benchmark,metric,value,unit,better\nx,m,1,s\n", "line 2: fewer fields than the header's 5"),
        ("benchmark,metric,value,unit,better\nx,m,1,s,lower\nx,m,\"2,s,lower\n", "line 3:"),
        ("", "line 1: missing column(s) benchmark, metric, value, unit, better"),
        ("benchmark,metric,value,unit,better\nx,m,1,s,\n", "line 2: better must be 'higher' or 'lower', got ''"),
    ],
)
@pytest.mark.parametrize("store", ["new", "existing"])
def test_import_csv_errors_name_file_and_line(tmp_path: Path, db: Path, capsys, content: str, message: str,
                                              store: str) -> None:
    """Into a new store the file is checked before the store is made; into an existing one the rows go straight
    in, a bad one fails the INSERT and the transaction is rolled back."""
    if store == "existing":
        _brandz_csv(tmp_path / "kept.csv")
        assert main(["import", str(tmp_path / "kept.csv"), "--session", "kept", "--db", str(db)]) == 0
        capsys.readouterr()
    bad = tmp_path / "bad.csv"
    bad.write_text(content)
    assert main(["import", str(bad), "--session", "bad", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and message in err
    if store == "new":
        assert not db.exists()  # nothing written
    else:
        assert fetch_frame(db, "SELECT session_id, status FROM sessions").rows() == [("kept", "completed")]
        assert fetch_frame(db, "SELECT session_id, count(*) FROM results GROUP BY ALL").rows() == [("kept", 44)]


def test_import_format_errors(tmp_path: Path, db: Path, capsys) -> None:
    assert main(["import", str(DATA / "wrk-solon-jetty.txt"), "--session", "w", "--db", str(db)]) == 2
    assert "give --format" in capsys.readouterr().err
    assert main(["import", str(DATA / "wrk-solon-jetty.txt"), "--format", "lmbench", "--session", "w", "--db", str(db)]) == 2
    assert "wrk-solon-jetty.txt: not lmbench output" in capsys.readouterr().err
    assert main(["import", str(DATA / "wrk-solon-jetty.txt"), "--format", "iperf", "--session", "w", "--db", str(db)]) == 2
    assert "--format 'iperf': choose one of csv" in capsys.readouterr().err
    assert main(["import", str(DATA / "wrk-solon-jetty.txt"), "--format", "wrk", "--session", "bad name", "--db", str(db)]) == 2
    assert "--session 'bad name'" in capsys.readouterr().err


def test_import_csv_errors_name_the_line_of_a_bad_encoding(tmp_path: Path, db: Path, capsys) -> None:
    bad = tmp_path / "latin1.csv"
    bad.write_bytes("benchmark,metric,value,unit,better\nx,m,1,s,lower\nsch\xe4tzung,m,1,s,lower\n".encode("latin-1"))
    assert main(["import", str(bad), "--session", "enc", "--db", str(db)]) == 2
    assert f"{bad}: line 3: not UTF-8 text" in capsys.readouterr().err
    assert not db.exists()


def test_import_csv_through_duckdb_keeps_every_value(tmp_path: Path, db: Path, capsys) -> None:
    """Quoted fields, extra columns (ignored), a BOM, blank lines, defaults for missing optional values, two files."""
    first = tmp_path / "a.csv"
    first.write_text(
        "\ufeffnote,benchmark,metric,value,unit,better,step,host\n"
        '"a, b",bench,"boot, cold",1.5,s,lower,2,h1\n'
        "\n"
        '"it\'s ""quoted""",bench,mem,1e3,,higher,,\n',
        encoding="utf-8",
    )
    second = tmp_path / "b.csv"
    second.write_text("benchmark,metric,value,unit,better,repetition,background\nx,y,-2,ms,lower,7,30\n")
    args = ["import", str(first), str(second), "--session", "mixed", "--host", "lab", "--step", "5", "--background", "10",
            "--db", str(db)]
    assert main(args) == 0
    assert "session mixed: 3 results from 2 file(s) (csv)" in capsys.readouterr().out
    rows = fetch_frame(
        db, "SELECT repetition, step, background, host, instance_id, benchmark, metric, value, unit, better, placement, "
        "ts IS NOT NULL FROM results WHERE session_id = 'mixed' ORDER BY value"
    ).rows()
    assert rows == [
        (7, 5, 30, "lab", "", "x", "y", -2.0, "ms", "lower", None, True),
        (0, 2, 10, "h1", "", "bench", "boot, cold", 1.5, "s", "lower", None, True),
        (0, 5, 10, "lab", "", "bench", "mem", 1000.0, "", "higher", None, True),
    ]
    session = fetch_frame(db, "SELECT kind, status, host, message FROM sessions WHERE session_id = 'mixed'").rows()
    assert session == [("import", "completed", "lab", "imported 3 results from 2 file(s)")]


def test_import_csv_second_file_error_names_that_file(tmp_path: Path, db: Path, capsys) -> None:
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("benchmark,metric,value,unit,better\nx,m,1,s,lower\n")
    bad.write_text("benchmark,metric,value,unit,better\nx,m,1,s,lower\nx,m,1,s,sideways\n")
    assert main(["import", str(good), str(bad), "--session", "two", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: line 3: better must be 'higher' or 'lower', got 'sideways'" in err
    assert not db.exists()


def test_import_csv_second_file_error_into_an_existing_store_keeps_the_first_out(tmp_path: Path, db: Path,
                                                                                capsys) -> None:
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text("benchmark,metric,value,unit,better\nx,m,1,s,lower\n")
    assert main(["import", str(good), "--session", "one", "--db", str(db)]) == 0
    bad.write_text("benchmark,metric,value,unit,better,step\nx,m,1,s,lower,1\nx,m,1,s,lower,1.5\n")
    assert main(["import", str(good), str(bad), "--session", "two", "--db", str(db)]) == 2
    assert f"{bad}: line 3: step: expected a whole number, got '1.5'" in capsys.readouterr().err
    assert fetch_frame(db, "SELECT session_id, count(*) FROM results GROUP BY ALL").rows() == [("one", 1)]
    assert fetch_frame(db, "SELECT session_id FROM sessions").rows() == [("one",)]


def test_import_refuses_the_session_of_a_journal(tmp_path: Path, db: Path, capsys) -> None:
    """A run's session may be in its journal only (the store held, or not fed yet): its name is taken too."""
    from labtui.store.journal import Journal

    good = tmp_path / "good.csv"
    good.write_text("benchmark,metric,value,unit,better\nx,m,1,s,lower\n")
    assert main(["import", str(good), "--session", "first", "--db", str(db)]) == 0
    journal = Journal.create(db, "running")
    try:
        assert main(["import", str(good), "--session", "running", "--db", str(db)]) == 2
    finally:
        journal.close(delete=True)
    assert "session 'running' already exists" in capsys.readouterr().err
    assert fetch_frame(db, "SELECT session_id FROM sessions").rows() == [("first",)]


def test_import_csv_reads_back_an_export(tmp_path: Path, db: Path) -> None:
    printed = _brandz_csv(tmp_path / "brandz.csv")
    assert main(["import", str(tmp_path / "brandz.csv"), "--session", "orig", "--db", str(db)]) == 0
    assert main(["export", "orig", "--format", "csv", "--out", str(tmp_path / "exp"), "--db", str(db)]) == 0
    exported = tmp_path / "exp" / "results.csv"
    assert exported.exists()
    assert main(["import", str(exported), "--session", "again", "--db", str(db)]) == 0
    count = "SELECT count(*) FROM results WHERE session_id = ?"
    assert fetch_frame(db, count, ["again"]).rows() == fetch_frame(db, count, ["orig"]).rows() == [(2 * len(printed),)]


def test_import_csv_path_is_a_name_not_a_pattern(tmp_path: Path, db: Path, capsys) -> None:
    folder = tmp_path / "[x]"
    folder.mkdir()
    (folder / "r*[a].csv").write_text("benchmark,metric,value,unit,better\nx,m,1,s,lower\n")
    (folder / "rxa.csv").write_text("benchmark,metric,value,unit,better\nx,m,1,s,lower\nx,m,2,s,lower\n")  # a glob would match
    assert main(["import", str(folder / "r*[a].csv"), "--session", "glob", "--db", str(db)]) == 0
    assert "session glob: 1 results" in capsys.readouterr().out
