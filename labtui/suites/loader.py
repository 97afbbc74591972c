"""Reading suite files: TOML in, a checked ``Suite`` out, or a ``SuiteError`` that says where.

A suite is a file path or the name of a built-in suite (``suites/<name>.toml``).
``--set key.path=value`` overrides are applied to the parsed TOML before it is
checked, so they are held to exactly the same rules as the file.  A suite file
may name profiles, ``[profiles.NAME]`` tables of dotted suite keys
(``"scale.steps" = 3``); the one chosen is applied the same way, before the
``--set`` overrides.
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

from labtui.core.errors import UsageError
from labtui.core.paths import bundled_dir
from labtui.suites.model import (
    CREATION_WHERE,
    FAIRSHARE_MEASURES,
    FAIRSHARE_METHODS,
    LOAD_KINDS,
    LOAD_TOOLS,
    PLACEMENTS,
    PROBE_NAME_PATTERN,
    SUITE_NAME_PATTERN,
    WORKER_MEASURES,
    WORKER_OUTPUTS,
    BackendSettings,
    Concurrent,
    Creation,
    Fairshare,
    Isolation,
    Load,
    Measure,
    Program,
    Sampling,
    Scale,
    Suite,
    SuiteInfo,
    Worker,
    unsupported_kind,
)

#: Stands in for the file name in errors caused by a ``--set`` override.
OVERRIDE = "--set"

KeyPath = tuple[str, ...]


class SuiteError(UsageError):
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


def _is_cpu_list(text: str) -> bool:
    """Whether text is a CPU list such as "0", "0-3" or "0,2-3" (ranges ascending)."""
    if not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", text):
        return False
    ranges = [part.split("-") for part in text.split(",")]
    return all(int(r[0]) <= int(r[-1]) for r in ranges)


#: The largest integer a suite key takes unless it names its own maximum.
MAX_INTEGER = 1_000_000_000
#: Steps, instances per step and repetitions beyond these are typos, not plans (a plan lists every step).
MAX_STEPS, MAX_PER_STEP, MAX_REPETITIONS = 100_000, 100_000, 10_000
#: The largest number any suite key takes when the key names no maximum of its own (a year of seconds).
MAX_NUMBER = 31_536_000.0


def _integer(minimum: int, default: Any = _REQUIRED, maximum: int = MAX_INTEGER) -> _Key:
    return _Key(f"an integer from {minimum} to {maximum}", lambda v: _is_int(v) and minimum <= v <= maximum,
                default=default)


def _number(minimum: float, maximum: float | None = None, default: Any = _REQUIRED) -> _Key:
    top = MAX_NUMBER if maximum is None else maximum
    expect = f"a number from {minimum:g} to {top:g}"
    return _Key(expect, lambda v: _is_number(v) and minimum <= v <= top, float, default)


def _printable(text: str) -> bool:
    """No NUL or other control characters (a tab or a newline is fine)."""
    return not any(ord(c) < 32 and c not in "\t\n" or ord(c) == 127 for c in text)


def _text(expect: str = "a string", valid: Callable[[str], Any] | None = None, default: Any = _REQUIRED) -> _Key:
    return _Key(expect + " (no control characters)",
                lambda v: isinstance(v, str) and _printable(v) and (valid is None or bool(valid(v))), default=default)


def _one_of(options: Sequence[str]) -> _Key:
    return _Key("one of: " + ", ".join(options), lambda v: v in options)


_FLAG = _Key("true or false", lambda v: isinstance(v, bool), default=False)
_STRINGS = _Key(
    "a list of strings (no control characters)",
    lambda v: isinstance(v, list) and all(isinstance(s, str) and _printable(s) for s in v),
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
    "tool": _text("an absolute path of an executable on the host", lambda v: v.startswith("/") and len(v) > 1, None),
}
_SCHEMA: dict[str, dict[str, _Key]] = {
    "suite": {
        "name": _text(
            "a name of a-z, 0-9, '.', '_', '-' starting with a letter or digit",
            re.compile(SUITE_NAME_PATTERN).fullmatch,
        ),
        "description": _text(default=""),
        "reproduces": _text(default=""),
        "kind": _text(),
        "repetitions": _integer(1, 1, MAX_REPETITIONS),
        "operation_timeout_s": _number(1.0, 86400.0, 120.0),
        "backend": _text("a backend name such as process or docker",
                         re.compile(r"[a-z][a-z0-9_-]{0,31}").fullmatch, default=None),
    },
    "scale": {"start": _integer(0, 0, MAX_STEPS * MAX_PER_STEP), "steps": _integer(1, maximum=MAX_STEPS),
              "per_step": _integer(1, maximum=MAX_PER_STEP)},
    "worker": {**_PROGRAM, "measure": _one_of(WORKER_MEASURES),
               "output": _Key("one of: " + ", ".join(WORKER_OUTPUTS), lambda v: v in WORKER_OUTPUTS, default="probe"),
               "runs": _integer(1, 1), "warmup": _integer(0, 1),
               "max_runs": _integer(1, None), "target_cv": _number(0.001, 1.0, None)},
    "background": _PROGRAM,
    "attacker": _PROGRAM,
    "isolation": {"placements": _PLACEMENTS, "settle_s": _number(0.0, 600.0, 0.5)},
    "concurrent": {"instances": _COUNTS, "start_delay_s": _number(0.1, 60.0, 1.0)},
    "creation": {
        "where": _Key("one of: " + ", ".join(CREATION_WHERE), lambda v: v in CREATION_WHERE, default="host"),
        "start_delay_s": _number(0.1, 600.0, 1.0),
    },
    "fairshare": {
        "instances": _integer(2, 8),
        "reserved_share": _Key("a number between 0 and 1 (exclusive)", lambda v: _is_number(v) and 0 < v < 1, float, 0.25),
        "methods": _Key(
            "a list of distinct methods from: " + ", ".join(FAIRSHARE_METHODS),
            lambda v: isinstance(v, list) and len(set(map(str, v))) == len(v) and all(m in FAIRSHARE_METHODS for m in v),
            tuple,
            FAIRSHARE_METHODS,
        ),
        "duration_s": _number(0.5, 86400.0, 60.0),
        "cpus": _text('a CPU list such as "0", "0-3" or "0,2-3"', _is_cpu_list, None),
        "measure": _Key("one of: " + ", ".join(FAIRSHARE_MEASURES), lambda v: v in FAIRSHARE_MEASURES, default="output"),
        "program": _PROGRAM["program"],
        "image": _PROGRAM["image"],
        "start_delay_s": _number(0.1, 60.0, 1.0),
    },
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
    "backend": {"runtime": _text("a runtime name such as runc or runsc (letters, digits, '.', '_', '-')",
                                 re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}").fullmatch, None)},
    "sampling": {"interval_s": _number(0.1, 60.0, 1.0), "settle_s": _number(0.0, default=0.0),
                 "quiet_timeout_s": _number(0.0, 600.0, 10.0)},
}
_REQUIRED_TABLES = ("suite",)
#: Tables that only some kinds read; giving them to another kind is an error.
_KIND_TABLES = {"scale": ("scaling", "creation"), "background": ("scaling", "creation"), "attacker": ("isolation",),
                "isolation": ("isolation",), "concurrent": ("concurrent",), "creation": ("creation",),
                "fairshare": ("fairshare",)}


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
    if problem := unsupported_kind(kind):
        raise src.error(("suite", "kind"), problem)


def _program(raw: dict[str, Any], name: str, cls: type[Program], src: _Source) -> Any:
    """The [worker] or [background] table as ``cls``, or None when the table is absent."""
    if name not in raw:
        return None
    values = _table(raw, name, src)
    if sum(values[key] is not None for key in ("program", "image", "tool")) != 1:
        raise src.error((name,), "give exactly one of program (a probe name), image, or tool (a real tool's path "
                                 "on the host)")
    _check_probe(values["program"], (name, "program"), src)
    program = cls(**values)
    if isinstance(program, Worker):
        _check_output(program, src)
    return program


def _check_output(worker: Worker, src: _Source) -> None:
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


def _check_probe(program: str | None, path: tuple[str, str], src: _Source) -> None:
    """A program must be one of the bundled probes (``suites/probes/<name>.c``), which every backend builds."""
    probes = bundled_dir("suites") / "probes"
    if program is not None and not (probes / f"{program}.c").is_file():
        known = ", ".join(sorted(p.stem for p in probes.glob("*.c"))) or "none"
        raise src.error(path, f"no probe {program!r}; known probes: {known}")


def _check_kind_tables(raw: dict[str, Any], kind: str, src: _Source) -> None:
    for table, owners in _KIND_TABLES.items():
        if table in raw and kind not in owners:
            also = "".join(f" (or a {other} suite)" for other in owners[1:])
            raise src.error((table,), f"only a {owners[0]} suite uses [{table}]{also}; this suite's kind is {kind}")
    needed = {"scaling": ("scale", "background"), "isolation": ("worker", "attacker"), "concurrent": ("worker",),
              "creation": ("scale", "background", "worker"), "fairshare": ()}
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
    if worker is not None:
        _check_adaptive(worker, src)
    measure = Measure(**_table(raw, "measure", src))
    if worker is None and not measure.memory and head["kind"] != "fairshare":
        raise src.error((), "the suite measures nothing: add a [worker] table or set measure.memory = true")
    load = _load(raw, head["kind"], worker, src)
    if head["kind"] == "creation":
        _check_creation(scale, worker, src)
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
        creation=Creation(**_table(raw, "creation", src)),
        fairshare=_fairshare(raw, head, src),
        load=load,
        backend_settings=BackendSettings(**_table(raw, "backend", src)),
    )


def _check_adaptive(worker: Worker, src: _Source) -> None:
    """Adaptive runs need both a CV target and a ceiling of at least runs."""
    if (worker.max_runs is None) != (worker.target_cv is None):
        given, missing = ("max_runs", "target_cv") if worker.max_runs is not None else ("target_cv", "max_runs")
        raise src.error(("worker", given), f"adaptive runs need {missing} as well as {given}")
    if worker.max_runs is not None and worker.max_runs < worker.runs:
        raise src.error(("worker", "max_runs"), f"must be at least runs ({worker.runs}), not {worker.max_runs}")


def _check_creation(scale: Scale | None, worker: Worker | None, src: _Source) -> None:
    """A creation run adds one instance per step from none, and runs its worker as a probe."""
    assert scale is not None and worker is not None  # _check_kind_tables demanded both tables
    if scale.start != 0:
        raise src.error(("scale", "start"), f"a creation suite starts from no instances: expected 0, got {scale.start}")
    if scale.per_step != 1:
        raise src.error(("scale", "per_step"),
                        f"a creation suite creates one instance per step: expected 1, got {scale.per_step}")
    for key in ("image", "tool"):
        if getattr(worker, key) is not None:
            raise src.error(("worker", key), "a creation suite runs its worker as a probe on the host "
                                             f"or in instances: give program, not {key}")


def _fairshare(raw: dict[str, Any], head: dict[str, Any], src: _Source) -> Fairshare:
    """The [fairshare] table, checked so that every weight and cap it implies can be set."""
    fair = Fairshare(**_table(raw, "fairshare", src))
    if head["kind"] != "fairshare":
        return fair
    if "worker" in raw:
        raise src.error(("worker",), "a fairshare suite runs its own probe: name it with fairshare.program "
                                     "(or fairshare.image), not a [worker] table")
    if fair.program is not None and fair.image is not None:
        raise src.error(("fairshare",), "give at most one of program (a probe name) or image")
    _check_probe(fair.program, ("fairshare", "program"), src)
    reserved_weight = fair.weights()[0]
    if "weight" in fair.methods and not 1 <= reserved_weight <= 10000:
        raise src.error(("fairshare", "reserved_share"),
                        f"the weight method would give the reserved instance a CPU weight of {reserved_weight} "
                        f"against {fair.weights()[1]} for the others; weights go from 1 to 10000")
    reserved_cap, other_cap = fair.caps(1)
    if "cap" in fair.methods and min(reserved_cap, other_cap) < 0.01:
        key = "reserved_share" if reserved_cap < 0.01 else "instances"
        raise src.error(("fairshare", key), f"the cap method would cap an instance at {min(reserved_cap, other_cap):.4f} "
                                            "of a CPU; the smallest cap is 0.01")
    needed = fair.start_delay_s + fair.duration_s + 10
    if fair.measure == "output" and head["operation_timeout_s"] < needed:
        raise src.error(("fairshare", "duration_s"), f"instances that run {fair.duration_s:g} s after a "
                        f"{fair.start_delay_s:g} s delay need suite.operation_timeout_s of at least {needed:g}")
    return fair


def _load(raw: dict[str, Any], kind: str, worker: Worker | None, src: _Source) -> Load | None:
    """The [load] table, which a worker with ``measure = "load"`` needs and only it may have."""
    wants = worker is not None and worker.measure == "load"
    if not wants:
        if "load" in raw:
            raise src.error(("load",), 'only a worker with measure = "load" uses [load]')
        return None
    if kind not in LOAD_KINDS:
        raise src.error(("worker", "measure"), f'measure = "load" runs in {" and ".join(LOAD_KINDS)} suites; '
                        f"this suite's kind is {kind}")
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
    #: The key path of the profile entry that gave it in the file (None: a --set).
    origin: KeyPath | None = None


def _suite_keys() -> list[str]:
    """Every dotted key a --set or a profile may change, e.g. "scale.steps"."""
    return [f"{table}.{name}" for table, keys in _SCHEMA.items() for name in keys]


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
    valid = _suite_keys()
    if dotted not in valid:
        raise SuiteError(OVERRIDE, None, dotted, _unknown("key", dotted, valid))
    try:
        parsed = _toml_value(value.strip())
    except RecursionError:
        raise SuiteError(OVERRIDE, None, dotted, "invalid TOML: arrays or tables nested too deeply") from None
    return _Override(path, parsed, f"{dotted}={value.strip()}")


def _apply(raw: dict[str, Any], overrides: Sequence[_Override]) -> None:
    for override in overrides:
        table, key = override.path
        section = raw.setdefault(table, {})
        if isinstance(section, dict):  # otherwise checking reports the table itself
            section[key] = override.value


# --- profiles ----------------------------------------------------------------------

PROFILES = "profiles"


def _profiles(raw: dict[str, Any], src: _Source) -> dict[str, list[_Override]]:
    """Take the [profiles.NAME] tables out of ``raw``; check each entry's key and value type."""
    tables = raw.pop(PROFILES, {})
    if not isinstance(tables, dict):
        raise src.error((PROFILES,), f"expected [{PROFILES}.NAME] tables, got {_show(tables)}")
    profiles = {}
    for name, entries in tables.items():
        if not isinstance(entries, dict):
            raise src.error((PROFILES, name), f'expected a table of suite keys such as "scale.steps" = 3, got {_show(entries)}')
        profiles[name] = [_profile_entry(origin, dotted, value, src) for origin, dotted, value in _entries(name, entries)]
    return profiles


