"""Every listing's CSV and JSON carry the rows its table shows: as many, with the same values.

Each command that takes `--format table|csv|json` runs three times in-process (labtui.cli.main) on one small
store; its table is read back from the text (rich's boxes, or the column layout compare prints), and each cell
the table shows is checked against the CSV cell and the JSON value of the same row and column. A table shows a
value as text: "-" or nothing for none, yes/no, lists joined by ", ", times to the second, figures rounded
(the figure must round to the digits shown) and grouped by thousands.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from labtui.backends.base import Instance, Labels
from labtui.cli import main
from labtui.commands import instances
from labtui.core.units import MISSING

DATA = Path(__file__).parents[1] / "data"
#: A session measured at three background counts (two repetitions of one metric), for `trend`.
TREND_CSV = """benchmark,metric,value,unit,better,background,repetition
b,ops,10,op/s,higher,0,0
b,ops,11,op/s,higher,0,1
b,ops,8,op/s,higher,4,0
b,ops,7.5,op/s,higher,4,1
b,ops,5,op/s,higher,8,0
b,ops,5.5,op/s,higher,8,1
b,lat,1.5,ms,lower,0,0
b,lat,1.7,ms,lower,4,0
b,lat,2.9,ms,lower,8,0
"""
LAB_CONFIG = '[hosts.h1]\naddress = "127.0.0.1"\nport = 2222\nuser = "lab"\ntags = ["t1", "t2"]\n' \
             '[hosts.h2]\naddress = "127.0.0.2"\nport = 22\n'

Rows = list[dict[str, str]]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with three imported sessions (two of the same machine, one of a zone) and one for trend."""
    tmp = tmp_path_factory.mktemp("listings")
    db = tmp / "lab.duckdb"
    (tmp / "trend.csv").write_text(TREND_CSV)
    for source, session in ((DATA / "compare_brandz_native.csv", "native"), (DATA / "compare_brandz_lxzone.csv", "lx"),
                            (DATA / "compare_brandz_native.csv", "native2"), (tmp / "trend.csv", "trend")):
        assert main(["--db", str(db), "import", str(source), "--session", session]) == 0
    (tmp / "labtui.toml").write_text(LAB_CONFIG)
    return db


# --- reading a table back ----------------------------------------------------------------------------------------


def boxed(text: str) -> Rows:
    """The rows of a rich table with column rules (│ and ┃), keyed by its header; a line whose first cell is
    empty continues the row above (a wrapped cell)."""
    lines = [line for line in text.splitlines() if "│" in line or "┃" in line]

    def cells(line: str) -> list[str]:
        parts = [c.strip() for c in re.split("[│┃]", line)]
        return parts[1:-1] if line.lstrip()[:1] in ("│", "┃") else parts

    header, rows = cells(lines[0]), []
    for line in lines[1:]:
        values = cells(line)
        if rows and values[0] == "":
            rows[-1] = {k: f"{v} {extra}".strip() for (k, v), extra in zip(rows[-1].items(), values)}
        else:
            rows.append(dict(zip(header, values)))
    return rows


#: A metric's row in compare's table: the metric with its unit and direction, then a figure (n) per session and
#: the figures after them (the verdict last, with spaces in it).
_METRIC = re.compile(r"^   (?P<metric>\S+) \((?P<unit>[^,]*), (?P<arrow>[↑↓])\)\s+(?P<rest>.*?)\s*$")
_MEAN_N = re.compile(r"(\S+) \((\d+)\)")


def compared(text: str) -> Rows:
    """The metric rows of `compare A B`'s table (a section per benchmark, no rules between columns)."""
    rows = []
    for line in text.splitlines():
        if not (m := _METRIC.match(line)):
            continue
        (mean_a, n_a), (mean_b, n_b) = _MEAN_N.findall(m["rest"])
        after = _MEAN_N.sub("", m["rest"]).split()
        ratio, change, slowdown = after[:3]
        verdict = m["rest"].split("   ")[-1].strip()
        rows.append({"metric": m["metric"], "unit": m["unit"], "better": "higher" if m["arrow"] == "↑" else "lower",
                     "mean_a": mean_a, "n_a": n_a, "mean_b": mean_b, "n_b": n_b, "ratio": ratio,
                     "change_pct": change, "slowdown_pct": slowdown, "verdict": verdict})
    return rows


