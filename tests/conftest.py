"""Fixtures shared by every tier (`runtime_dir`, `env`), and the workers' groups.

The tiers (unit, backends, hosts, ui, e2e) are directories with a conftest.py of their own;
the helper modules beside this file (backend_lab, sshd_fixture, simulators, ...) are importable
from each (`pythonpath = ["tests"]` in pyproject.toml).
"""

from __future__ import annotations

import os
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
#: The checkout under test: first on a `labtui` subprocess's PYTHONPATH, whatever the working directory.
CHECKOUT = TESTS.parent


@pytest.fixture
def env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The environment of a `labtui` subprocess (cli_run.labtui(..., env=env)): this process's, less the user's
    store and lab config (LABTUI_DB, LABTUI_CONFIG), 250 columns, this checkout first on PYTHONPATH, and a
    runtime dir of the test's own (tmp_path/runtime), or the module's `runtime_dir` where the module sets
    ``SHARED_RUNTIME = True`` (its in-process backend and its CLI runs then share one build of the helpers)."""
    shared = getattr(request.module, "SHARED_RUNTIME", False)
    runtime = request.getfixturevalue("runtime_dir") if shared else tmp_path / "runtime"
    clean = {k: v for k, v in os.environ.items() if k not in ("LABTUI_DB", "LABTUI_CONFIG")}
    paths = dict.fromkeys(filter(None, [str(CHECKOUT), *clean.get("PYTHONPATH", "").split(os.pathsep)]))
    return {**clean, "LABTUI_RUNTIME_DIR": str(runtime), "COLUMNS": "250", "PYTHONPATH": os.pathsep.join(paths)}



@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which names each item's group from its marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for two workers (``-n 2 --dist loadgroup``): a test file stays on one worker, as with
    ``--dist loadfile``, so its module fixtures (runtime dirs, sshd hosts) are made once; the group is
    named by tier and file (``ui/test_console.py``); a test that names its own ``xdist_group`` (the
    matrix splits its suites in two) keeps it."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.relative_to(TESTS).as_posix()))
