"""A docker create_many cancelled at any moment (an interrupt) leaves no container behind.

The engine goes on creating a container after its client gives up; the backend has to wait for
the id and remove it. Runs against the real engine on /var/run/docker.sock.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import pytest

from labtui.backends.base import InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost

SOCKET = "/var/run/docker.sock"


@pytest.mark.skipif(not Path(SOCKET).is_socket(), reason=f"no Docker engine socket at {SOCKET}: start dockerd")
@pytest.mark.parametrize("yields", [1, 3, 10, 30, 100, 300])
async def test_cancelled_create_many_leaves_nothing(runtime_dir: Path, yields: int) -> None:
    backend = open_backend("docker", LocalHost())
    await backend.prepare(["sleeper"])
    session = "cancel-" + secrets.token_hex(4)
    specs = [InstanceSpec(Labels(session, "background", f"ba{i}"), program="sleeper") for i in range(8)]
    task = asyncio.ensure_future(backend.create_many(specs))
    for _ in range(yields):  # a cut at a different point of the creates each time: loop turns, not a clock
        await asyncio.sleep(0.001)
        if task.done():
            break
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    left = await backend.list(session)
    await backend.destroy_many(left, force=True)  # the test's own cleanup, whatever the outcome
    if task.cancelled():
        assert left == [], [f"{i.name} {i.state}" for i in left]


@pytest.mark.skipif(not Path(SOCKET).is_socket(), reason=f"no Docker engine socket at {SOCKET}: start dockerd")
async def test_destroy_while_another_removal_is_under_way(runtime_dir: Path) -> None:
    """The teardown's sweep can meet a removal that a cancelled create started: both end without an error."""
    backend = open_backend("docker", LocalHost())
    await backend.prepare(["sleeper"])
    session = "twice-" + secrets.token_hex(4)
    made = await backend.create_many([InstanceSpec(Labels(session, "background", f"ba{i}"), program="sleeper")
                                      for i in range(6)])
    try:
        await asyncio.gather(*(backend.destroy(i, force=True) for i in made for _ in range(2)))
    finally:
        await backend.destroy_many(await backend.list(session), force=True)
    assert await backend.list(session) == []
