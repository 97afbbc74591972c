"""The registry of experiment kinds: every module of this package declares one (``KIND``), found by name.

Adding a kind is adding a module here (plus its engine module, and a report module if it draws its own
figures); nothing else lists the kinds.  The loader, the engine, the report and the CLI ask this registry.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Any

from labtui.suites.kind import Kind
from labtui.suites.model import Suite


@cache
def all_kinds() -> dict[str, Kind]:
    """Every kind by name, scaling first (the default kind), then by name."""
    found = [importlib.import_module(f"{__name__}.{m.name}").KIND for m in pkgutil.iter_modules(__path__)]
    return {k.name: k for k in sorted(found, key=lambda k: (k.name != "scaling", k.name))}


def unsupported_kind(name: str) -> str | None:
    """Why a suite of kind ``name`` cannot run (the one wording of it), or None when it can."""
    if name in all_kinds():
        return None
    return f"unknown kind {name!r}; supported kinds: {', '.join(all_kinds())}"


def kind_named(name: str) -> Kind:
    """The kind of that name; ValueError, in the words of ``unsupported_kind``, for one that does not exist."""
    if problem := unsupported_kind(name):
        raise ValueError(problem)
    return all_kinds()[name]


def resolve(ref: str) -> Any:
    """The function a kind names as ``module:function``."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


def table_owners() -> dict[str, tuple[str, ...]]:
    """Each table that only some kinds read, with those kinds (a suite of another kind must not have it)."""
    owners: dict[str, list[str]] = {}
    for kind in all_kinds().values():
        for table in (*kind.shares, *kind.tables):
            owners.setdefault(table, []).append(kind.name)
    return {table: tuple(names) for table, names in owners.items()}


def steps_per_repetition(suite: Suite) -> int:
    """Measurements per repetition of a suite: scale steps plus the baseline, placements, counts, configurations."""
    return kind_named(suite.kind).steps(suite)


def most_instances(suite: Suite) -> int:
    """Most instances a run of the suite has alive at once."""
    return kind_named(suite.kind).most_instances(suite)
