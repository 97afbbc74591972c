"""LocalHost: the machine labtui runs on."""

from __future__ import annotations

import asyncio
import os
import platform
import secrets
import shutil
import signal
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from labtui.core.events import ResourceSample
from labtui.core.paths import local_runtime_dir
from labtui.hosts import linux
from labtui.hosts.base import CommandResult, CommandTimeout, Facts, Host, HostError

if TYPE_CHECKING:
    from labtui.hosts.config import HostConfig


class LocalHost(Host):
    """Runs commands with asyncio subprocesses and samples /proc directly."""

    def __init__(self, name: str = "local") -> None:
        self.name = name
        self._cpu_before: linux.CpuTimes | None = None

    def ssh_login(self, config: HostConfig) -> Host:
        """An SSH host for a machine reached from here: it connects directly."""
        from labtui.hosts.ssh import SSHHost  # asyncssh only for a console or run that logs in somewhere

        return SSHHost(config)

    def terminal_argv(self, argv: Sequence[str]) -> list[str]:
        """argv itself: it runs here, on the controller's terminal."""
        return list(argv)

    @property
    def runtime_dir(self) -> str:
        return str(local_runtime_dir())

    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60.0,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **env} if env else None,
                start_new_session=True,
            )
        except FileNotFoundError as exc:
            raise HostError(f"{argv[0]}: command not found on host {self.name}") from exc
        try:
            out, err = await asyncio.wait_for(proc.communicate(input), timeout)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            _kill_group(proc.pid)
            await proc.wait()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise CommandTimeout(f"{argv[0]} timed out after {timeout:g} s on host {self.name}") from None
        return CommandResult(
            argv=tuple(argv),
            returncode=proc.returncode if proc.returncode is not None else -1,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            duration_s=time.monotonic() - started,
        )

    async def stream(self, argv: Sequence[str], *, timeout: float | None = None) -> AsyncIterator[str]:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = None if timeout is None else time.monotonic() + timeout
        assert proc.stdout is not None
        try:
            while True:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise CommandTimeout(f"{argv[0]} timed out after {timeout:g} s on host {self.name}")
                line = await asyncio.wait_for(proc.stdout.readline(), remaining)
                if not line:
                    break
                yield line.decode(errors="replace").rstrip("\n")
        finally:
            if proc.returncode is None:
                _kill_group(proc.pid)
            await proc.wait()

    async def put_file(self, local_path: str, remote_path: str, *, mode: int = 0o644) -> None:
        await asyncio.to_thread(_copy, local_path, remote_path, mode)

    async def get_file(self, remote_path: str, local_path: str) -> None:
        await asyncio.to_thread(_copy, remote_path, local_path, 0o644)

    async def unix_socket_path(self, remote_path: str) -> str:
        return remote_path

    async def sample(self) -> ResourceSample:
        sample, self._cpu_before = await asyncio.to_thread(_read_sample, self.name, self._cpu_before)
        return sample

    async def facts(self) -> Facts:
        return await asyncio.to_thread(_read_facts)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _copy(src: str, dst: str, mode: int) -> None:
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    tmp = f"{dst}.tmp-{os.getpid()}-{secrets.token_hex(4)}"  # two copies to one path at once each get their own
    shutil.copyfile(src, tmp)
    os.chmod(tmp, mode)
    os.replace(tmp, dst)


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _read_cpu() -> linux.CpuTimes:
    return linux.parse_proc_stat(_read("/proc/stat"))


def _read_sample(host: str, before: linux.CpuTimes | None) -> tuple[ResourceSample, linux.CpuTimes]:
    after = _read_cpu()
    mem = linux.memory_figures(linux.parse_meminfo(_read("/proc/meminfo")))
    sample = ResourceSample(
        host=host,
        cpu_avail=linux.cpu_available(before, after) if before else None,
        mem_avail=mem.mem_avail,
        swap_avail=mem.swap_avail,
        mem_used_bytes=mem.mem_used_bytes,
        load1=linux.parse_loadavg(_read("/proc/loadavg")),
    )
    return sample, after


def _read_facts() -> Facts:
    uname = platform.uname()
    mem = linux.parse_meminfo(_read("/proc/meminfo"))
    return Facts(
        os=uname.system,
        kernel=uname.release,
        arch=uname.machine,
        cpu_model=linux.parse_cpu_model(_read("/proc/cpuinfo")),
        cores=os.cpu_count() or 1,
        mem_total_bytes=mem["MemTotal"],
    )