def _entries(name: str, entries: dict[str, Any]) -> list[tuple[KeyPath, str, Any]]:
    """(key path in the file, dotted suite key, value) of a profile; ``scale.steps`` unquoted nests a table."""
    found: list[tuple[KeyPath, str, Any]] = []
    for key, value in entries.items():
        if isinstance(value, dict):
            found += [((PROFILES, name, key, sub), f"{key}.{sub}", item) for sub, item in value.items()]
        else:
            found.append(((PROFILES, name, key), key, value))
    return found


def _profile_entry(origin: KeyPath, dotted: str, value: Any, src: _Source) -> _Override:
    table, _, key = dotted.partition(".")
    spec = _SCHEMA.get(table, {}).get(key)
    if spec is None:
        raise src.error(origin, _unknown("suite key", dotted, _suite_keys()))
    if not spec.accepts(value):
        raise src.error(origin, f"expected {spec.expect}, got {_show(value)}")
    return _Override((table, key), value, f"{dotted}={_show(value)}", origin)


def _chosen(profiles: dict[str, list[_Override]], name: str | None, src: _Source) -> list[_Override]:
    """The entries of profile ``name`` (none without a name); an unknown name lists the suite's profiles."""
    if name is None:
        return []
    if name not in profiles:
        if not profiles:
            raise src.error((), f"unknown profile '{name}': the suite has no [{PROFILES}.NAME] tables")
        close = difflib.get_close_matches(name, list(profiles), n=1)
        hint = f", did you mean '{close[0]}'?" if close else ";"
        raise src.error((PROFILES,), f"unknown profile '{name}'{hint} profiles of this suite: {', '.join(profiles)}")
    return profiles[name]


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
    except RecursionError:
        raise SuiteError(display, None, None, "invalid TOML: arrays or tables nested too deeply") from None


def load_suite(name_or_path: str, overrides: Sequence[str] = (), profile: str | None = None) -> Suite:
    """Read a suite (a file path or a built-in name), apply a profile, then ``--set`` overrides; check it."""
    parsed = [_parse_override(text) for text in overrides]
    path = _resolve(name_or_path)
    display = _display(path)
    text = _read(path, display)
    raw = _parse(text, display)
    lines = _key_lines(text)
    file_src = _Source(display, lines)
    chosen = _chosen(_profiles(raw, file_src), profile, file_src)
    _apply(raw, chosen)
    _apply(raw, parsed)
    # A bad value that came from the profile is blamed on the profile's line (a table it added, too).
    moved = {path: lines[o.origin] for o in chosen if o.origin in lines for path in (o.path, o.path[:1])
             if path == o.path or path not in lines}
    src = _Source(display, {**lines, **moved}, frozenset(o.path for o in parsed))
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


def suite_to_dict(suite: Suite) -> dict[str, Any]:
    """The suite as JSON-able data (tuples become lists), for storing with a session."""
    return _jsonable(dataclasses.asdict(suite))


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    return value
