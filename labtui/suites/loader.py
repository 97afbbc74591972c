"""Reading suite files: TOML in, a checked ``Suite`` out, or a ``SuiteError`` that says where.

A suite is a file path or the name of a built-in suite (``suites/<name>.toml``).
``--set key.path=value`` overrides are applied to the parsed TOML before it is
checked, so they are held to exactly the same rules as the file.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labtui.paths import bundled_dir
from labtui.suites.model import (
    LOAD_TOOLS,
    PLACEMENTS,
    PLANNED_KINDS,
    PROBE_NAME_PATTERN,
    SUITE_NAME_PATTERN,
    SUPPORTED_KINDS,
    WORKER_MEASURES,
    Concurrent,
    Isolation,
    Load,
    Measure,
    Program,
    Sampling,
    Scale,
    Suite,
    SuiteInfo,
    Worker,
)

#: Stands in for the file name in errors caused by a ``--set`` override.
OVERRIDE = "--set"

KeyPath = tuple[str, ...]


class SuiteError(Exception):
    """A suite file or a ``--set`` override is wrong; ``str()`` says where and why."""

    def __init__(self, file: str, line: int | None, key: str | None, message: str) -> None:
        super().__init__(file, line, key, message)
        self.file = file
        self.line = line
        self.key = key
        self.message = message

    def __str__(self) -> str:
        if self.file == OVERRIDE:
            where = f"{OVERRIDE} {self.key}" if self.key else OVERRIDE
            return f"{where}: {self.message}"
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return ": ".join(part for part in (where, self.key, self.message) if part)


# --- the schema -------------------------------------------------------------

_REQUIRED = object()


@dataclass(frozen=True, slots=True)
class _Key:
    """One key of a table: what it accepts, how the value is stored, its default."""

    expect: str
    accepts: Callable[[Any], bool]
    convert: Callable[[Any], Any] = lambda value: value
    default: Any = _REQUIRED


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _integer(minimum: int, default: Any = _REQUIRED) -> _Key:
    return _Key(f"an integer >= {minimum}", lambda v: _is_int(v) and v >= minimum, default=default)


def _number(minimum: float, maximum: float | None = None, default: Any = _REQUIRED) -> _Key:
    if maximum is None:
        return _Key(f"a number >= {minimum:g}", lambda v: _is_number(v) and v >= minimum, float, default)
    expect = f"a number from {minimum:g} to {maximum:g}"
    return _Key(expect, lambda v: _is_number(v) and minimum <= v <= maximum, float, default)


def _text(expect: str = "a string", valid: Callable[[str], Any] | None = None, default: Any = _REQUIRED) -> _Key:
    return _Key(expect, lambda v: isinstance(v, str) and (valid is None or bool(valid(v))), default=default)


def _one_of(options: Sequence[str]) -> _Key:
    return _Key("one of: " + ", ".join(options), lambda v: v in options)


_FLAG = _Key("true or false", lambda v: isinstance(v, bool), default=False)
_STRINGS = _Key(
    "a list of strings",
    lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
    tuple,
    (),
)
_PLACEMENTS = _Key(
    "a non-empty list of distinct placements starting with 'alone', from: " + ", ".join(PLACEMENTS),
    lambda v: isinstance(v, list)
    and bool(v)
    and v[0] == "alone"
    and len(set(map(str, v))) == len(v)
    and all(isinstance(p, str) and p in PLACEMENTS for p in v),
    tuple,
    PLACEMENTS,
)
_COUNTS = _Key(
    "a non-empty list of distinct integers >= 1",
    lambda v: isinstance(v, list) and bool(v) and all(_is_int(n) and n >= 1 for n in v) and len(set(v)) == len(v),
    tuple,
    (1, 2, 4, 8),
)
_PROGRAM = {
    "program": _text(
        "a probe name (a lowercase letter, then up to 31 of a-z, 0-9, '_', '-')",
        re.compile(PROBE_NAME_PATTERN).fullmatch,
        None,
    ),
    "image": _text("a non-empty string", bool, None),
    "args": _STRINGS,
}
_SCHEMA: dict[str, dict[str, _Key]] = {
    "suite": {
        "name": _text(
            "a name of a-z, 0-9, '.', '_', '-' starting with a letter or digit",
            re.compile(SUITE_NAME_PATTERN).fullmatch,
        ),
        "description": _text(default=""),
        "kind": _text(),
        "repetitions": _integer(1, 1),
        "operation_timeout_s": _number(1.0, 86400.0, 120.0),
        "backend": _text("a backend name such as process or docker",
                         re.compile(r"[a-z][a-z0-9_-]{0,31}").fullmatch, default=None),
    },
    "scale": {"start": _integer(0, 0), "steps": _integer(1), "per_step": _integer(1)},
    "worker": {**_PROGRAM, "measure": _one_of(WORKER_MEASURES), "runs": _integer(1, 1), "warmup": _integer(0, 1)},
    "background": _PROGRAM,
    "attacker": _PROGRAM,
    "isolation": {"placements": _PLACEMENTS, "settle_s": _number(0.0, 600.0, 0.5)},
    "concurrent": {"instances": _COUNTS, "start_delay_s": _number(0.1, 60.0, 1.0)},
    "measure": {"memory": _FLAG},
    "load": {
        "tool": _one_of(LOAD_TOOLS),
        "port": _Key("an integer from 1 to 65535", lambda v: _is_int(v) and 1 <= v <= 65535, default=80),
        "connections": _integer(1, 30),
        "threads": _integer(1, 14),
        "duration_s": _integer(1, 20),
        "requests": _integer(1, 100000),
        "pipeline": _integer(1, 16),
        "tests": _Key(
            "a list of redis-benchmark test names (letters, digits, '_')",
            lambda v: isinstance(v, list) and all(isinstance(t, str) and re.fullmatch(r"[A-Za-z0-9_]+", t) for t in v),
            tuple,
            (),
        ),
        "ready_timeout_s": _number(1.0, 600.0, 30.0),
        "timeout_s": _number(1.0, 86400.0, 900.0),
    },
    "sampling": {"interval_s": _number(0.1, 60.0, 1.0), "settle_s": _number(0.0, default=0.0), "quiet_timeout_s": _number(0.0, 600.0, 10.0)},
}
_REQUIRED_TABLES = ("suite",)
#: Tables that only one kind reads; giving them to another kind is an error.
_KIND_TABLES = {"scale": "scaling", "background": "scaling", "attacker": "isolation",
                "isolation": "isolation", "concurrent": "concurrent"}


# --- where keys are -----------------------------------------------------------

_HEADER = re.compile(r"\[\[?\s*(?P<path>[^\]]+?)\s*\]\]?\s*(?:#.*)?")
_BARE_OR_QUOTED = r"(?:[A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')"
_ASSIGN = re.compile(rf"(?P<path>{_BARE_OR_QUOTED}(?:\s*\.\s*{_BARE_OR_QUOTED})*)\s*=")
_PART = re.compile(_BARE_OR_QUOTED)


def _split(dotted: str) -> KeyPath:
    return tuple(part.strip("\"'") for part in _PART.findall(dotted))


def _key_lines(text: str) -> dict[KeyPath, int]:
    """Map each table and key path in TOML text to the line (1-based) that first names it."""
    lines: dict[KeyPath, int] = {}
    table: KeyPath = ()
    in_string = False
    for number, line in enumerate(text.splitlines(), 1):
        if not in_string:
            table = _note_line(line.strip(), table, number, lines)
        if (line.count('"""') + line.count("'''")) % 2:
            in_string = not in_string
    return lines


