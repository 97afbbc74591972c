"""Issue 42's two lists, each used with keystrokes only in a real terminal (tmux at 80x24): what a Harlequin user
expects of the SQL view, and what a k9s user expects of the Instances view."""

from __future__ import annotations

import asyncio
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_console import make_store
from test_tmux import TMUX, Terminal

from labtui.backends.base import InstanceSpec, Labels, open_backend
from labtui.core.liveness import session_lock
from labtui.hosts import get_host

pytestmark = pytest.mark.skipif(TMUX is None, reason="needs tmux (apt-get install tmux)")
SIZE = (80, 24)


class Console(Terminal):
    """A tmux server of its own whose clipboard takes OSC 52, as a terminal's does; the console's dirs in tmp."""

    def __init__(self, tmp: Path) -> None:
        super().__init__("labtui-test-" + secrets.token_hex(4))
        self.tmp = tmp
        self.env = {"LABTUI_RUNTIME_DIR": str(tmp / "runtime"), "LABTUI_STATE_DIR": str(tmp / "state"),
                    "LABTUI_CONFIG_DIR": str(tmp / "config"), "TERM": "xterm-256color"}

    def open(self, db: Path) -> None:
        self.start([sys.executable, "-m", "labtui", "--db", str(db)], self.env, SIZE)
        self.tmux("set-option", "-s", "set-clipboard", "on")
        self.wait(lambda s: "no run yet" in s, "the console to draw", 30)

    def clipboard(self) -> str:
        """What the console last copied (tmux's newest buffer; empty before any)."""
        try:
            return self.tmux("show-buffer")
        except subprocess.CalledProcessError:
            return ""


@pytest.fixture
def console(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Console]:
    term = Console(tmp_path)
    for key, value in term.env.items():
        monkeypatch.setenv(key, value)
    try:
        yield term
    finally:
        term.kill()


def words(screen: str) -> str:
    """The screen's words with single spaces (a status line's text, wherever it wraps)."""
    return " ".join(screen.split())


def test_a_harlequin_users_list_in_tmux_at_80x24(console: Console) -> None:
    term, tmp = console, console.tmp
    db = tmp / "lab.duckdb"
    make_store(db, results=10)
    other = tmp / "other.sql"
    other.write_text("select 'from a file' as src\n")
    term.open(db)

    term.keys("4")  # the SQL view; its example query is selected, so typing replaces it
    term.wait(lambda s: "run SQL" in s.splitlines()[-1], "the SQL editor")
    term.keys("select 1 as a, 2 as b, 3 as c, 4 as d, 5 as e, 6 as f, 7 as g, 8 as h", literal=True)
    term.keys("C-r")
    term.wait(lambda s: "1 row" in s, "the 8-column result")

    # the result over the whole screen shows at least 6 of its 8 columns at 80 columns
    term.keys("Escape", "F4")
    screen = term.wait(lambda s: re.search(r"\ba\s.*\bb\s.*\bc\s.*\bd\s.*\be\s.*\bf\b", s) is not None,
                       "six columns of the full-screen result")
    assert "select 1 as a" not in screen  # the editor is not shown
    term.keys("c")  # copy the cell under the cursor (OSC 52: the terminal's clipboard, here tmux's buffer)
    term.wait(lambda s: term.clipboard() == "1", "the copied cell", 10)
    term.keys("C")  # and the row, its cells tab-separated
    term.wait(lambda s: term.clipboard() == "\t".join("12345678"), "the copied row", 10)
    term.keys("F4")
    # the editor over the whole screen: no result grid, no sessions list
    term.keys("4", "F4")
    term.wait(lambda s: "select 1 as a" in s and "sessions (enter opens)" not in s and "1 row" not in s,
                       "the full-screen editor")
    term.keys("F4")
    term.wait(lambda s: "sessions (enter opens)" in s, "the view back from full screen")

    # a second query tab keeps its own result; the first one's is still there
    term.keys("C-n")
    term.keys("select 42 as answer", literal=True)
    term.keys("C-r")
    term.wait(lambda s: "answer" in s and re.search(r"\b42\b", s) is not None and "1 row" in s, "the second tab's result")
    term.keys("C-k")
    term.wait(lambda s: re.search(r"\ba\s.*\bb\s.*\bc\b", s) is not None and "answer" not in s, "the first tab again")
    term.keys("C-k")

    # format, save, open, find
    term.keys("F5")
    term.wait(lambda s: "SELECT" in s and "42 AS answer" in s, "the formatted query")
    term.keys("C-s")
    term.keys(str(tmp / "answer.sql"), literal=True)
    term.keys("Enter")
    term.wait(lambda s: "saved to" in s, "the save")
    assert (tmp / "answer.sql").read_text() == "SELECT\n  42 AS answer\n"
    term.keys("C-o")
    term.keys(str(other), literal=True)
    term.keys("Enter")
    term.wait(lambda s: "other.sql" in s and "from a file" in s, "the opened file in a tab of its own")
    term.keys("C-f")
    term.keys("file", literal=True)
    term.wait(lambda s: "1 match for 'file'" in s, "the find")
    term.keys("Escape")

    # the history browser lists the queries run
    term.keys("F8")
    screen = term.wait(lambda s: "select 42 as answer" in s, "the history")
    assert "select 1 as a, 2 as b" in screen
    term.keys("Escape")

    # the row limit, set in the app (from the result grid: in the editor `:` is typed)
    term.keys("Escape", ":")
    term.keys("rows 3", literal=True)
    term.keys("Enter")
    term.wait(lambda s: "at most 3 rows" in s, "the row cap's notice")
    term.keys("4", "C-n")
    term.keys("select * from range(10)", literal=True)
    term.keys("C-r")
    screen = term.wait(lambda s: "3 of more than 3 rows" in s and re.search(r"│\s+2\s+│$", s, re.M) is not None,
                       "a result cut at 3 rows")
    assert not re.search(r"│\s+3\s+│$", screen, re.M)  # rows 0 to 2 only

    # the schema tree, hidden at 80 columns, on F2
    term.keys("F2")
    term.wait(lambda s: "schema" in s and "▶ events" in s and "▶ instances" in s, "the schema tree")


