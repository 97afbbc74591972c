"""Compile small C programs (probes, the process agent) on the host that runs them.

A program is built once per host and source: the binary is cached under
``{runtime_dir}/bin/{name}-{digest}``, where the digest covers the source and
the compiler flags, so an edited source gets a new binary and an unchanged one
is never rebuilt.  Programs are linked statically where the host's C library
allows, on every backend alike: the binary a process runs is the one a FROM
scratch image carries, so a figure measured natively and one measured in a
container differ by the platform, not by the linker (docs/probes.md,
"Linking").  ``dynamic=True`` asks for a dynamically linked build instead (the
calibration against the dynamically linked originals).  Hosts without a C
compiler get a static binary built on the controller when both share a machine
architecture.  A source that needs libraries names them in a comment line
``/* labtui-link: -lsqlite3 -lm */``.
"""

from __future__ import annotations

import asyncio
import hashlib
import platform
import re
import secrets
import shutil
import tempfile
import weakref
from pathlib import Path

from labtui.core.errors import BackendError
from labtui.core.paths import bundled_dir
from labtui.core.words import name_list
from labtui.hosts.base import CommandTimeout, Host, HostError

FLAGS = ("-O2", "-std=gnu11")
COMPILE_TIMEOUT_S = 120.0
_PROBE_NAME = re.compile(r"[A-Za-z0-9_-]+")
_LINK = re.compile(rb"^/\* labtui-link:((?: -l[A-Za-z0-9_.+-]+)+) \*/$", re.M)

# One lock per (event loop, host, program): concurrent callers compile once.
_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[int, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


class ProgramUnavailable(BackendError):
    """A program cannot be built or found for a host; the message says why and what to install."""


def probe_source(name: str) -> Path:
    """The C source of the bundled probe called name (``suites/probes/<name>.c``)."""
    probes = bundled_dir("suites") / "probes"
    source = probes / f"{name}.c"
    if not _PROBE_NAME.fullmatch(name) or not source.is_file():
        known = name_list(sorted(p.stem for p in probes.glob("*.c")), "suites/probes/") or "none"
        raise ProgramUnavailable(f"unknown probe {name!r}; known probes: {known}")
    return source


def link_flags(source: Path) -> list[str]:
    """The libraries a source asks to be linked with (its ``labtui-link`` comment)."""
    found = _LINK.search(source.read_bytes())
    return found[1].decode().split() if found else []


def cached_name(source: Path, name: str, *, dynamic: bool = False) -> str:
    """The file name a build of source is cached under: name plus a digest of source, flags and linking."""
    flags = [*FLAGS, "dynamic" if dynamic else "static"]
    digest = hashlib.sha256(source.read_bytes() + " ".join(flags).encode()).hexdigest()[:12]
    return f"{name}-{digest}"


async def ensure_program(host: Host, source: Path, name: str, *, dynamic: bool = False) -> str:
    """Return the path on host of the compiled source, building it there on first use.

    Static where the host's C library allows (else dynamic); dynamically linked when dynamic is True.
    """
    async with _lock_for(host, name):
        binary = f"{host.runtime_dir}/bin/{cached_name(source, name, dynamic=dynamic)}"
        if (await host.run(["test", "-x", binary])).ok:
            return binary
        await _build(host, source, name, binary, dynamic)
        return binary


def _lock_for(host: Host, name: str) -> asyncio.Lock:
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    return per_loop.setdefault((id(host), name), asyncio.Lock())


async def _build(host: Host, source: Path, name: str, binary: str, dynamic: bool) -> None:
    """Compile on the host, or on the controller when the host has no cc; install atomically."""
    runtime = host.runtime_dir
    stem = Path(binary).name
    remote_source = f"{runtime}/src/{stem}.c"
    partial = f"{runtime}/bin/.{stem}.{secrets.token_hex(4)}.partial"
    await _checked(host, ["mkdir", "-p", f"{runtime}/bin", f"{runtime}/src"])
    await host.put_file(str(source), remote_source)
    libs = link_flags(source)
    if not await _compile_on_host(host, name, remote_source, partial, libs, dynamic):
        await _compile_on_controller(host, source, name, partial, libs)
    await _checked(host, ["mv", "-f", partial, binary])


async def _compile_on_host(
    host: Host, name: str, source: str, output: str, libs: list[str], dynamic: bool
) -> bool:
    """Build with the host's cc (static first unless dynamic); False when the host has no cc at all."""
    failure = ""
    for flags in ([list(FLAGS)] if dynamic else [[*FLAGS, "-static"], list(FLAGS)]):
        try:
            result = await host.run(["cc", *flags, "-o", output, source, *libs], timeout=COMPILE_TIMEOUT_S)
        except CommandTimeout as exc:
            raise ProgramUnavailable(f"compiling {name!r} on host {host.name}: {exc}") from exc
        except HostError:
            return False  # cc is not installed
        if result.returncode == 127:
            return False  # the remote shell could not find cc
        if result.ok:
            return True
        failure = _summary(result.stderr or result.stdout)
    raise ProgramUnavailable(f"compiling {name!r} on host {host.name} failed: {failure}")


async def _compile_on_controller(host: Host, source: Path, name: str, output: str, libs: list[str]) -> None:
    """Build a static binary here and copy it over, if this machine matches the host's."""
    missing = f"host {host.name} has no C compiler (cc) to build {name!r}: install gcc or build-essential"
    machine = (await _checked(host, ["uname", "-m"])).strip()
    cc = shutil.which("cc")
    if cc is None:
        raise ProgramUnavailable(missing)
    if machine != platform.machine():
        raise ProgramUnavailable(f"{missing} (the controller is {platform.machine()}, the host {machine})")
    with tempfile.TemporaryDirectory(prefix="labtui-cc-") as tmp:
        built = Path(tmp) / name
        argv = [cc, *FLAGS, "-static", "-o", str(built), str(source), *libs]
        proc = await asyncio.create_subprocess_exec(
            *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await proc.communicate()
        if proc.returncode != 0:
            raise ProgramUnavailable(f"{missing}; building it on the controller failed: {_summary(out.decode())}")
        await host.put_file(str(built), output, mode=0o755)


async def _checked(host: Host, argv: list[str]) -> str:
    try:
        return (await host.run(argv)).check().stdout
    except HostError as exc:
        raise ProgramUnavailable(f"host {host.name}: {exc}") from exc


def _summary(text: str) -> str:
    """The first compiler error line, else the last line of output."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line]
    return (errors or lines or ["no output"])[0 if errors else -1]
