"""labtui.programs.native: real compiles on the local host, cached under the runtime dir."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from labtui.hosts.base import CommandResult, HostError
from labtui.hosts.local import LocalHost
from labtui.programs.native import ProgramUnavailable, ensure_program, probe_source


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runtime"
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(path))
    return path


class NoCompilerHost(LocalHost):
    """The local machine with only a few tools on PATH: a host without cc."""

    def __init__(self, tools: Path) -> None:
        super().__init__("bare")
        self.tools = tools

    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60.0,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        return await super().run(argv, timeout=timeout, input=input, env={**(env or {}), "PATH": str(self.tools)})


async def test_builds_a_probe_that_runs(runtime: Path) -> None:
    host = LocalHost()
    path = await ensure_program(host, probe_source("hello"), "hello")
    assert Path(path).parent == runtime / "bin"
    assert Path(path).name.startswith("hello-")
    result = await host.run([path])
    assert result.ok and result.stdout == "hello from labtui\n"


async def test_second_call_reuses_the_cached_binary(runtime: Path) -> None:
    host = LocalHost()
    first = await ensure_program(host, probe_source("hello"), "hello")
    built_ns = os.stat(first).st_mtime_ns
    second = await ensure_program(host, probe_source("hello"), "hello")
    assert second == first
    assert os.stat(second).st_mtime_ns == built_ns


async def test_concurrent_callers_compile_once(runtime: Path) -> None:
    host = LocalHost()
    paths = await asyncio.gather(*(ensure_program(host, probe_source("sleeper"), "sleeper") for _ in range(6)))
    assert len(set(paths)) == 1
    assert [p.name for p in (runtime / "bin").iterdir()] == [Path(paths[0]).name]  # no partial builds left
    assert len(list((runtime / "src").iterdir())) == 1  # the source was shipped once


async def test_an_edited_source_gets_a_new_binary(runtime: Path, tmp_path: Path) -> None:
    host = LocalHost()
    source = tmp_path / "code.c"
    source.write_text("int main(void) { return 3; }\n")
    old = await ensure_program(host, source, "code")
    source.write_text("int main(void) { return 4; }\n")
    new = await ensure_program(host, source, "code")
    assert old != new
    assert (await host.run([old])).returncode == 3
    assert (await host.run([new])).returncode == 4


async def test_compiler_errors_are_reported(runtime: Path, tmp_path: Path) -> None:
    source = tmp_path / "broken.c"
    source.write_text("int main(void) { return nope; }\n")
    with pytest.raises(ProgramUnavailable, match=r"compiling 'broken' on host local failed: .*nope"):
        await ensure_program(LocalHost(), source, "broken")


def test_unknown_probe_names_the_known_ones() -> None:
    with pytest.raises(ProgramUnavailable, match="unknown probe 'nosuch'") as err:
        probe_source("nosuch")
    assert "hello" in str(err.value) and "sleeper" in str(err.value)
    with pytest.raises(ProgramUnavailable):
        probe_source("../probes/hello")


async def test_host_without_cc_gets_a_binary_built_here(runtime: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    for tool in ("test", "mkdir", "mv", "uname"):
        (tools / tool).symlink_to(shutil.which(tool) or f"/usr/bin/{tool}")
    host = NoCompilerHost(tools)
    with pytest.raises(HostError):
        await host.run(["cc", "--version"])
    path = await ensure_program(host, probe_source("hello"), "hello")
    result = await LocalHost().run([path])
    assert result.ok and result.stdout == "hello from labtui\n"
    # a dynamic build asked for still gets a (static) binary: the fallback
    proc = await ensure_program(host, probe_source("proc"), "proc", dynamic=True)
    assert not is_dynamic(proc) and (await LocalHost().run([proc, "fork", "0.05"])).ok


def is_dynamic(path: str) -> bool:
    """Whether an ELF program asks for a dynamic loader (has a PT_INTERP segment)."""
    return b"ld-linux" in Path(path).read_bytes()[:4096]


async def test_programs_are_static_unless_a_dynamic_build_is_asked_for(runtime: Path) -> None:
    # every backend runs the same static build (native against container compares the platform,
    # not the linker); dynamic=True is the calibration's build, linked as the originals are
    host = LocalHost()
    static = await ensure_program(host, probe_source("proc"), "proc")
    dynamic = await ensure_program(host, probe_source("proc"), "proc", dynamic=True)
    assert dynamic != static
    assert is_dynamic(dynamic) and not is_dynamic(static)
    assert not is_dynamic(await ensure_program(host, probe_source("hello"), "hello"))


async def test_first_builds_at_once_all_succeed(runtime: Path) -> None:
    """The console checks a backend while its sampler lists instances: two first builds of the agent at once,
    from two host objects, in one process.  Their copies of the source must not share a temporary name."""
    from labtui.backends.base import builtin_plugins_dir

    source = builtin_plugins_dir() / "process" / "agent.c"
    built = await asyncio.gather(*(ensure_program(LocalHost(), source, "labtui-agent") for _ in range(4)))
    assert len(set(built)) == 1 and os.access(built[0], os.X_OK)
    assert [p.name for p in (runtime / "src").iterdir()] == [Path(built[0]).name + ".c"]  # no temporary left
