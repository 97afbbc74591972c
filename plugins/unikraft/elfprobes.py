"""labtui's probes (``suites/probes/<name>.c``) as Unikraft applications, run by Unikraft's ELF loader.

A probe is compiled on the host by its gcc as a static PIE (what app-elfloader
loads without a dynamic loader), linked with probe_shim.c, which prints a
ready line and powers the machine off with the probe's exit status when it
ends.  The binary goes into a newc initrd as ``/<name>`` beside the empty
directories a probe writes to (``/tmp``, ``/dev/shm``, ``/var/tmp``: the RAM
file system the initrd is extracted to).  The initrd is cached in the build
cache as ``{cache}/probe-<name>-<digest>.cpio``, the digest covering the
probe's source, the shim and the flags.  Probes that need a system call
Unikraft lacks are refused with the reason (``UNSUPPORTED``).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
import tempfile
import weakref
from pathlib import Path

from labtui.backends.kit import (
    BackendError,
    CommandTimeout,
    Host,
    HostError,
    ProgramUnavailable,
    bundled_dir,
    probe_source,
)

from .build import cache_dir
from .rootfs import newc

SHIM = Path(__file__).resolve().parent / "probe_shim.c"
FLAGS = ("-O2", "-std=gnu11", "-static-pie", "-fPIE", "-Dmain=labtui_probe_main")
#: Directories a probe may be told to write to, empty in the initrd (the study's tmpfs is /dev/shm).
DIRS = ("dev", "dev/shm", "tmp", "var", "var/tmp")
#: The shim's line on the console once the probe runs.
READY = "^labtui-probe [^ ]+: started"
#: QEMU -m for a probe: the ELF loader's page tables plus what the probe allocates (attack-mem: 3 x 64 MB).
MEMORY = "256M"
COMPILE_TIMEOUT_S = 180.0
#: Probes (with a first argument, or None for any) Unikraft 0.16.3 cannot run as they mean, and why.
UNSUPPORTED = {
    ("attack-syscall", "fork"): "Unikraft has one address space: its clone() makes threads only, so fork() fails "
                                "with ENOSYS and the attacker would measure failing calls, not forks",
    ("attack-disk", None): "an ELF loader unikernel has no disk, only the RAM file system of its initrd, so the "
                           "attacker would write memory, not a disk",
}
_LINK = re.compile(rb"^/\* labtui-link:((?: -l[A-Za-z0-9_.+-]+)+) \*/$", re.M)

def check_supported(name: str, args: tuple[str, ...]) -> None:
    """BackendError in one line when probe name with args cannot run on Unikraft."""
    why = UNSUPPORTED.get((name, None)) or UNSUPPORTED.get((name, args[0] if args else ""))
    if why:
        raise BackendError(f"unikraft backend cannot run probe {' '.join([name, *args])}: {why}")


def probe_file(name: str) -> Path:
    """The C source of probe name; ProgramUnavailable naming the test kernels and probes there are."""
    try:
        return probe_source(name)
    except ProgramUnavailable:
        kernels = sorted(p.stem for p in (bundled_dir("suites") / "kernels").glob("*.c"))
        probes = sorted(p.stem for p in (bundled_dir("suites") / "probes").glob("*.c"))
        raise ProgramUnavailable(f"unknown program {name!r}: neither a test kernel ({', '.join(kernels)}) "
                                 f"nor a probe ({', '.join(probes)})") from None


def is_test_kernel(name: str) -> bool:
    """True when name is one of labtui's multiboot test kernels (suites/kernels), which win over a probe."""
    return (bundled_dir("suites") / "kernels" / f"{name}.c").is_file()


_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[int, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def digest(name: str) -> str:
    """12 hex digits over the probe's source, the shim and the flags."""
    hashed = hashlib.sha256(probe_source(name).read_bytes() + b"\0" + SHIM.read_bytes() + " ".join(FLAGS).encode())
    return hashed.hexdigest()[:12]


async def ensure_probe_rootfs(host: Host, name: str) -> str:
    """The path on host of probe name's initrd, compiled and packed on first use."""
    source = probe_file(name)
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    async with per_loop.setdefault((id(host), name), asyncio.Lock()):
        cpio = f"{await cache_dir(host)}/probe-{name}-{digest(name)}.cpio"
        if not (await host.run(["test", "-f", cpio])).ok:
            await _build(host, name, source, cpio)
        return cpio


async def _build(host: Host, name: str, source: Path, cpio: str) -> None:
    """Compile on host in a scratch directory, pack the initrd here, install it on host atomically."""
    found = _LINK.search(source.read_bytes())
    libs = found[1].decode().split() if found else []
    work = f"{cpio.rsplit('/', 1)[0]}/.probe-{name}-{secrets.token_hex(4)}"
    try:
        await _run(host, ["mkdir", "-p", work], "make a build directory")
        await host.put_file(str(source), f"{work}/probe.c")
        await host.put_file(str(SHIM), f"{work}/shim.c")
        argv = ["gcc", *FLAGS, "-o", f"{work}/{name}", f"{work}/probe.c", f"{work}/shim.c", *libs]
        try:
            result = await host.run(argv, timeout=COMPILE_TIMEOUT_S)
        except CommandTimeout as exc:
            raise ProgramUnavailable(f"compiling probe {name!r} for Unikraft on host {host.name}: {exc}") from exc
        except HostError as exc:
            raise ProgramUnavailable(f"host {host.name} has no gcc to compile probe {name!r} for Unikraft: "
                                     f"install gcc ({exc})") from exc
        if not result.ok:
            errors = [line.strip() for line in result.stderr.splitlines() if "error" in line]
            raise ProgramUnavailable(f"compiling probe {name!r} as a static PIE for Unikraft on host {host.name} "
                                     f"failed: {(errors or [result.stderr.strip() or 'no output'])[0]}")
        with tempfile.TemporaryDirectory(prefix="labtui-ukprobe-") as local:
            binary, archive = Path(local) / name, Path(local) / "rootfs.cpio"
            await host.get_file(f"{work}/{name}", str(binary))
            archive.write_bytes(newc({name: binary.read_bytes()}, DIRS))
            await host.put_file(str(archive), f"{work}/rootfs.cpio")
        await _run(host, ["mv", "-f", f"{work}/rootfs.cpio", cpio], "install the initrd")
    finally:
        await host.run(["rm", "-rf", work])


async def _run(host: Host, argv: list[str], what: str) -> None:
    try:
        (await host.run(argv, timeout=120.0)).check()
    except HostError as exc:
        raise ProgramUnavailable(f"host {host.name}: cannot {what}: {exc}") from exc
