"""Build Unikraft unikernels from Unikraft's own source on the host that boots them.

A recipe names an app repository, the defconfig it ships and a few config
lines added to it.  The build copies the sources (sources.py) to a fresh
directory on the host, runs Unikraft's own ``make defconfig`` and ``make``
there (Debian's gcc, make, flex, bison; unzip for lwIP) and installs the
kernel as ``{cache}/{name}-{digest}``, the digest covering every source, the
recipe and its config lines, so a build happens once per host and source.
The cache is ``$LABTUI_UNIKRAFT_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/labtui/unikraft``
on the host: unlike the runtime directory it outlives a run's (and a test
module's) private directory.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import secrets
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path

from labtui.backends.kit import CommandTimeout, Host, HostError, ProgramUnavailable

from . import sources

#: A directory on the host for built unikernels, instead of the user's cache directory.
CACHE_ENV = "LABTUI_UNIKRAFT_CACHE"
BUILD_TIMEOUT_S = 1200.0
TOOLS = ("gcc", "make", "flex", "bison", "tar", "flock")


@dataclass(frozen=True, slots=True)
class Recipe:
    """How to build one unikernel: app repository, its defconfig, added config lines, libraries."""

    app: str
    defconfig: str
    config: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()
    #: Console regex (POSIX ERE) of the app's own line: the instance is ready.
    ready: str = ""
    #: QEMU -m the image boots with.
    memory: str = "16M"

    def repos(self) -> tuple[str, ...]:
        """Every source repository the build needs (lwIP's zip with lib-lwip)."""
        extra = ("fork-lwip",) if "lib-lwip" in self.libs else ()
        return ("unikraft", self.app, *self.libs, *extra)


RECIPES = {
    # Unikraft's hello world: prints its banner, "Hello world!" and its arguments, then powers off.
    "helloworld": Recipe("app-helloworld", "defconfigs/qemu-x86_64", ready="^Hello world!"),
    # The same app told to stay alive: an animation every 250 ms, nanosleep between frames.
    "sleeper": Recipe("app-helloworld", "defconfigs/qemu-x86_64", ("CONFIG_APPHELLOWORLD_SPINNER=y",),
                      ready="^Hello world!"),
    # The ELF loader: runs a Linux binary from the initrd, extracted to / (the two AUTOMOUNT_CI lines name the
    # initrd root mount in 0.16.3), networking over virtio-net with lwIP, the address from netdev.ip.
    "elfloader": Recipe("app-elfloader", "defconfigs/qemu-x86_64-initrd",
                        ("CONFIG_LIBVFSCORE_AUTOMOUNT_CI=y", "CONFIG_LIBVFSCORE_AUTOMOUNT_CI_INITRD=y",
                         "CONFIG_LIBUKNETDEV=y", "CONFIG_LIBVIRTIO_NET=y", "CONFIG_LIBVIRTIO_PCI=y",
                         "CONFIG_LIBUKNETDEV_EINFO_LIBPARAM=y"),
                        libs=("lib-libelf", "lib-lwip"), memory="256M"),
}

# Run under flock on the kernel's lock file: a build another process finished meanwhile is not redone.
_SCRIPT = r"""
set -eu
cd "$1"; app=$2; defconfig=$3; libs=$4; kernel=$5
[ -f "$kernel" ] && exit 0
for archive in src/*.tar.gz; do
    repo=$(basename "$archive" .tar.gz); mkdir "$repo"; tar xzf "$archive" -C "$repo" --strip-components=1
done
if [ -f src/fork-lwip.zip ]; then mkdir -p build/liblwip; cp src/fork-lwip.zip build/liblwip/UNIKRAFT-2_1_x.zip; fi
cat "$app/$defconfig" src/extra.config > defconfig
paths=""; for lib in $libs; do paths="$paths${paths:+:}$PWD/$lib"; done
make -C unikraft A="$PWD/$app" L="$paths" O="$PWD/build" UK_DEFCONFIG="$PWD/defconfig" defconfig
make -C unikraft A="$PWD/$app" L="$paths" O="$PWD/build" -j"$(nproc)"
set -- build/*_qemu-x86_64
[ -f "$1" ] || { echo "error: make left no build/*_qemu-x86_64 kernel" >&2; exit 1; }
cp build/config "$kernel.config"; mv -f "$1" "$kernel"
"""

_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[int, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def recipe(name: str) -> Recipe:
    """The recipe called name; ProgramUnavailable naming the known ones."""
    if name not in RECIPES:
        raise ProgramUnavailable(f"unknown Unikraft app {name!r}; labtui builds: {', '.join(RECIPES)}")
    return RECIPES[name]


def digest(name: str) -> str:
    """12 hex digits over the recipe and every source it is built from."""
    wanted = recipe(name)
    hashed = hashlib.sha256(repr(wanted).encode())
    for repo in wanted.repos():
        hashed.update(f"\0{repo}\0{sources.find(repo).digest()}".encode())
    return hashed.hexdigest()[:12]


async def cache_dir(host: Host) -> str:
    """$LABTUI_UNIKRAFT_CACHE, else the user's cache directory on host plus /labtui/unikraft."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return configured
    result = await _run(host, ["sh", "-c", 'printf %s "${XDG_CACHE_HOME:-${HOME:?}/.cache}"'], "find its cache dir")
    return f"{result}/labtui/unikraft"


async def built_image(host: Host, name: str) -> str | None:
    """The path on host of unikernel name when it is built already; never builds (None when it is not)."""
    kernel = f"{await cache_dir(host)}/{name}-{digest(name)}"
    return kernel if (await host.run(["test", "-f", kernel])).ok else None


async def ensure_image(host: Host, name: str) -> str:
    """The path on host of unikernel name built from Unikraft's source, building it on first use."""
    wanted = recipe(name)
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    async with per_loop.setdefault((id(host), name), asyncio.Lock()):
        kernel = f"{await cache_dir(host)}/{name}-{digest(name)}"
        if (await host.run(["test", "-f", kernel])).ok:
            return kernel
        await _build(host, name, wanted, kernel)
        return kernel


async def _build(host: Host, name: str, wanted: Recipe, kernel: str) -> None:
    """Copy the sources to a fresh directory on host, build there, install the kernel atomically."""
    found = await host.run(["sh", "-c", 'for t; do command -v "$t" >/dev/null || echo "$t"; done', "sh", *TOOLS,
                            *(["unzip"] if "lib-lwip" in wanted.libs else [])])
    missing = found.stdout.split()
    if missing:
        raise ProgramUnavailable(f"host {host.name} lacks {', '.join(missing)} to build Unikraft's {name!r}: "
                                 f"install them (Debian: apt-get install {' '.join(missing)})")
    work = f"{kernel.rsplit('/', 1)[0]}/.build-{name}-{secrets.token_hex(4)}"
    try:
        await _run(host, ["mkdir", "-p", f"{work}/src"], "make a build directory")
        with tempfile.TemporaryDirectory(prefix="labtui-unikraft-") as local:
            for repo in wanted.repos():
                packed = sources.find(repo).pack(Path(local))
                suffix = ".zip" if packed.name.endswith(".zip") else ".tar.gz"
                await host.put_file(str(packed), f"{work}/src/{repo}{suffix}")
        extra = "".join(f"{line}\n" for line in wanted.config)
        await _run(host, ["tee", f"{work}/src/extra.config"], "write the config lines", input=extra.encode())
        argv = ["flock", f"{kernel}.lock", "sh", "-c", _SCRIPT, "sh", work, wanted.app, wanted.defconfig,
                " ".join(wanted.libs), kernel]
        try:
            result = await host.run(argv, timeout=BUILD_TIMEOUT_S)
        except CommandTimeout as exc:
            raise ProgramUnavailable(f"building Unikraft's {name!r} on host {host.name}: {exc}") from exc
        if not result.ok:
            raise ProgramUnavailable(f"building Unikraft's {name!r} on host {host.name} failed: "
                                     f"{_summary(result.stderr + result.stdout)}")
    finally:
        await host.run(["rm", "-rf", work])


async def _run(host: Host, argv: list[str], what: str, input: bytes | None = None) -> str:
    try:
        return (await host.run(argv, input=input)).check().stdout
    except HostError as exc:
        raise ProgramUnavailable(f"host {host.name}: cannot {what}: {exc}") from exc


def _summary(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    return (errors or lines or ["no output"])[0 if errors else -1]
