"""The option model: --db and --config mean the same before or after every subcommand; the last one wins."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import cli_run
import duckdb
import pytest

from labtui.commands.common import db_path
from labtui.commands.parser import GLOBAL_OPTIONS, build_parser, every_subparser

#: Every subcommand with the fewest arguments that parse (a new subcommand must be added here).
MINIMAL = {
    "run": ["boot-scaling"],
    "suites": [],
    "sessions": [],
    "sql": ["select 1"],
    "instances": [],
    "cleanup": ["--orphans"],
    "images": ["build"],
    "backends": [],
    "hosts": ["check"],
    "exec": ["--", "true"],
    "report": ["S"],
    "export": ["S", "--format", "csv"],
    "compare": ["A", "B"],
    "trend": ["S"],
    "import": ["f.csv", "--session", "s"],
    "info": [],
    "completion": ["bash"],
    "store": ["sync"],
}


def _subcommands() -> set[str]:
    parser = build_parser()
    top = next(a for a in parser._actions if a.dest == "command")
    return set(top.choices)


def test_the_table_names_every_subcommand() -> None:
    assert set(MINIMAL) == _subcommands()


def test_every_subparser_takes_every_global_option() -> None:
    for child in every_subparser(build_parser()):
        flags = {s for a in child._actions for s in a.option_strings}
        assert set(GLOBAL_OPTIONS) <= flags, child.prog


@pytest.mark.parametrize("command", sorted(MINIMAL))
@pytest.mark.parametrize("option", ["--db", "--config"])
def test_a_global_option_means_the_same_before_and_after(command: str, option: str) -> None:
    parse = build_parser().parse_args
    dest = option.lstrip("-")
    head, *rest = [command, *MINIMAL[command]]
    before = parse([option, "X", head, *rest])
    after = parse([head, option, "Y", *rest])
    both = parse([option, "X", head, option, "Y", *rest])
    neither = parse([head, *rest])
    assert getattr(before, dest) == "X"
    assert getattr(after, dest) == "Y"
    assert getattr(both, dest) == "Y"  # the last one given wins
    assert getattr(neither, dest) is None
    if option == "--db":
        assert db_path(before) == Path("X") and db_path(after) == Path("Y")


def _labtui(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return cli_run.labtui(*args, cwd=cwd, env=env)


@pytest.mark.parametrize("where", ["before", "after"])
def test_run_writes_the_db_it_was_given_and_nothing_else(tmp_path: Path, env: dict[str, str], where: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    db = tmp_path / "given.duckdb"
    quick = ["boot-scaling", "--profile", "quick", "--set", "scale.steps=1", "--set", "suite.repetitions=1"]
    argv = ["--db", str(db), "run", *quick] if where == "before" else ["run", *quick, "--db", str(db)]
    proc = _labtui(*argv, cwd=work, env=env)
    assert proc.returncode == 0, proc.stderr
    assert list(work.iterdir()) == []  # no ./sessions/lab.duckdb
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select status from sessions").fetchall() == [("completed",)]
    for argv in (["--db", str(db), "sessions"], ["sessions", "--db", str(db)]):
        listed = _labtui(*argv, cwd=work, env=env)
        assert listed.returncode == 0 and "boot-scaling" in listed.stdout, listed.stderr


def test_hosts_check_takes_config_after_the_action(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "lab.toml"
    config.write_text('[hosts.far]\naddress = "127.0.0.9"\nuser = "nobody"\nconnect_timeout_s = 1\n')
    for argv in (["hosts", "check", "--config", str(config)], ["--config", str(config), "hosts", "check"],
                 ["hosts", "--config", str(config), "check"]):
        proc = _labtui(*argv, cwd=tmp_path, env=env)
        assert "far" in proc.stdout + proc.stderr, (argv, proc.stdout, proc.stderr)
        assert "unrecognized arguments" not in proc.stderr


def test_config_given_to_main_does_not_outlive_the_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """main() run in-process (tests, scripts) leaves LABTUI_CONFIG as it found it, set or not."""
    from labtui.cli import main

    config = tmp_path / "lab.toml"
    config.write_text('[hosts.h]\naddress = "127.0.0.2"\n')
    monkeypatch.delenv("LABTUI_CONFIG", raising=False)
    assert main(["--config", str(config), "--db", str(tmp_path / "lab.duckdb"), "info"]) == 0
    assert "LABTUI_CONFIG" not in os.environ
    monkeypatch.setenv("LABTUI_CONFIG", "/somewhere/else.toml")
    assert main(["info", "--config", str(config), "--db", str(tmp_path / "lab.duckdb")]) == 0
    assert os.environ["LABTUI_CONFIG"] == "/somewhere/else.toml"


@pytest.mark.parametrize("command", sorted(MINIMAL))
@pytest.mark.parametrize("named", ["broken", "missing", "env"])
def test_a_named_config_that_cannot_be_read_stops_every_command(
        command: str, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """--config (before or after the subcommand) or $LABTUI_CONFIG naming a file that is not a lab config is one
    line naming the file, exit 2, before anything runs; sessions, sql and instances used to pass over it."""
    from labtui.cli import main

    config = tmp_path / "lab.toml"
    if named != "missing":
        config.write_text("x = [")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LABTUI_CONFIG", raising=False)
    argv = [command, *MINIMAL[command], "--db", str(tmp_path / "lab.duckdb")]
    if named == "env":
        monkeypatch.setenv("LABTUI_CONFIG", str(config))
    else:
        argv = ["--config", str(config), *argv] if command < "h" else [*argv, "--config", str(config)]
    if command == "completion":  # `eval "$(labtui completion bash)"` in a shell's rc file needs no lab config
        assert main(argv) == 0 and "labtui" in capsys.readouterr().out
        return
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err == f"labtui {command}: {config}: {'lab config not found' if named == 'missing' else 'Invalid value'}" \
        + (" (at end of document)\n" if named != "missing" else "\n")
    assert out == "" and not (tmp_path / "lab.duckdb").exists()