def test_a_k9s_users_list_in_tmux_at_80x24(console: Console) -> None:
    term, tmp = console, console.tmp
    db = tmp / "lab.duckdb"
    # other tests' instances may be listed too: this one's carry its token, typed into the filter before the
    # view is loaded (a digit in it would switch tabs if the keys after `/` did not wait for its filter)
    token = "1" + secrets.token_hex(3)[1:]
    session = make_store(db, session=f"20260101-000000-{token}", results=10)
    ticker, idle = f"ticker{token}", f"idle{token}"
    backend = open_backend("process", get_host("local"))
    specs = [InstanceSpec(Labels(session, "background", ticker), tool="/bin/sh",
                          args=("-c", "i=0; while true; do i=$((i+1)); echo tick-$i; sleep 0.3; done")),
             InstanceSpec(Labels(session, "background", idle), program="sleeper")]
    instances = []
    with session_lock(session):  # a live session: its instances are not orphans
        try:
            instances += [asyncio.run(backend.create(spec)) for spec in specs]
            term.open(db)

            term.keys("2")  # the Instances view: name, state, age and flag fit at 80 columns
            term.keys("/")
            term.keys(token, literal=True)
            term.keys("Enter")
            screen = term.wait(lambda s: ticker in s and idle in s, "this test's instances listed")
            row = next(line for line in screen.splitlines() if ticker in line)
            assert re.search(rf"{ticker}\s+running\s+\d+s\s", row), row

            term.keys("/")  # the status line counts what the filter shows
            term.keys(*["BSpace"] * len(token))
            term.keys(ticker, literal=True)
            term.keys("Enter")
            screen = term.wait(lambda s: re.search(r"\b1 of \d+ instance\(s\) shown", words(s)) is not None,
                               "the filtered count")
            assert idle not in screen

            term.keys("C")  # one key sorts by a column (cpu); again, the other way
            term.wait(lambda s: "sorted by cpu" in s and "(reversed)" not in s, "the sort by cpu")
            term.keys("C")
            term.wait(lambda s: "sorted by cpu (reversed)" in s, "the sort by cpu reversed")

            term.keys("l")  # follow the log live: new lines come without a key
            first = term.wait(lambda s: re.search(r"tick-(\d+)", s) is not None, "the ticker's log")
            seen = max(int(n) for n in re.findall(r"tick-(\d+)", first))
            term.wait(lambda s: max((int(n) for n in re.findall(r"tick-(\d+)", s)), default=0) > seen + 2,
                      "newer lines in the followed log", 15)
            term.keys("Escape")

            term.keys("3")  # from a session to its instances in one key
            term.wait(lambda s: session in s, "the Sessions view")
            term.keys("/")
            term.keys(token, literal=True)
            term.keys("Enter", "i")
            screen = term.wait(lambda s: ticker in s and idle in s and session in s.splitlines()[4],
                               "the Instances view filtered to the session")
            assert re.search(r"\b2 of \d+ instance\(s\) shown", words(screen)), screen
        finally:
            for instance in instances:
                asyncio.run(backend.destroy(instance, force=True))
