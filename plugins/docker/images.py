"""Images without a registry: ``labtui/<probe>`` built FROM scratch from static probe binaries.

Every probe image carries all bundled probes in ``/bin`` (so a probe can be
exec'd inside any of them) and runs its own probe by default.  The binaries
are compiled on the host by ``labtui.programs.native.ensure_program``, copied to the
controller, checked to be static, packed with a Dockerfile into a tar context
in memory and sent to the engine's build endpoint.  Beside them each image
carries the host's shell and the tools its scripts run (``toolbox``: ``/bin/sh``,
``sort``, ``od``, ``grep``, ``tee``, ``wc``, ``rm`` and their libraries) and an
empty ``/tmp``, for the probe modes that run a shell.  Images carry
``labtui.managed=1`` and ``labtui.source=<digest of the probe sources and the
host's tools>``; an image whose digest is stale is rebuilt.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import json
import struct
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import aiodocker

from labtui.backends.kit import (
    BackendError,
    HostError,
    ProgramUnavailable,
    bundled_dir,
    cached_name,
    ensure_program,
    probe_source,
)

from . import toolbox
from .engine import Engine, EngineError

if TYPE_CHECKING:
    from labtui.backends.kit import Host

IMAGE_PREFIX = "labtui/"
MANAGED_LABEL = "labtui.managed"
SOURCE_LABEL = "labtui.source"
BUILD_TIMEOUT_S = 300.0
_PT_INTERP = 3


@dataclass(frozen=True, slots=True)
class BuiltImage:
    """An image labtui ensured: its name, engine id, size and whether this call built it.

    ``skipped`` gives the reason when the image could not be built here (its
    id is then empty).
    """

    name: str
    image_id: str
    size_bytes: int
    built: bool
    skipped: str = ""


def bundled_probes() -> list[str]:
    """Names of the bundled probes (``suites/probes/*.c``)."""
    return sorted(p.stem for p in (bundled_dir("suites") / "probes").glob("*.c"))


def probe_image(probe: str) -> str:
    """The image name of a probe: ``labtui/<probe>``."""
    return f"{IMAGE_PREFIX}{probe}"


def managed_probe(image: str) -> str | None:
    """The probe a ``labtui/<probe>[:latest]`` image name stands for, else None."""
    name = image.removesuffix(":latest")
    if name.startswith(IMAGE_PREFIX) and name[len(IMAGE_PREFIX) :] in bundled_probes():
        return name[len(IMAGE_PREFIX) :]
    return None


def source_digest() -> str:
    """Digest of every probe source and the compiler flags: changes when any probe changes."""
    names = "\n".join(cached_name(probe_source(p), p) for p in bundled_probes())
    return hashlib.sha256(names.encode()).hexdigest()[:16]


class ImageBuilder:
    """Builds and caches the probe images on one engine; concurrent callers build once."""

    def __init__(self, host: Host, engine: Engine) -> None:
        self.host = host
        self.engine = engine
        self._ready: dict[str, str] = {}
        self._lock = asyncio.Lock()

    async def ensure(self, probe: str, *, force: bool = False) -> BuiltImage:
        """Make sure ``labtui/<probe>`` exists and is current; build it when it is not."""
        name = probe_image(probe)
        async with self._lock:
            tools = await toolbox.locate(self.host)
            digest = hashlib.sha256(f"{source_digest()} {tools.digest}".encode()).hexdigest()[:16]
            current = None if force else await current_image(self.engine, name, digest)
            if current is not None:
                self._ready[name] = current["Id"]
                return BuiltImage(name, current["Id"], int(current.get("Size", 0)), built=False)
            await self._build(probe, digest, tools)
            built = await self.engine.call(f"inspecting image {name}", "GET", f"images/{name}/json")
            self._ready[name] = built["Id"]
            return BuiltImage(name, built["Id"], int(built.get("Size", 0)), built=True)

    async def ensure_cached(self, probe: str) -> str:
        """The image name of probe, ensured once per builder (no engine call after the first)."""
        name = probe_image(probe)
        if name not in self._ready:
            await self.ensure(probe)
        return name

    async def _build(self, default: str, digest: str, tools: toolbox.Toolbox) -> None:
        probes = bundled_probes()
        with tempfile.TemporaryDirectory(prefix="labtui-image-") as tmp:
            binaries = await asyncio.gather(*(self._fetch_static(p, Path(tmp)) for p in probes))
            files = {f"bin/{p}": data for p, data in zip(probes, binaries)}
            files.update(await toolbox.fetch(self.host, tools, Path(tmp)))
            context = build_context(files, default)
        await post_build(self.engine, probe_image(default), context, digest)

    async def _fetch_static(self, probe: str, into: Path) -> bytes:
        """Compile probe on the host, statically linked (FROM scratch has no C library), and copy it here."""
        remote = await ensure_program(self.host, probe_source(probe), probe)
        return await fetch_static(self.host, remote, into / probe)


async def fetch_static(host: Host, remote: str, local: Path) -> bytes:
    """The bytes of a program on host, copied to local; ProgramUnavailable when it is not a static binary."""
    try:
        await host.get_file(remote, str(local))
    except HostError as exc:
        raise BackendError(f"docker on host {host.name}: copying {remote}: {exc}") from exc
    data = local.read_bytes()
    if not is_static_elf(data):
        raise ProgramUnavailable(
            f"{remote} is not a static binary (on host {host.name}), so it cannot run in a FROM scratch image "
            "(no dynamic loader, no C library): install the static C library there (libc6-dev on Debian)"
        )
    return data


async def post_build(engine: Engine, name: str, context: bytes, digest: str) -> None:
    """Send a tar build context to the engine's build endpoint, tagging the image name with labtui's labels."""
    params = {
        "t": name,
        "rm": "1",
        "forcerm": "1",
        "labels": json.dumps({MANAGED_LABEL: "1", SOURCE_LABEL: digest}),
    }
    where = f"docker on host {engine.host.name}"
    async with engine.client() as docker:
        try:
            async with asyncio.timeout(BUILD_TIMEOUT_S):
                async with docker._query(
                    "build", "POST", params=params, data=io.BytesIO(context),
                    headers={"Content-Type": "application/x-tar"}, timeout=None,
                ) as response:
                    output = (await response.read()).decode(errors="replace")
        except TimeoutError:
            raise BackendError(f"{where}: building {name} took over {BUILD_TIMEOUT_S:g}s") from None
        except aiodocker.DockerError as exc:
            raise engine.error(f"building {name}", exc) from exc
    errors = [m["error"] for m in _messages(output) if "error" in m]
    if errors:
        raise BackendError(f"{where}: building {name}: {errors[0].strip()}")


async def current_image(engine: Engine, name: str, digest: str) -> dict | None:
    """The engine's inspect answer for image name when its source label is digest, else None."""
    try:
        found = await engine.call(f"inspecting image {name}", "GET", f"images/{name}/json")
    except EngineError as exc:
        if exc.status == 404:
            return None
        raise
    labels = (found.get("Config") or {}).get("Labels") or {}
    return found if labels.get(SOURCE_LABEL) == digest else None


def build_context(files: dict[str, bytes], default: str) -> bytes:
    """A tar build context: ``rootfs/`` (files by their path in the image, mode 0755; an empty /tmp, mode
    1777) and a Dockerfile copying it onto scratch and running ``/bin/<default>``."""
    dockerfile = "\n".join([
        "FROM scratch",
        "COPY rootfs/ /",
        f'CMD ["/bin/{default}"]',
        "",
    ]).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("Dockerfile")
        info.size, info.mode = len(dockerfile), 0o644
        tar.addfile(info, io.BytesIO(dockerfile))
        tmp = tarfile.TarInfo("rootfs/tmp")
        tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(tmp)
        for name, data in sorted(files.items()):
            info = tarfile.TarInfo(f"rootfs/{name}")
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def is_static_elf(data: bytes) -> bool:
    """True for a 64-bit little-endian ELF executable without a PT_INTERP (dynamic loader) header."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return False
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for index in range(phnum):
        (p_type,) = struct.unpack_from("<I", data, phoff + index * phentsize)
        if p_type == _PT_INTERP:
            return False
    return True


def _messages(output: str) -> list[dict]:
    """The JSON messages of a build response (one object per line)."""
    found = []
    for line in output.splitlines():
        line = line.strip()
        if line:
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                found.append({"stream": line})
    return found
