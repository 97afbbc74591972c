"""The shell and tools a probe image carries: the host's own binaries plus the libraries ``ldd`` names.

The probes are static and need nothing, but two of their modes run a shell:
``proc shell`` (lmbench lat_proc shell: ``/bin/sh -c PROGRAM``) and ``proc
multi`` (UnixBench shell1/shell8/shell16: scripts running ``sort``, ``od``,
``grep``, ``tee``, ``wc`` and ``rm``).  A FROM scratch image has none of
them, so each probe image carries the host's: the binary each name resolves
to on the host (Debian's ``/bin/sh`` is ``dash``), at ``/bin/<name>`` in the
image, and every shared library ``ldd`` lists for them (the dynamic loader
included) at the path the host keeps it, as the Unikraft root file systems
and the service images are packed.  So a shell figure in a container runs the
same shell binary as the process backend runs natively.  Nothing is
downloaded; a tool the host lacks is a ``ProgramUnavailable`` naming it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from labtui.backends.kit import BackendError, CommandResult, Host, HostError, ProgramUnavailable

#: What lat_proc shell and UnixBench's multi.sh/tst.sh run, in the image's /bin.
TOOLS = ("sh", "sort", "od", "grep", "tee", "wc", "rm")
#: ``libfoo.so.1 => /lib/.../libfoo.so.1 (0x...)`` or ``/lib64/ld-linux-x86-64.so.2 (0x...)``.
_LDD_PATH = re.compile(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)")
_LDD_MISSING = re.compile(r"^\s*(\S+)\s*=>\s*not found", re.MULTILINE)
# Each tool's real file on the host ("name<TAB>path"), or "missing<TAB>name".
_RESOLVE = r"""
for tool; do
    if found=$(command -v "$tool") && [ -x "$found" ]; then printf '%s\t%s\n' "$tool" "$(readlink -f "$found")"
    else printf 'missing\t%s\n' "$tool"; fi
done
"""


def ldd_paths(output: str) -> list[str]:
    """The absolute paths of the libraries and loader in ``ldd`` output; BackendError for a missing one."""
    missing = _LDD_MISSING.findall(output)
    if missing:
        raise BackendError(f"ldd: shared libraries not found: {', '.join(missing)}")
    return sorted({m for m in _LDD_PATH.findall(output)})


@dataclass(frozen=True, slots=True)
class Toolbox:
    """The host files for the image: image path -> host path, and a digest of their contents."""

    files: dict[str, str]
    digest: str


async def locate(host: Host, tools: tuple[str, ...] = TOOLS) -> Toolbox:
    """Find tools on host, the libraries they load, and the sha256 of every one of those files."""
    listed = (await _run(host, ["sh", "-c", _RESOLVE, "sh", *tools], "look for the shell and its tools")).stdout
    pairs = [line.split("\t", 1) for line in listed.splitlines() if "\t" in line]
    resolved = {tool: path for tool, path in pairs if tool != "missing"}
    if set(resolved) != set(tools):
        missing = ", ".join(t for t in tools if t not in resolved)
        raise ProgramUnavailable(f"host {host.name} has no {missing} to put in the probe images "
                                 "(proc shell and multi run /bin/sh and coreutils' sort, od, tee, wc, rm and grep): "
                                 "install dash, coreutils and grep")
    binaries = sorted(set(resolved.values()))
    # ldd exits 1 for a static binary ("not a dynamic executable"): nothing to add for it
    linked = await host.run(["ldd", *binaries], timeout=60.0)
    libraries = [p for p in ldd_paths(linked.stdout) if p not in binaries]
    files = {f"bin/{tool}": path for tool, path in sorted(resolved.items())}
    files.update({path.lstrip("/"): path for path in libraries})
    sums = (await _run(host, ["sha256sum", *binaries, *libraries], "checksum the shell and its tools")).stdout
    digest = hashlib.sha256("\n".join([repr(sorted(files.items())), sums]).encode()).hexdigest()[:16]
    return Toolbox(files, digest)


async def fetch(host: Host, toolbox: Toolbox, into: Path) -> dict[str, bytes]:
    """The bytes of the toolbox's files, by image path, copied from host through the directory into."""
    contents: dict[str, bytes] = {}
    for index, (inside, remote) in enumerate(sorted(toolbox.files.items())):
        local = into / f"tool-{index}"
        try:
            await host.get_file(remote, str(local))
        except HostError as exc:
            raise BackendError(f"docker on host {host.name}: copying {remote}: {exc}") from exc
        contents[inside] = local.read_bytes()
    return contents


async def _run(host: Host, argv: list[str], what: str) -> CommandResult:
    try:
        return (await host.run(argv, timeout=60.0)).check()
    except HostError as exc:
        raise BackendError(f"docker on host {host.name}: cannot {what}: {exc}") from exc