def _note_line(stripped: str, table: KeyPath, number: int, lines: dict[KeyPath, int]) -> KeyPath:
    """Record a header or assignment line; return the table that is current after it."""
    if header := _HEADER.fullmatch(stripped):
        table = _split(header["path"])
        path = table
    elif assign := _ASSIGN.match(stripped):
        path = table + _split(assign["path"])
    else:
        return table
    for end in range(1, len(path) + 1):
        lines.setdefault(path[:end], number)
    return table


@dataclass(frozen=True, slots=True)
class _Source:
    """Turns a key path into a SuiteError pointing at the file line or at ``--set``."""

    file: str
    lines: Mapping[KeyPath, int]
    overridden: frozenset[KeyPath] = frozenset()

    def error(self, path: KeyPath, message: str) -> SuiteError:
        key = ".".join(path) or None
        if path in self.overridden:
            return SuiteError(OVERRIDE, None, key, message)
        return SuiteError(self.file, self._line(path), key, message)

    def _line(self, path: KeyPath) -> int | None:
        """The key's line, else its nearest table's (a missing key points at its table)."""
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None


# --- checking -------------------------------------------------------------------


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        return "an array of tables"
    return repr(value)


def _unknown(what: str, name: str, valid: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, valid, n=1)
    if close:
        return f"unknown {what}, did you mean '{close[0]}'?"
    return f"unknown {what}; expected one of: {', '.join(valid)}"