def side_by_side(text: str) -> Rows:
    """The metric rows of `compare A B C`'s table: mean (n) of each session, then each one's change against A."""
    rows = []
    for line in text.splitlines():
        if not (m := _METRIC.match(line)):
            continue
        means = _MEAN_N.findall(m["rest"])
        changes = _MEAN_N.sub("", m["rest"]).split()
        row = {"metric": m["metric"], "unit": m["unit"]}
        for i, (mean, n) in enumerate(means, start=1):
            row |= {f"mean_{i}": mean, f"n_{i}": n}
        for i, change in enumerate(changes, start=2):
            row[f"change_pct_{i}"] = change
        rows.append(row)
    return rows


#: trend's table headers -> the CSV/JSON keys (its `levels` column is the range of background counts, which the
#: CSV gives as a count: not compared).
TREND_KEYS = {"n": "n", "a": "slope", "b": "intercept", "r²": "r2", "Δ%": "delta_pct", "±95%": "delta_ci95_pct",
              "d%": "d_pct", "sign": "sign"}


def trended(text: str) -> Rows:
    rows = []
    for row in boxed(text):
        name = re.fullmatch(r"(?P<benchmark>[^/]+)/(?P<metric>\S+) \((?P<unit>[^)]*)\)", row["benchmark/metric (unit)"])
        assert name, row
        rows.append({**name.groupdict(), **{key: row[header] for header, key in TREND_KEYS.items()}})
    return rows


# --- the listings ------------------------------------------------------------------------------------------------


def _fake_instances(monkeypatch: pytest.MonkeyPatch, db: Path) -> None:
    """`instances` lists what a backend lists: one of its own that lists three fixed instances."""
    made = [Instance(Labels("listing-1", role, f"{role[:2]}{i}"), f"lab-listing-1-{role}{i}", "fake", "local",
                     state, created_at=1.79e9 + i, handle=f"pid {4000 + i}")
            for i, (role, state) in enumerate([("background", "running"), ("worker", "exited"), ("idle", "running")])]

    class Listing:
        name = "fake"

        async def list(self, session: str | None = None) -> list[Instance]:
            return [i for i in made if session in (None, i.labels.session)]

    monkeypatch.setattr(instances, "backends_for", lambda args, host: [Listing()])


def _lab_config(monkeypatch: pytest.MonkeyPatch, db: Path) -> None:
    monkeypatch.setenv("LABTUI_CONFIG", str(db.parent / "labtui.toml"))


def _rows(doc: Any) -> list[dict[str, Any]]:
    return doc


def _info_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": v} for k, v in doc.items()]


def _side_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """compare A B C's JSON rows with each session's figures flattened as the CSV names them (mean_2, ...)."""
    return [{**{k: v for k, v in row.items() if k != "columns"},
             **{f"{k}_{i}": v for i, column in enumerate(row["columns"], start=1) for k, v in column.items()}}
            for row in doc["rows"]]


@dataclass(frozen=True)
class Listing:
    argv: tuple[str, ...]
    table: Callable[[str], Rows] = boxed
    json_rows: Callable[[Any], list[dict[str, Any]]] = _rows
    #: Columns only the table has (a value computed for people, e.g. an age).
    table_only: frozenset[str] = field(default_factory=frozenset)
    setup: Callable[[pytest.MonkeyPatch, Path], None] | None = None


