"""The shell and tools a docker probe image carries: the host's binaries and the libraries ldd names."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from labtui.backends.kit import ProgramUnavailable
from labtui.hosts.local import LocalHost
from plugins.docker import toolbox
from plugins.docker.images import build_context


def _ldd(path: str) -> set[str]:
    out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
    return set(toolbox.ldd_paths(out))


async def test_locate_finds_the_hosts_shell_tools_and_their_libraries() -> None:
    found = await toolbox.locate(LocalHost())
    sh = str(Path(shutil.which("sh") or "/bin/sh").resolve())
    assert found.files["bin/sh"] == sh  # Debian: /usr/bin/dash
    assert {f"bin/{t}" for t in toolbox.TOOLS} <= set(found.files)
    libraries = set().union(*(_ldd(found.files[f"bin/{t}"]) for t in toolbox.TOOLS))
    assert libraries, "the host's tools are dynamically linked here"
    assert {p.lstrip("/"): p for p in libraries}.items() <= found.files.items()
    again = await toolbox.locate(LocalHost())
    assert again.digest == found.digest  # the same files: the same digest, so no rebuild


async def test_a_tool_the_host_lacks_is_named() -> None:
    with pytest.raises(ProgramUnavailable, match="no no-such-tool-q7, other-q7 .*install dash"):
        await toolbox.locate(LocalHost(), ("sh", "no-such-tool-q7", "other-q7"))


def test_context_puts_files_at_their_image_paths_and_an_open_tmp() -> None:
    files = {"bin/proc": b"\x7fELF-proc", "bin/sh": b"dash", "lib/x86_64-linux-gnu/libc.so.6": b"libc"}
    with tarfile.open(fileobj=io.BytesIO(build_context(files, "proc"))) as tar:
        members = {m.name: m for m in tar.getmembers()}
        dockerfile = tar.extractfile("Dockerfile").read().decode()  # type: ignore[union-attr]
        contents = {n: tar.extractfile(f"rootfs/{n}").read() for n in files}  # type: ignore[union-attr]
    assert dockerfile.splitlines()[:3] == ["FROM scratch", "COPY rootfs/ /", 'CMD ["/bin/proc"]']
    assert contents == files and all(members[f"rootfs/{n}"].mode == 0o755 for n in files)
    assert members["rootfs/tmp"].isdir() and members["rootfs/tmp"].mode == 0o1777