def _check_tables(raw: dict[str, Any], src: _Source) -> None:
    for name, value in raw.items():
        if name not in _SCHEMA:
            raise src.error((name,), _unknown("table", name, list(_SCHEMA)))
        if not isinstance(value, dict):
            raise src.error((name,), f"expected a table, got {_show(value)}")


def _table(raw: dict[str, Any], name: str, src: _Source) -> dict[str, Any]:
    """The checked values of one table, with defaults filled in."""
    if name in _REQUIRED_TABLES and name not in raw:
        raise src.error((name,), "missing required table")
    schema = _SCHEMA[name]
    given = raw.get(name, {})
    for key in given:
        if key not in schema:
            raise src.error((name, key), _unknown("key", key, list(schema)))
    return {key: _value(given, (name, key), spec, src) for key, spec in schema.items()}


def _value(given: dict[str, Any], path: KeyPath, spec: _Key, src: _Source) -> Any:
    key = path[-1]
    if key not in given:
        if spec.default is _REQUIRED:
            raise src.error(path, "missing required key")
        return spec.default
    if not spec.accepts(given[key]):
        raise src.error(path, f"expected {spec.expect}, got {_show(given[key])}")
    return spec.convert(given[key])


def _check_kind(kind: str, src: _Source) -> None:
    supported = ", ".join(SUPPORTED_KINDS)
    if kind in PLANNED_KINDS:
        raise src.error(("suite", "kind"), f"kind '{kind}' is not supported yet; supported kinds: {supported}")
    if kind not in SUPPORTED_KINDS:
        raise src.error(("suite", "kind"), f"unknown kind '{kind}'; supported kinds: {supported}")


def _program(raw: dict[str, Any], name: str, cls: type[Program], src: _Source) -> Any:
    """The [worker] or [background] table as ``cls``, or None when the table is absent."""
    if name not in raw:
        return None
    values = _table(raw, name, src)
    if (values["program"] is None) == (values["image"] is None):
        raise src.error((name,), "give exactly one of program (a probe name) or image")
    return cls(**values)


def _check_kind_tables(raw: dict[str, Any], kind: str, src: _Source) -> None:
    for table, owner in _KIND_TABLES.items():
        if table in raw and owner != kind:
            raise src.error((table,), f"only a {owner} suite uses [{table}]; this suite's kind is {kind}")
    needed = {"scaling": ("scale", "background"), "isolation": ("worker", "attacker"), "concurrent": ("worker",)}
    for table in needed[kind]:
        if table not in raw:
            raise src.error((table,), f"a {kind} suite needs a [{table}] table")


def _build(raw: dict[str, Any], src: _Source, source: str, overrides: tuple[str, ...]) -> Suite:
    _check_tables(raw, src)
    head = _table(raw, "suite", src)
    _check_kind(head["kind"], src)
    _check_kind_tables(raw, head["kind"], src)
    scale = Scale(**_table(raw, "scale", src)) if "scale" in raw else None
    worker = _program(raw, "worker", Worker, src)
    measure = Measure(**_table(raw, "measure", src))
    if worker is None and not measure.memory:
        raise src.error((), "the suite measures nothing: add a [worker] table or set measure.memory = true")
    load = _load(raw, head["kind"], worker, src)
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
        isolation=Isolation(**_table(raw, "isolation", src)),
        concurrent=Concurrent(**_table(raw, "concurrent", src)),
        load=load,
    )


