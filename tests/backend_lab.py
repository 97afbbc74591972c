"""What the backend test modules share: a Lab that cleans up what a test created."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

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
