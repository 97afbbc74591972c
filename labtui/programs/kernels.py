"""Build labtui's tiny multiboot test kernels on the host that boots them.

The sources live in ``suites/kernels/``: ``boot.S`` (the multiboot header and
entry), ``kernel.ld``, ``kernel.h`` and one ``<name>.c`` per kernel (``hello``,
``sleeper``, ``spinner``).  QEMU's ``-kernel`` loads multiboot v1 images only
as 32-bit ELF, so they are built with ``gcc -m32 -ffreestanding -nostdlib``.
A build is cached as ``{runtime_dir}/kernels/{name}-{digest}.elf``, the digest
covering every source and the flags, like ``labtui.programs.native`` does for probes.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
import weakref
from pathlib import Path

from labtui.core.paths import bundled_dir
from labtui.hosts.base import CommandTimeout, Host, HostError
from labtui.programs.native import ProgramUnavailable

FLAGS = (
    "-m32", "-ffreestanding", "-nostdlib", "-fno-pic", "-no-pie", "-static", "-O2",
    "-fno-stack-protector", "-Wl,--build-id=none", "-Wl,-z,noexecstack",
)
SHARED = ("boot.S", "kernel.ld", "kernel.h")
BUILD_TIMEOUT_S = 120.0
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")

_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[int, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def kernels_dir() -> Path:
    """The bundled ``suites/kernels`` directory."""
    return bundled_dir("suites") / "kernels"


def kernel_names() -> list[str]:
    """The test kernels there are sources for."""
    return sorted(p.stem for p in kernels_dir().glob("*.c"))


def kernel_sources(name: str) -> list[Path]:
    """The files kernel name is built from; ProgramUnavailable for an unknown name."""
    source = kernels_dir() / f"{name}.c"
    if not _NAME.fullmatch(name) or not source.is_file():
        known = ", ".join(kernel_names()) or "none"
        raise ProgramUnavailable(f"unknown test kernel {name!r}; known test kernels: {known}")
    return [kernels_dir() / shared for shared in SHARED] + [source]


def cached_name(name: str) -> str:
    """The file name a build of kernel name is cached under."""
    digest = hashlib.sha256()
    for path in kernel_sources(name):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    digest.update(" ".join(FLAGS).encode())
    return f"{name}-{digest.hexdigest()[:12]}.elf"


async def ensure_kernel(host: Host, name: str) -> str:
    """Return the path on host of test kernel name, building it there on first use."""
    sources = kernel_sources(name)
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    async with per_loop.setdefault((id(host), name), asyncio.Lock()):
        kernel = f"{host.runtime_dir}/kernels/{cached_name(name)}"
        if (await host.run(["test", "-f", kernel])).ok:
            return kernel
        await _build(host, name, sources, kernel)
        return kernel


async def _build(host: Host, name: str, sources: list[Path], kernel: str) -> None:
    """Copy the sources to a fresh directory on host, compile there, install atomically."""
    work = f"{host.runtime_dir}/kernels/.build-{name}-{secrets.token_hex(4)}"
    partial = f"{work}/{name}.elf"
    try:
        await _checked(host, ["mkdir", "-p", work])
        for source in sources:
            await host.put_file(str(source), f"{work}/{source.name}")
        argv = ["gcc", *FLAGS, f"-Wl,-T,{work}/kernel.ld", "-o", partial, f"{work}/boot.S", f"{work}/{name}.c"]
        try:
            result = await host.run(argv, timeout=BUILD_TIMEOUT_S)
        except CommandTimeout as exc:
            raise ProgramUnavailable(f"building test kernel {name!r} on host {host.name}: {exc}") from exc
        except HostError as exc:
            raise ProgramUnavailable(
                f"host {host.name} has no gcc to build test kernel {name!r}: install gcc (and gcc-multilib "
                f"where -m32 needs it)"
            ) from exc
        if not result.ok:
            raise ProgramUnavailable(
                f"building test kernel {name!r} on host {host.name} failed: {_summary(result.stderr or result.stdout)}"
                " (gcc -m32 needs gcc-multilib on some systems)"
            )
        await _checked(host, ["mv", "-f", partial, kernel])
    finally:
        await host.run(["rm", "-rf", work])


async def _checked(host: Host, argv: list[str]) -> None:
    try:
        (await host.run(argv)).check()
    except HostError as exc:
        raise ProgramUnavailable(f"host {host.name}: {exc}") from exc


def _summary(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line]
    return (errors or lines or ["no output"])[0 if errors else -1]
