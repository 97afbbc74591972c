"""The registries a reader greps: experiment kinds, backends (entry points) and the CLI's command handlers."""

from __future__ import annotations

import dataclasses
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from labtui.backends.base import Backend, BackendUnavailable, list_backends, load_backend_class
from labtui.commands import Handler
from labtui.commands.parser import build_parser
from labtui.engine.kinds import experiment_kind, plan_for
from labtui.suites import SuiteError, all_kinds, load_suite
from labtui.suites.kinds import unsupported_kind

REPO = Path(__file__).resolve().parents[2]
BUILTIN_BACKENDS = {"process", "docker", "unikraft", "xen", "zones"}


def test_every_kind_module_names_engine_functions_that_exist_and_a_built_in_suite_that_runs_it() -> None:
    """Each kind of the registry resolves to its engine's run, plan and check; its report and CLI references, where
    it names them, resolve too; and a built-in suite of each kind plans as many steps as the kind counts."""
    from labtui.suites import list_suites
    from labtui.suites.kinds import resolve, steps_per_repetition

    kinds = all_kinds()
    assert list(kinds)[0] == "scaling" and {"isolation", "concurrent", "creation", "fairshare"} <= set(kinds)
    for name, kind in kinds.items():
        engine = experiment_kind(name)
        assert callable(engine.run) and callable(engine.plan) and callable(engine.check), name
        assert all(callable(resolve(ref)) for ref in (kind.charts, kind.summary) if ref), name
        suite = load_suite(next(s.name for s in list_suites() if s.kind == name), (), "quick")
        assert len(plan_for(suite).steps) == steps_per_repetition(suite), name


def test_an_unknown_kind_is_refused_in_one_wording_by_the_loader_and_the_engine(tmp_path: Path) -> None:
    suite = load_suite("boot-scaling")
    path = tmp_path / "migration.toml"
    path.write_text(Path(suite.source).read_text().replace(f'kind = "{suite.kind}"', 'kind = "migration"'))
    with pytest.raises(SuiteError) as loaded:
        load_suite(str(path))
    with pytest.raises(ValueError) as planned:
        plan_for(dataclasses.replace(suite, kind="migration"))
    wording = unsupported_kind("migration")
    assert wording is not None and wording in loaded.value.message and str(planned.value) == wording


def test_every_builtin_backend_is_an_entry_point_that_loads_its_own_class() -> None:
    builtin = {b.name: b for b in list_backends() if b.source == "builtin"}
    assert set(builtin) == BUILTIN_BACKENDS
    for name, info in builtin.items():
        assert info.entry_point.value.startswith(f"plugins.{name}:")
        cls = load_backend_class(name)
        assert issubclass(cls, Backend) and cls.name == name


# A distribution of our own on the path: it registers a backend of its own and one named like a built-in.
THIRD_PARTY = textwrap.dedent(
    """
    import json, sys
    where, mine = sys.argv[1:]
    sys.path.insert(0, mine) if where == "first" else sys.path.append(mine)
    from labtui.backends.base import list_backends, load_backend_class
    print(json.dumps([[b.name, b.source] for b in list_backends()]))
    print(load_backend_class("process").__module__, load_backend_class("mine").__module__)
    """
)


@pytest.mark.parametrize("where", ["first", "last"])  # on sys.path: before or after labtui's own distribution
def test_a_third_party_backend_is_listed_after_the_builtins_and_never_replaces_one(tmp_path: Path, where: str) -> None:
    (tmp_path / "labtui_mine").mkdir()
    (tmp_path / "labtui_mine" / "__init__.py").write_text(
        "from labtui.backends.kit import Backend\n\nclass MineBackend(Backend):\n    name = 'mine'\n")
    info = tmp_path / "labtui_mine-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: labtui-mine\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[labtui.backends]\nmine = labtui_mine:MineBackend\nprocess = labtui_mine:MineBackend\n")
    done = subprocess.run([sys.executable, "-c", THIRD_PARTY, where, str(tmp_path)], cwd=REPO, capture_output=True,
                          text=True, timeout=60, check=True)
    listed, loaded = done.stdout.splitlines()
    sources = dict(json.loads(listed))
    assert list(sources) == [*sorted(BUILTIN_BACKENDS), "mine"], done.stdout
    assert sources["mine"] == "labtui-mine" and sources["process"] == "builtin"
    assert loaded == "plugins.process labtui_mine", done.stdout


def test_an_unknown_backend_names_the_ones_there_are() -> None:
    with pytest.raises(BackendUnavailable, match=r"unknown backend 'nosuch'; available: docker, process, "):
        load_backend_class("nosuch")


def _top_level_commands() -> dict[str, object]:
    top = next(a for a in build_parser()._actions if a.dest == "command")
    return {name: parser.get_default("func") for name, parser in top.choices.items()}


def test_every_command_names_its_own_handler_and_it_resolves() -> None:
    handlers = _top_level_commands()
    assert all(callable(func) for func in handlers.values()), handlers
    named = {name: func for name, func in handlers.items() if isinstance(func, Handler)}
    assert set(handlers) - set(named) == {"completion"}  # printed by the CLI itself, from the parser
    assert len({(h.module, h.function) for h in named.values()}) == len(named), "two commands share a handler"
    for name, handler in named.items():
        assert callable(getattr(importlib.import_module(handler.module), handler.function)), name


def test_a_nested_action_runs_its_commands_handler() -> None:
    args = build_parser().parse_args(["sessions", "rm", "abc", "--yes"])
    assert args.func == Handler("labtui.commands.query", "cmd_sessions") and args.sessions_command == "rm"


def test_building_the_parser_imports_no_command_module() -> None:
    code = "import sys; from labtui.commands.parser import build_parser; build_parser(); " \
           "print(sorted(m for m in sys.modules if m.startswith('labtui.commands.')))"
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "['labtui.commands.parser']", done.stdout + done.stderr


def test_every_tool_parser_is_named_once_and_its_function_reads_output() -> None:
    """The parsers' one registry: each name resolves to a function, a suite's worker.output takes exactly the worker
    parsers, and `labtui import --format` exactly the importable ones (with csv)."""
    from labtui.parsers.registry import IMPORT_FORMATS, PARSERS, WORKER_OUTPUTS
    from labtui.suites.keys import SCHEMA

    for name, parser in PARSERS.items():
        module, _, function = parser.ref.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), name
    output = SCHEMA["worker"]["output"]
    assert [o for o in PARSERS if output.accepts(o)] == list(WORKER_OUTPUTS) == ["probe", "lmbench", "unixbench",
                                                                                "sysbench", "stress-ng"]
    assert IMPORT_FORMATS[0] == "csv" and "probe" not in IMPORT_FORMATS and "wrk" in IMPORT_FORMATS
    import_help = next(a.help for a in build_parser()._subparsers._group_actions[0].choices["import"]._actions
                       if a.dest == "format")
    assert all(f in str(import_help) for f in IMPORT_FORMATS)
