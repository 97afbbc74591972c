"""The tiers' two workers keep each test file on one worker (tests/conftest.py names a group per file), so that
a file's module fixtures (stores, sshd hosts on their own loopback addresses) are made once, by one worker.

pytest 9.2 made node ids structured, and pytest-xdist 3.8 still marks a test's group by rewriting its old node id
field: the groups were dropped without a word, a file's tests dealt out to both workers, and each worker made
every module fixture again (pytest-dev/pytest-xdist#1386; pytest is held below 9.2 in pyproject.toml).
"""

from __future__ import annotations

import os

import pytest


def test_a_file_under_loadgroup_is_one_group(request: pytest.FixtureRequest) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is None or request.config.getvalue("loadgroup") is not True:
        pytest.skip("not on an xdist worker under --dist loadgroup")
    assert request.node.nodeid.endswith("@unit/test_worker_groups.py"), request.node.nodeid
