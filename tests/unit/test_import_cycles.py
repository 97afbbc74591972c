"""No import cycle in labtui: the import graph (grimp's, the one import-linter checks the layers on) sorts."""

from __future__ import annotations

from graphlib import CycleError, TopologicalSorter

import grimp
import pytest


def _import_graph(package: str) -> dict[str, set[str]]:
    graph = grimp.build_graph(package)
    return {module: graph.find_modules_directly_imported_by(module) for module in graph.modules}


def test_labtui_has_no_import_cycle() -> None:
    """Every import counts, at module level or inside a function, as grimp reads them."""
    try:
        TopologicalSorter(_import_graph("labtui")).prepare()
    except CycleError as exc:
        pytest.fail("import cycle: " + " -> ".join(exc.args[1]))


def test_a_cycle_is_named_module_by_module() -> None:
    """The check itself: a graph with a cycle fails to sort, and the error names the modules around it."""
    with pytest.raises(CycleError) as found:
        TopologicalSorter({"a": {"b"}, "b": {"c"}, "c": {"a"}}).prepare()
    assert set(found.value.args[1]) == {"a", "b", "c"}
