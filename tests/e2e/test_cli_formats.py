"""Every listing command's --format json and csv, read back; tables at 80 columns keep whole ids; sql -; quiet backends.

The store is filled by real commands: a quick boot-scaling run and two imported sessions with long ids;
two sleepers of the process backend carry a long session id too.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cli_run
import pytest

from labtui.backends.base import InstanceSpec, Labels, open_backend
from labtui.commands.instances import RECORD_KEYS
from labtui.hosts import get_host

DATA = Path(__file__).parents[1] / "data"
#: Session ids longer than any column an 80-column table would give them.
NATIVE = "brandz-native-measured-on-the-lab-machine-in-november"
LXZONE = "brandz-lxzone-measured-on-the-lab-machine-in-november"
#: Unique per test process: the process backend lists instances machine-wide, and a CI run once listed another
#: process's two sleepers of the same fixed id beside this module's own.
SLEEPERS = f"sleepers-with-a-session-id-too-long-for-eighty-columns-{secrets.token_hex(3)}"


@dataclass
class Lab:
    db: Path
    env: dict[str, str]
    run_id: str

    def labtui(self, *args: str, stdin: str | None = None, env: dict[str, str] | None = None,
               check: bool = True) -> subprocess.CompletedProcess:
        return cli_run.labtui(*args, "--db", str(self.db), input=stdin, env=env or self.env, check=check)


@pytest.fixture(scope="module")
def filled_store(tmp_path_factory: pytest.TempPathFactory, runtime_dir: Path) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("formats")
    config = tmp / "labtui.toml"
    config.write_text('[hosts.h1]\naddress = "127.0.0.1"\nport = 2222\nuser = "lab"\ntags = ["t1", "t2"]\n'
                      '[hosts.dead]\naddress = "127.0.0.1"\nport = 1\n')  # nothing listens on port 1
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["LABTUI_CONFIG"] = str(config)
    filled_store = Lab(tmp / "lab.duckdb", env, "")
    filled_store.labtui("run", "boot-scaling", "--profile", "quick")
    filled_store.run_id = json.loads(filled_store.labtui("sessions", "--format", "json").stdout)[0]["session_id"]
    filled_store.labtui("import", str(DATA / "compare_brandz_native.csv"), "--session", NATIVE)
    filled_store.labtui("import", str(DATA / "compare_brandz_lxzone.csv"), "--session", LXZONE)
    backend = open_backend("process", get_host("local"))
    specs = [InstanceSpec(Labels(SLEEPERS, "background", f"b{i}"), program="sleeper") for i in range(2)]
    sleepers = asyncio.run(backend.create_many(specs))
    try:
        yield filled_store
    finally:
        asyncio.run(backend.destroy_many(sleepers, force=True))


#: command -> (arguments, the keys of every JSON object / the CSV header, a check of the JSON rows)
LISTINGS: dict[str, tuple[tuple[str, ...], tuple[str, ...], Callable[[Lab, list[dict[str, Any]]], bool]]] = {
    "sessions": (("sessions",),
                 ("session_id", "suite", "backend", "host", "status", "started_at", "ended_at", "steps", "results",
                  "tags", "note", "in_store"),
                 lambda filled_store, rows: {r["session_id"] for r in rows} == {filled_store.run_id, NATIVE, LXZONE}
                 and all(r["in_store"] in (True, "true") for r in rows)),
    "suites": (("suites",), ("name", "kind", "reproduces", "description"),
               lambda filled_store, rows: "boot-scaling" in {r["name"] for r in rows}),
    "backends": (("backends",), ("backend", "usable", "version", "reason", "source"),
                 lambda filled_store, rows: {r["backend"]: r["usable"] for r in rows}["process"] is True),
    "instances": (("instances", "--backend", "process", "--session", SLEEPERS), RECORD_KEYS,
                  lambda filled_store, rows: sorted(r["instance"] for r in rows) == ["b0", "b1"]),
    "hosts": (("hosts",), ("host", "address", "user", "tags", "jump", "known_hosts"),
              lambda filled_store, rows: [(r["host"], r["address"], r["tags"]) for r in rows]
              == [("local", None, []), ("h1", "127.0.0.1:2222", ["t1", "t2"]), ("dead", "127.0.0.1:1", [])]),
    "sql": (("sql", "select session_id, suite from sessions order by session_id"), ("session_id", "suite"),
            lambda filled_store, rows: [r["session_id"] for r in rows] == sorted([filled_store.run_id, NATIVE, LXZONE])),
    "info": (("info",), ("key", "value"), lambda filled_store, rows: {r["key"]: r["value"] for r in rows}["sessions"] == 3),
}


@pytest.mark.parametrize("command", LISTINGS)
def test_listing_json_is_a_list_of_objects_with_stable_keys(filled_store: Lab, command: str) -> None:
    args, keys, check = LISTINGS[command]
    doc = json.loads(filled_store.labtui(*args, "--format", "json").stdout)
    rows = [{"key": k, "value": v} for k, v in doc.items()] if command == "info" else doc
    assert isinstance(rows, list) and rows
    assert all(tuple(r) == keys for r in rows), rows[0]
    assert check(filled_store, rows), rows


@pytest.mark.parametrize("command", LISTINGS)
def test_listing_csv_has_a_header_and_the_json_rows(filled_store: Lab, command: str) -> None:
    args, keys, _ = LISTINGS[command]
    table = list(csv.reader(io.StringIO(filled_store.labtui(*args, "--format", "csv").stdout)))
    doc = json.loads(filled_store.labtui(*args, "--format", "json").stdout)
    assert tuple(table[0]) == keys
    assert len(table) - 1 == len(doc)  # rows, or an info object's keys
    first = table[1]
    assert first[0] == (next(iter(doc)) if command == "info" else str(doc[0][keys[0]]))


def test_info_json_is_one_object_with_the_same_keys_without_a_store(filled_store: Lab, tmp_path: Path) -> None:
    with_store = json.loads(filled_store.labtui("info", "--format", "json").stdout)
    proc = cli_run.labtui("info", "--format", "json", "--db", str(tmp_path / "no.duckdb"), env=filled_store.env,
                          timeout=60, check=True)
    without = json.loads(proc.stdout)
    assert list(without) == list(with_store)
    assert (with_store["store"], with_store["sessions"], with_store["store_exists"]) == (str(filled_store.db), 3, True)
    assert (without["sessions"], without["store_exists"]) == (None, False)


def test_compare_json_and_csv_parse(filled_store: Lab) -> None:
    doc = json.loads(filled_store.labtui("compare", NATIVE, LXZONE, "--format", "json").stdout)
    rows = list(csv.DictReader(io.StringIO(filled_store.labtui("compare", NATIVE, LXZONE, "--format", "csv").stdout)))
    assert (doc["a"]["session_id"], doc["b"]["session_id"]) == (NATIVE, LXZONE)
    assert len(rows) == len(doc["rows"]) > 10
    assert [r["metric"] for r in rows] == [r["metric"] for r in doc["rows"]]


def test_sessions_table_in_80_columns_shows_every_id_whole(filled_store: Lab) -> None:
    proc = filled_store.labtui("sessions")  # stdout is a pipe and COLUMNS is unset: rich's 80 columns
    for sid in (filled_store.run_id, NATIVE, LXZONE):
        assert any(sid in line for line in proc.stdout.splitlines()), (sid, proc.stdout)
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80, proc.stdout
    assert "not shown in 80 columns:" in proc.stderr and "results" in proc.stderr  # the last column went first


def test_instances_table_in_80_columns_shows_whole_names_and_sessions(filled_store: Lab) -> None:
    proc = filled_store.labtui("instances", "--backend", "process", "--session", SLEEPERS)
    records = json.loads(filled_store.labtui("instances", "--backend", "process", "--session", SLEEPERS,
                                    "--format", "json").stdout)
    assert len(records) == 2
    for r in records:
        assert any(r["name"] in line and SLEEPERS in line for line in proc.stdout.splitlines()), proc.stdout


def test_a_wide_terminal_shows_every_column(filled_store: Lab) -> None:
    proc = filled_store.labtui("sessions", env={**filled_store.env, "COLUMNS": "250"})
    header = next(line for line in proc.stdout.splitlines() if "session_id" in line)
    # every column, but in_store: the table marks a session read from its journal with a * on its status
    assert all(k in header for k in LISTINGS["sessions"][1] if k != "in_store") and "in_store" not in header
    assert "not shown" not in proc.stderr


def test_sql_reads_the_query_from_stdin(filled_store: Lab) -> None:
    proc = filled_store.labtui("sql", "-", "--format", "json", stdin="select suite, count(*) n\nfrom sessions group by suite\n"
                                                              "order by suite")
    assert json.loads(proc.stdout) == [{"suite": "boot-scaling", "n": 1}, {"suite": "import", "n": 2}]
    empty = filled_store.labtui("sql", "-", stdin="", check=False)
    assert empty.returncode == 2 and empty.stderr.strip().splitlines() == [
        "labtui sql: no query on standard input (labtui sql - reads it from there)"]


def test_backends_not_usable_here_are_reported_only_when_asked_for(filled_store: Lab) -> None:
    backends = json.loads(filled_store.labtui("backends", "--format", "json").stdout)
    unusable = [b["backend"] for b in backends if not b["usable"]]
    if not unusable:
        pytest.skip("every backend is usable on this machine")
    listing = filled_store.labtui("instances", env={**filled_store.env, "COLUMNS": "250"})
    assert not any(name in listing.stderr for name in unusable), listing.stderr
    assert re.fullmatch(r"\d+ instance\(s\)", listing.stderr.strip()), listing.stderr  # that line only
    asked = filled_store.labtui("instances", "--backend", unusable[0])
    assert unusable[0] in asked.stderr
    cleanup = filled_store.labtui("cleanup", "--session", SLEEPERS, "--dry-run", "--host", "local")
    assert not any(name in cleanup.stdout + cleanup.stderr for name in unusable), cleanup.stdout + cleanup.stderr


def test_completion_scripts(filled_store: Lab) -> None:
    bash = filled_store.labtui("completion", "bash").stdout
    script = (f"{bash}\nCOMP_WORDS=(labtui sessions --format '') COMP_CWORD=3\n"
              "_shtab_labtui labtui '' --format; echo \"${COMPREPLY[@]}\"\n"
              "COMP_WORDS=(labtui sess) COMP_CWORD=1\n_shtab_labtui labtui sess labtui; echo \"${COMPREPLY[@]}\"\n")
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.splitlines() == ["table json csv", "sessions"]
    zsh = filled_store.labtui("completion", "zsh").stdout
    assert zsh.startswith("#compdef labtui") and "sessions" in zsh
    if shutil.which("zsh"):  # the script parses (tried by hand in zsh too: labtui sess<Tab> --format <Tab>)
        subprocess.run(["zsh", "-n"], input=zsh, text=True, capture_output=True, timeout=60, check=True)


def test_export_writes_what_its_format_says_or_refuses_a_file_name_in_one_line(filled_store: Lab, tmp_path: Path) -> None:
    refused = filled_store.labtui("export", NATIVE, "--format", "csv", "--out", str(tmp_path / "res.json"), check=False)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "res.json reads as a .json file" in refused.stderr and not (tmp_path / "res.json").exists()
    report = filled_store.labtui("report", NATIVE, "--out", str(tmp_path / "page.html"), check=False)
    assert report.returncode == 2 and not (tmp_path / "page.html").exists()
    written = filled_store.labtui("export", NATIVE, "--format", "csv", "--out", str(tmp_path / "out")).stdout.split()
    results = next(Path(f) for f in written if f.endswith("results.csv"))
    assert all(f.endswith(".csv") for f in written)
    assert len(list(csv.DictReader(results.open()))) == len(json.loads(filled_store.labtui(
        "sql", f"select * from results where session_id = '{NATIVE}'", "--format", "json").stdout))


def test_a_host_without_a_usable_backend_says_why_in_one_line(filled_store: Lab) -> None:
    proc = filled_store.labtui("instances", "--host", "dead", "--format", "json")
    assert json.loads(proc.stdout) == []
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith("no backend is usable on host dead: ") and "cannot connect to 127.0.0.1:1" in line, line
