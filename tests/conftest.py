"""Fixtures shared by every tier, and the workers' groups.

The tiers (unit, backends, hosts, ui, e2e) are directories with a conftest.py of their own;
the helper modules beside this file (backend_lab, sshd_fixture, simulators, ...) are importable
from each (`pythonpath = ["tests"]` in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def runtime_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One runtime dir per module, so helpers, probes and kernels build once."""
    path = tmp_path_factory.mktemp("runtime")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LABTUI_RUNTIME_DIR", str(path))
        yield path


TESTS = Path(__file__).parent


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which names each item's group from its marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for two workers (``-n 2 --dist loadgroup``): a test file stays on one worker, as with
    ``--dist loadfile``, so its module fixtures (runtime dirs, sshd hosts) are made once; the group is
    named by tier and file (``ui/test_console.py``); a test that names its own ``xdist_group`` (the
    matrix splits its suites in two) keeps it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(TESTS).as_posix()))
