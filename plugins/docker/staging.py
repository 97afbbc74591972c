"""Host programs copied into containers: benchmarks exec'd inside, labtui-runat holding a start.

A container sees only its image, never the host's runtime dir, so a program
built there (``labtui-runat``, a probe) is fetched from the docker host to the
controller, checked to be static (labtui's images are FROM scratch: no dynamic
loader, no C library), packed into an in-memory tar and extracted into the
container under ``/labtui/bin`` with the Engine API's archive endpoint.
Each (container, host path) is copied once; each host file is fetched once per
stager, since labtui's programs are named by a digest of their source and so
never change under the same path.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import posixpath
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import aiodocker

from labtui.backends.kit import BackendError, ProgramUnavailable

from .engine import Engine
from .images import fetch_static

if TYPE_CHECKING:
    from labtui.backends.kit import Host

#: Where staged programs land inside a container.
STAGE_DIR = "/labtui/bin"


class Stager:
    """Copies host programs into containers on one engine, remembering what is where."""

    def __init__(self, host: Host, engine: Engine) -> None:
        self.host = host
        self.engine = engine
        self._data: dict[str, bytes] = {}
        self._fetching: dict[str, asyncio.Lock] = {}
        #: (container id, host path) -> the path inside the container.
        self._placed: dict[tuple[str, str], str] = {}

    async def stage(self, container_id: str, paths: Sequence[str]) -> list[str]:
        """Copy each host path into the container (mode 0755) unless it is there; return the paths inside."""
        missing = [p for p in dict.fromkeys(paths) if (container_id, p) not in self._placed]
        if missing:
            data = await asyncio.gather(*(self._read(p, container_id) for p in missing))
            inside = self._names(container_id, missing)
            await self._put(container_id, pack(dict(zip(inside, data))))
            self._placed.update({(container_id, p): name for p, name in zip(missing, inside)})
        return [self._placed[(container_id, p)] for p in paths]

    def forget(self, container_id: str) -> None:
        """Drop what was staged into a container (it is gone)."""
        for key in [k for k in self._placed if k[0] == container_id]:
            del self._placed[key]

    def _names(self, container_id: str, paths: Sequence[str]) -> list[str]:
        """``/labtui/bin/<basename>``; a basename another host path took in this container gets a digest."""
        taken = {inside: path for (cid, path), inside in self._placed.items() if cid == container_id}
        names = []
        for path in paths:
            name = stage_path(path)
            if taken.get(name, path) != path:
                name += "-" + hashlib.sha256(path.encode()).hexdigest()[:8]
            taken[name] = path
            names.append(name)
        return names

    async def _read(self, path: str, container_id: str) -> bytes:
        """The bytes of a static program on the host (fetched once, however many ask at once); BackendError
        naming it otherwise."""
        async with self._fetching.setdefault(path, asyncio.Lock()):
            return await self._fetch(path, container_id)

    async def _fetch(self, path: str, container_id: str) -> bytes:
        if path not in self._data:
            with tempfile.TemporaryDirectory(prefix="labtui-stage-") as tmp:
                try:
                    self._data[path] = await fetch_static(self.host, path, Path(tmp) / "program")
                except ProgramUnavailable as exc:
                    raise BackendError(f"docker: cannot stage into container {container_id[:12]}: {exc}") from exc
        return self._data[path]

    async def _put(self, container_id: str, archive: bytes) -> None:
        """Extract a tar at the container's root through the archive endpoint."""
        async with self.engine.client() as docker:
            try:
                await docker.containers.container(container_id).put_archive("/", archive)
            except aiodocker.DockerError as exc:
                raise self.engine.error(f"copying programs into container {container_id[:12]}", exc) from exc


def stage_path(path: str) -> str:
    """Where a host program lands in a container it is the first of its name in: ``/labtui/bin/<basename>``."""
    return posixpath.join(STAGE_DIR, posixpath.basename(path))


def pack(files: dict[str, bytes]) -> bytes:
    """A tar of absolute paths -> contents (mode 0755, root-owned), with their directories, rooted at /."""
    directories = sorted({d for name in files for d in _parents(name)})
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in directories:
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(name.lstrip("/"))
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _parents(name: str) -> list[str]:
    """The directories above an absolute path, relative to /: ``/a/b/c`` -> ``a``, ``a/b``."""
    parts = name.strip("/").split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]
