"""Reading suite files: TOML in, a checked ``Suite`` out, or a ``SuiteError`` that says where.

A suite is a file path or the name of a built-in suite (``suites/<name>.toml``).
``--set key.path=value`` overrides are applied to the parsed TOML before it is
checked, so they are held to exactly the same rules as the file.  A suite file
may name profiles, ``[profiles.NAME]`` tables of dotted suite keys
(``"scale.steps" = 3``); the one chosen is applied the same way, before the
``--set`` overrides.  The schema is in ``keys.py``, key lines and errors in
``source.py``, overrides and profiles in ``overrides.py``.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labtui.core.paths import bundled_dir
from labtui.core.words import name_list
from labtui.suites.keys import REQUIRED, REQUIRED_TABLES, SCHEMA, Key
from labtui.suites.kind import Kind, KindCheck
from labtui.suites.kinds import all_kinds, table_owners, unsupported_kind
from labtui.suites.model import (
    LOAD_TOOLS,
    SUITE_NAME_PATTERN,
    BackendSettings,
    Load,
    Measure,
    Program,
    Sampling,
    Scale,
    Suite,
    SuiteInfo,
    Worker,
)
from labtui.suites.overrides import PROFILES, apply_overrides, chosen_profile, parse_override, profiles_of
from labtui.suites.probes import check_probe
from labtui.suites.source import OVERRIDE, KeyPath, Source, SuiteError, key_lines, show, unknown

#: SuiteError and OVERRIDE are named here too, for callers that import the loader alone.
__all__ = ["OVERRIDE", "SuiteError", "list_suites", "load_suite", "suite_profiles"]


def _check_tables(raw: dict[str, Any], src: Source) -> None:
    for name, value in raw.items():
        if name not in SCHEMA:
            raise src.error((name,), unknown("table", name, list(SCHEMA)))
        if not isinstance(value, dict):
            raise src.error((name,), f"expected a table, got {show(value)}")


def _table(raw: dict[str, Any], name: str, src: Source) -> dict[str, Any]:
    """The checked values of one table, with defaults filled in."""
    if name in REQUIRED_TABLES and name not in raw:
        raise src.error((name,), "missing required table")
    schema = SCHEMA[name]
    given = raw.get(name, {})
    for key in given:
        if key not in schema:
            raise src.error((name, key), unknown("key", key, list(schema)))
    return {key: _value(given, (name, key), spec, src) for key, spec in schema.items()}


def _value(given: dict[str, Any], path: KeyPath, spec: Key, src: Source) -> Any:
    key = path[-1]
    if key not in given:
        if spec.default is REQUIRED:
            raise src.error(path, "missing required key")
        return spec.default
    if not spec.accepts(given[key]):
        raise src.error(path, f"expected {spec.expect}, got {show(given[key])}")
    return spec.convert(given[key])


def _check_kind(kind: str, src: Source) -> None:
    if problem := unsupported_kind(kind):
        raise src.error(("suite", "kind"), problem)


def _program(raw: dict[str, Any], name: str, cls: type[Program], src: Source) -> Any:
    """The [worker] or [background] table as ``cls``, or None when the table is absent."""
    if name not in raw:
        return None
    values = _table(raw, name, src)
    if sum(values[key] is not None for key in ("program", "image", "tool")) != 1:
        raise src.error((name,), "give exactly one of program (a probe name), image, or tool (a real tool's path "
                                 "on the host)")
    check_probe(values["program"], (name, "program"), src)
    program = cls(**values)
    if isinstance(program, Worker):
        _check_output(program, src)
    return program


def _check_output(worker: Worker, src: Source) -> None:
    """A real tool's parser reads a real tool's output: the worker must be a tool or an image, measured by output."""
    if worker.output == "probe":
        return
    if worker.measure != "output":
        raise src.error(("worker", "output"), f'output = "{worker.output}" reads what the worker prints: '
                                              'it needs measure = "output"')
    if worker.program is not None:
        raise src.error(("worker", "output"), f"program {worker.program!r} is a labtui probe, which prints probe "
                                              f'lines: output = "{worker.output}" reads a real tool, named by tool '
                                              "(on the host) or image")


def _check_kind_tables(raw: dict[str, Any], kind: Kind, src: Source) -> None:
    """A suite has the tables its kind needs, and none that only other kinds read."""
    for table, owners in table_owners().items():
        if table in raw and kind.name not in owners:
            also = "".join(f" (or a {other} suite)" for other in owners[1:])
            raise src.error((table,), f"only a {owners[0]} suite uses [{table}]{also}; this suite's kind is {kind.name}")
    for table in kind.needs:
        if table not in raw:
            raise src.error((table,), f"a {kind.name} suite needs a [{table}] table")


def _build(raw: dict[str, Any], src: Source, source: str, overrides: tuple[str, ...]) -> Suite:
    _check_tables(raw, src)
    head = _table(raw, "suite", src)
    _check_kind(head["kind"], src)
    kind = all_kinds()[head["kind"]]
    _check_kind_tables(raw, kind, src)
    scale = Scale(**_table(raw, "scale", src)) if "scale" in raw else None
    worker = _program(raw, "worker", Worker, src)
    if worker is not None:
        _check_adaptive(worker, src)
    measure = Measure(**_table(raw, "measure", src))
    if worker is None and not measure.memory and not kind.measures_itself:
        raise src.error((), "the suite measures nothing: add a [worker] table or set measure.memory = true")
    load = _load(raw, kind, worker, src)
    settings = tuple((table, cls(**_table(raw, table, src))) for table, (cls, _) in kind.tables.items())
    kind.check(KindCheck(raw, head, scale, worker, dict(settings), src))
    return Suite(
        **head,
        scale=scale,
        worker=worker,
        background=_program(raw, "background", Program, src),
        measure=measure,
        sampling=Sampling(**_table(raw, "sampling", src)),
        source=source,
        overrides=overrides,
        attacker=_program(raw, "attacker", Program, src),
        settings=settings,
        load=load,
        backend_settings=BackendSettings(**_table(raw, "backend", src)),
    )


def _check_adaptive(worker: Worker, src: Source) -> None:
    """Adaptive runs need both a CV target and a ceiling of at least runs."""
    if (worker.max_runs is None) != (worker.target_cv is None):
        given, missing = ("max_runs", "target_cv") if worker.max_runs is not None else ("target_cv", "max_runs")
        raise src.error(("worker", given), f"adaptive runs need {missing} as well as {given}")
    if worker.max_runs is not None and worker.max_runs < worker.runs:
        raise src.error(("worker", "max_runs"), f"must be at least runs ({worker.runs}), not {worker.max_runs}")


def _load(raw: dict[str, Any], kind: Kind, worker: Worker | None, src: Source) -> Load | None:
    """The [load] table, which a worker with ``measure = "load"`` needs and only it may have."""
    wants = worker is not None and worker.measure == "load"
    if not wants:
        if "load" in raw:
            raise src.error(("load",), 'only a worker with measure = "load" uses [load]')
        return None
    if not kind.serves_load:
        serving = " and ".join(k.name for k in all_kinds().values() if k.serves_load)
        raise src.error(("worker", "measure"), f'measure = "load" runs in {serving} suites; '
                        f"this suite's kind is {kind.name}")
    if "load" not in raw or "tool" not in raw["load"]:
        raise src.error(("load", "tool"), 'a worker with measure = "load" needs [load] tool = ' + " or ".join(
            f'"{t}"' for t in LOAD_TOOLS))
    load = Load(**_table(raw, "load", src))
    if load.tool == "wrk" and load.threads > load.connections:
        raise src.error(("load", "threads"), f"wrk needs connections >= threads; got {load.connections} < {load.threads}")
    return load


def _builtin_names() -> list[str]:
    return sorted(path.stem for path in bundled_dir("suites").glob("*.toml"))


def _resolve(name_or_path: str) -> Path:
    """A suite file path, or the built-in suite of that name."""
    path = Path(name_or_path).expanduser()
    if path.is_file() or name_or_path.endswith(".toml"):
        return path
    builtin = bundled_dir("suites") / f"{name_or_path}.toml"
    if re.fullmatch(SUITE_NAME_PATTERN, name_or_path) and builtin.is_file():
        return builtin
    names = _builtin_names()
    if close := difflib.get_close_matches(name_or_path, names, n=1):
        message = f"no such suite; did you mean '{close[0]}'?"
    else:
        message = f"expected a suite file or one of {name_list(names, '`labtui suites`') or 'none'}"
    raise SuiteError(name_or_path, None, None, message)


def _display(path: Path) -> str:
    """The path as errors show it: relative to the working directory when under it."""
    try:
        return str(path.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _read(path: Path, display: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SuiteError(display, None, None, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SuiteError(display, None, None, f"cannot read: {exc}") from None


_TOML_WHERE = re.compile(r"\s*\(at (?:line (\d+), column (\d+)|end of document)\)$")


def _parse(text: str, display: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message, line = str(exc), None
        if where := _TOML_WHERE.search(message):
            message = message[: where.start()]
            if where[1]:
                line = int(where[1])
                message += f" (column {where[2]})"
            else:
                line = len(text.splitlines()) or None
                message += " (at end of file)"
        raise SuiteError(display, line, None, f"invalid TOML: {message}") from None
    except RecursionError:
        raise SuiteError(display, None, None, "invalid TOML: arrays or tables nested too deeply") from None


def load_suite(name_or_path: str, overrides: Sequence[str] = (), profile: str | None = None) -> Suite:
    """Read a suite (a file path or a built-in name), apply a profile, then ``--set`` overrides; check it."""
    parsed = [parse_override(text) for text in overrides]
    path = _resolve(name_or_path)
    display = _display(path)
    text = _read(path, display)
    raw = _parse(text, display)
    lines = key_lines(text)
    file_src = Source(display, lines)
    chosen = chosen_profile(profiles_of(raw, file_src), profile, file_src)
    apply_overrides(raw, chosen)
    apply_overrides(raw, parsed)
    # A bad value that came from the profile is blamed on the profile's line (a table it added, too).
    moved = {path: lines[o.origin] for o in chosen if o.origin in lines for path in (o.path, o.path[:1])
             if path == o.path or path not in lines}
    src = Source(display, {**lines, **moved}, frozenset(o.path for o in parsed))
    suite = _build(raw, src, str(path.absolute()), tuple(o.text for o in parsed))
    return dataclasses.replace(suite, profile=profile)


def suite_profiles(name_or_path: str) -> list[str]:
    """The names of a suite's ``[profiles.NAME]`` tables, in file order (SuiteError when unreadable)."""
    path = _resolve(name_or_path)
    display = _display(path)
    profiles = _parse(_read(path, display), display).get(PROFILES, {})
    return list(profiles) if isinstance(profiles, dict) else []


def list_suites() -> list[SuiteInfo]:
    """The built-in suites by name; one that fails to load is listed with an "invalid: ..." description."""
    infos = []
    for path in sorted(bundled_dir("suites").glob("*.toml")):
        try:
            suite = load_suite(str(path))
        except SuiteError as exc:
            infos.append(SuiteInfo(path.stem, f"invalid: {exc}", "", path))
        else:
            infos.append(SuiteInfo(path.stem, suite.description, suite.kind, path, suite.reproduces))
    return infos
