"""What the backend test modules share: a Lab that cleans up what a test created, and the `lab` fixture.

The fixture is exposed by the conftests of the tiers that use it (tests/backends, tests/e2e).
A test module names its backend at module level (``BACKEND = "docker"``) and, if it likes, the
prefix of its session names (``SESSION_PREFIX = "svc"``; "test" otherwise); a test that runs on
several backends is parametrized over them instead::

    @pytest.mark.parametrize("lab", ["process", "docker"], indirect=True)
    async def test_x(lab: Lab) -> None: ...
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from labtui.backends.base import Backend, Instance, InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost


class Lab:
    """A backend plus the sessions a test used; every instance in them is destroyed afterwards."""

    def __init__(self, backend: Backend, prefix: str = "test") -> None:
        self.backend = backend
        self.prefix = prefix
        self.sessions: list[str] = []

    def session(self) -> str:
        name = f"{self.prefix}-{secrets.token_hex(4)}"
        self.sessions.append(name)
        return name

    async def run_program(self, program: str, args: list[str], timeout_s: float) -> Instance:
        """One worker instance of a bundled probe, run to its exit with its output captured."""
        spec = InstanceSpec(Labels(self.session(), "worker", "w1"), program=program, args=tuple(args), wait="exit",
                            capture_output=True, timeout_s=timeout_s)
        return await self.backend.create(spec)

    async def sleepers(
        self, session: str, count: int, role: str = "idle", program: str = "sleeper", **extra: Any
    ) -> list[Instance]:
        specs = [InstanceSpec(Labels(session, role, f"s{i}"), program=program, **extra) for i in range(count)]
        return await self.backend.create_many(specs)

    async def cleanup(self) -> None:
        for session in self.sessions:
            left = await self.backend.list(session)
            if left:
                await self.backend.destroy_many(left, force=True)


async def open_lab(backend: str, prefix: str = "test") -> AsyncIterator[Lab]:
    """Yield a Lab on the local host and clean it up afterwards (use inside a fixture)."""
    lab = Lab(open_backend(backend, LocalHost()), prefix)
    try:
        yield lab
    finally:
        await lab.cleanup()


@pytest.fixture
async def lab(request: pytest.FixtureRequest, runtime_dir: Path) -> AsyncIterator[Lab]:
    """A Lab on the local host for the test's backend (its parameter, else its module's ``BACKEND``),
    in the module's runtime dir; every instance of the sessions it handed out is destroyed after."""
    backend = getattr(request, "param", None) or getattr(request.module, "BACKEND", None)
    if backend is None:
        pytest.fail(f"{request.module.__name__} uses `lab` but names no backend (BACKEND = \"process\")", pytrace=False)
    async for opened in open_lab(backend, getattr(request.module, "SESSION_PREFIX", "test")):
        yield opened
