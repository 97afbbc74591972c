"""Changes to a suite before it is checked: ``--set key.path=value`` overrides and the suite file's own
``[profiles.NAME]`` tables, both held to the same rules as the file."""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from labtui.suites.keys import SCHEMA, suite_keys
from labtui.suites.source import OVERRIDE, KeyPath, Source, SuiteError, show, unknown


@dataclass(frozen=True, slots=True)
class Override:
    path: KeyPath
    value: Any
    text: str
    #: The key path of the profile entry that gave it in the file (None: a --set).
    origin: KeyPath | None = None


def _toml_value(text: str) -> Any:
    """A TOML value if ``text`` is one (``10``, ``true``, ``"x"``, ``[1, 2]``), else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_override(text: str) -> Override:
    key, sep, value = text.partition("=")
    path = tuple(part.strip() for part in key.split("."))
    dotted = ".".join(path)
    if not sep or not dotted:
        raise SuiteError(OVERRIDE, None, dotted or None, "expected key.path=value")
    valid = suite_keys()
    if dotted not in valid:
        raise SuiteError(OVERRIDE, None, dotted, unknown("key", dotted, valid))
    try:
        parsed = _toml_value(value.strip())
    except RecursionError:
        raise SuiteError(OVERRIDE, None, dotted, "invalid TOML: arrays or tables nested too deeply") from None
    return Override(path, parsed, f"{dotted}={value.strip()}")


def apply_overrides(raw: dict[str, Any], overrides: Sequence[Override]) -> None:
    for override in overrides:
        table, key = override.path
        section = raw.setdefault(table, {})
        if isinstance(section, dict):  # otherwise checking reports the table itself
            section[key] = override.value


PROFILES = "profiles"


def profiles_of(raw: dict[str, Any], src: Source) -> dict[str, list[Override]]:
    """Take the [profiles.NAME] tables out of ``raw``; check each entry's key and value type."""
    tables = raw.pop(PROFILES, {})
    if not isinstance(tables, dict):
        raise src.error((PROFILES,), f"expected [{PROFILES}.NAME] tables, got {show(tables)}")
    profiles = {}
    for name, entries in tables.items():
        if not isinstance(entries, dict):
            raise src.error((PROFILES, name), f'expected a table of suite keys such as "scale.steps" = 3, got {show(entries)}')
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


def _profile_entry(origin: KeyPath, dotted: str, value: Any, src: Source) -> Override:
    table, _, key = dotted.partition(".")
    spec = SCHEMA.get(table, {}).get(key)
    if spec is None:
        raise src.error(origin, unknown("suite key", dotted, suite_keys()))
    if not spec.accepts(value):
        raise src.error(origin, f"expected {spec.expect}, got {show(value)}")
    return Override((table, key), value, f"{dotted}={show(value)}", origin)


def chosen_profile(profiles: dict[str, list[Override]], name: str | None, src: Source) -> list[Override]:
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