def _load(raw: dict[str, Any], kind: str, worker: Worker | None, src: _Source) -> Load | None:
    """The [load] table, which a worker with ``measure = "load"`` needs and only it may have."""
    wants = worker is not None and worker.measure == "load"
    if not wants:
        if "load" in raw:
            raise src.error(("load",), 'only a worker with measure = "load" uses [load]')
        return None
    if kind != "scaling":
        raise src.error(("worker", "measure"), f'measure = "load" runs in scaling suites; this suite\'s kind is {kind}')
    if "load" not in raw or "tool" not in raw["load"]:
        raise src.error(("load", "tool"), 'a worker with measure = "load" needs [load] tool = ' + " or ".join(
            f'"{t}"' for t in LOAD_TOOLS))
    load = Load(**_table(raw, "load", src))
    if load.tool == "wrk" and load.threads > load.connections:
        raise src.error(("load", "threads"), f"wrk needs connections >= threads; got {load.connections} < {load.threads}")
    return load


# --- overrides --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Override:
    path: KeyPath
    value: Any
    text: str


def _toml_value(text: str) -> Any:
    """A TOML value if ``text`` is one (``10``, ``true``, ``"x"``, ``[1, 2]``), else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _parse_override(text: str) -> _Override:
    key, sep, value = text.partition("=")
    path = tuple(part.strip() for part in key.split("."))
    dotted = ".".join(path)
    if not sep or not dotted:
        raise SuiteError(OVERRIDE, None, dotted or None, "expected key.path=value")
    valid = [f"{table}.{name}" for table, keys in _SCHEMA.items() for name in keys]
    if dotted not in valid:
        raise SuiteError(OVERRIDE, None, dotted, _unknown("key", dotted, valid))
    return _Override(path, _toml_value(value.strip()), f"{dotted}={value.strip()}")


def _apply(raw: dict[str, Any], overrides: Sequence[_Override]) -> None:
    for override in overrides:
        table, key = override.path
        section = raw.setdefault(table, {})
        if isinstance(section, dict):  # otherwise checking reports the table itself
            section[key] = override.value


# --- files --------------------------------------------------------------------------


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
    close = difflib.get_close_matches(name_or_path, names, n=1)
    hint = f"did you mean '{close[0]}'? " if close else ""
    message = f"not a suite file or built-in suite; {hint}built-in suites: {', '.join(names) or 'none'}"
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


def load_suite(name_or_path: str, overrides: Sequence[str] = ()) -> Suite:
    """Read a suite (a file path or a built-in name), apply ``--set`` overrides, check it."""
    parsed = [_parse_override(text) for text in overrides]
    path = _resolve(name_or_path)
    display = _display(path)
    text = _read(path, display)
    raw = _parse(text, display)
    _apply(raw, parsed)
    src = _Source(display, _key_lines(text), frozenset(o.path for o in parsed))
    return _build(raw, src, str(path.absolute()), tuple(o.text for o in parsed))


def list_suites() -> list[SuiteInfo]:
    """The built-in suites by name; one that fails to load is listed with an "invalid: ..." description."""
    infos = []
    for path in sorted(bundled_dir("suites").glob("*.toml")):
        try:
            suite = load_suite(str(path))
        except SuiteError as exc:
            infos.append(SuiteInfo(path.stem, f"invalid: {exc}", "", path))
        else:
            infos.append(SuiteInfo(path.stem, suite.description, suite.kind, path))
    return infos


def suite_to_dict(suite: Suite) -> dict[str, Any]:
    """The suite as JSON-able data (tuples become lists), for storing with a session."""
    return _jsonable(dataclasses.asdict(suite))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return value