LISTINGS = {
    "sessions": Listing(("sessions",)),
    "suites": Listing(("suites",)),
    "sql": Listing(("sql", "SELECT session_id, metric, value, background, repetition FROM results "
                           "WHERE session_id IN ('trend', 'native') ORDER BY session_id, metric, background, repetition")),
    "instances": Listing(("instances", "--backend", "fake"), table_only=frozenset({"age"}), setup=_fake_instances),
    "backends": Listing(("backends",)),
    "hosts": Listing(("hosts",), setup=_lab_config),
    "info": Listing(("info",), json_rows=_info_rows),
    "compare": Listing(("compare", "native", "lx"), table=compared, json_rows=lambda doc: doc["rows"]),
    "compare-side-by-side": Listing(("compare", "native", "lx", "native2"), table=side_by_side, json_rows=_side_rows),
    "trend": Listing(("trend", "trend"), table=trended),
}


# --- the check ---------------------------------------------------------------------------------------------------

_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d)?")


def _half_last_digit(shown: str) -> float | None:
    """Half a unit of the last digit a figure is shown to (None: not a figure)."""
    m = re.fullmatch(r"[+-]?\d[\d,]*(?:\.(\d*))?(?:e([+-]\d+))?", shown)
    if m is None:
        return None
    return 0.5 * 10.0 ** (int(m[2] or 0) - len(m[1] or "")) * (1 + 1e-9)


def shows(shown: str, value: Any) -> bool:
    """Whether a table cell shows `value` (a JSON value, or a CSV cell's text)."""
    if isinstance(value, bool) or value in ("True", "False"):
        return shown == ("yes" if value in (True, "True") else "no")
    if isinstance(value, list):
        value = ", ".join(map(str, value))
    if value is None or value == "":
        return shown in (MISSING, "")
    text = str(value)
    if shown == text:
        return True
    if _ISO_TIME.fullmatch(text):
        return shown == text[:19].replace("T", " ")
    half = _half_last_digit(shown)
    try:
        number = float(text)
    except ValueError:
        return False
    return half is not None and abs(number - float(shown.replace(",", ""))) <= half


def _run(capsys: pytest.CaptureFixture[str], db: Path, argv: tuple[str, ...], fmt: str) -> str:
    status = main(["--db", str(db), *argv, "--format", fmt])
    out, err = capsys.readouterr()
    assert status == 0, (argv, fmt, out, err)
    return out


@pytest.mark.parametrize("name", list(LISTINGS))
def test_a_listings_csv_and_json_carry_the_rows_its_table_shows(
        name: str, store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Same number of rows, in the same order, and every value the table shows in the CSV and JSON row too;
    every column of the table (but one it alone computes) is in the CSV header and the JSON objects."""
    listing = LISTINGS[name]
    monkeypatch.setenv("COLUMNS", "2000")  # a table wide enough to drop no column
    if listing.setup is not None:
        listing.setup(monkeypatch, store)
    table = listing.table(_run(capsys, store, listing.argv, "table"))
    header, *lines = list(csv.reader(io.StringIO(_run(capsys, store, listing.argv, "csv"))))
    doc = listing.json_rows(json.loads(_run(capsys, store, listing.argv, "json")))
    assert len(table) >= 2, f"{name}: too few rows to compare"
    assert all(len(line) == len(header) for line in lines), f"{name}: a CSV row has more or fewer cells than its header"
    assert (len(lines), len(doc)) == (len(table), len(table)), f"{name}: table {len(table)}, CSV {len(lines)}, JSON {len(doc)}"
    columns = set(table[0]) - listing.table_only
    assert columns <= set(header) and all(columns <= set(row) for row in doc), (columns, header)
    for shown, line, obj in zip(table, lines, doc):
        by_name = dict(zip(header, line))
        for column in sorted(columns):
            assert shows(shown[column], by_name[column]), (name, column, shown[column], "CSV", by_name[column])
            assert shows(shown[column], obj[column]), (name, column, shown[column], "JSON", obj[column])


@pytest.fixture(autouse=True)
def _no_lab_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No listing reads the user's lab config: an empty one, but for `hosts`, which is given its own."""
    (tmp_path / "empty.toml").write_text("")
    monkeypatch.setenv("LABTUI_CONFIG", str(tmp_path / "empty.toml"))
    yield
