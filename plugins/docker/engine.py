"""The Docker Engine API client: one aiodocker client per event loop, shared and closed by refcount.

The engine is reached through ``host.unix_socket_path(DOCKER_SOCKET)``: the
socket itself on the local machine, a forwarded socket for an SSH host.  Every
engine error leaves this module as a ``BackendError`` naming the host.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import aiodocker
import aiohttp

from labtui.backends.kit import BackendError, HostError

if TYPE_CHECKING:
    from labtui.backends.kit import Host

DOCKER_SOCKET = "/var/run/docker.sock"
#: Seconds to open a connection to the engine before giving up.
CONNECT_TIMEOUT_S = 10.0


class EngineError(BackendError):
    """The engine answered with an error; ``status`` is its HTTP status (900: unreachable)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Engine:
    """Opens the engine's socket on a host and hands out one shared client per event loop.

    ``async with engine.client() as docker`` nests: concurrent and nested users
    in one loop share a client, which is closed when the last of them leaves,
    so a backend used from several ``asyncio.run`` calls never leaks a session.
    """

    def __init__(self, host: Host, socket_path: str = DOCKER_SOCKET) -> None:
        self.host = host
        self.socket_path = socket_path
        self._client: aiodocker.Docker | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._users = 0
        self._api_version = "auto"

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[aiodocker.Docker]:
        """A client for the current event loop, opened on first use."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client, self._loop, self._users = await self._open(), loop, 0
        client = self._client
        self._users += 1
        try:
            yield client
        finally:
            self._users -= 1
            if self._users == 0 and self._client is client:
                self._client = None
                if client.api_version != "auto":
                    self._api_version = client.api_version
                await client.close()

    async def _open(self) -> aiodocker.Docker:
        try:
            path = await self.host.unix_socket_path(self.socket_path)
        except HostError as exc:
            raise BackendError(f"docker on host {self.host.name}: cannot reach {self.socket_path}: {exc}") from exc
        timeout = aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT_S, sock_connect=CONNECT_TIMEOUT_S)
        return aiodocker.Docker(url=f"unix://{path}", timeout=timeout, api_version=self._api_version)

    async def call(self, what: str, method: str, path: str, **kwargs: Any) -> Any:
        """One JSON API call; errors become EngineError saying what was being done, where."""
        async with self.client() as docker:
            try:
                return await docker._query_json(path, method, **kwargs)
            except aiodocker.DockerError as exc:
                raise self.error(what, exc) from exc

    def error(self, what: str, exc: aiodocker.DockerError) -> EngineError:
        """An EngineError for a failed aiodocker call."""
        message = str(exc.message).strip() or f"HTTP {exc.status}"
        return EngineError(f"docker on host {self.host.name}: {what}: {message}", exc.status)
