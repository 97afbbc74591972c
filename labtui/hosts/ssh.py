"""SSHHost: a machine reached over SSH with asyncssh.

Commands are argv lists; the one place a shell is unavoidable is the remote
side of an SSH exec request, so every argument is quoted with shlex.quote and
the command runs as ``printf PID; exec ARGV`` (the PID lets a timeout kill the
whole remote process group).  Commands without input go to the connection's
runners (``labtui.hosts.ssh_runner``), which spare them a login shell each.  A connection's first command also makes the
runtime directory private (no extra session: each one starts the user's shell
and its rc files), and the OS is read once per connection, when first needed.  Connections form a small pool: each carries at
most MAX_CHANNELS concurrent sessions, below OpenSSH's default MaxSessions of
10, and the pool opens another connection when all are busy.  A lost
connection is dropped and the next call reconnects with backoff.  Host keys
are checked against the host's known_hosts file only.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import secrets
import shlex
import shutil
import tempfile
import time
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import asyncssh

from labtui.core.events import ResourceSample
from labtui.hosts import hostkeys, illumos, linux, remote_sampler, ssh_transfer
from labtui.hosts.base import CommandResult, CommandTimeout, Facts, Host, HostError
from labtui.hosts.config import HostConfig
from labtui.hosts.ssh_runner import RUNNER_SCRIPT, Runner, RunnerError, one_line_command

#: Concurrent sessions per connection (OpenSSH's MaxSessions defaults to 10).
MAX_CHANNELS = 8
#: Connections one host may open when its sessions are all busy.
MAX_CONNECTIONS = 4
#: Delays before the second, third, ... connection attempt.
RECONNECT_BACKOFF_S = (0.5, 1.0, 2.0)
#: Keepalives that may go unanswered before the connection counts as lost.
KEEPALIVE_COUNT_MAX = 3
#: Seconds a kill of a timed-out remote process group may take.
KILL_TIMEOUT_S = 10.0

#: Seconds a short command labtui runs for itself (``uname -s``) may take once its runner is up.
OUTPUT_TIMEOUT_S = 60.0

#: Exit status of a command whose connection could not make the runtime dir private.
PREPARE_FAILED = 125

#: SSH handshakes (connect, key exchange, authentication) and session starts (the user's login shell)
#: one labtui process has under way at once, over all hosts; the rest wait their turn, and their
#: timeouts start only when it comes.  LABTUI_SSH_HANDSHAKES overrides it.
MAX_HANDSHAKES = 8
#: Runners one connection starts at once; more commands wait for one of them or an idle runner.
RUNNER_STARTS_AHEAD = 2
#: Attempts at starting a runner session that timed out on a live connection (a host merely slow to
#: start the login shell), each with twice the previous timeout.
RUNNER_START_ATTEMPTS = 3


def max_handshakes() -> int:
    """MAX_HANDSHAKES, or LABTUI_SSH_HANDSHAKES when that is a positive integer."""
    try:
        value = int(os.environ.get("LABTUI_SSH_HANDSHAKES", ""))
    except ValueError:
        return MAX_HANDSHAKES
    return value if value > 0 else MAX_HANDSHAKES


_PACERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = weakref.WeakKeyDictionary()


def _pacer() -> asyncio.Semaphore:
    """The running loop's bound on handshakes and session starts under way (max_handshakes())."""
    loop = asyncio.get_running_loop()
    pacer = _PACERS.get(loop)
    if pacer is None:
        pacer = _PACERS[loop] = asyncio.Semaphore(max_handshakes())
    return pacer


class _Client(asyncssh.SSHClient):
    """Notices when its connection goes away."""

    def __init__(self) -> None:
        self.lost = False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True


@dataclass(slots=True)
class _Conn:
    conn: asyncssh.SSHClientConnection
    client: _Client
    busy: int = 0
    #: The runtime dir was made private through this connection (by its first runner).
    prepared: bool = False
    #: Held while the first runner checks the runtime dir: nothing else uses the connection meanwhile.
    prepare_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    #: ``uname -s`` of the host, read on first need.
    os_name: str = ""
    #: Runners waiting for their next command (each holds an open session).
    idle: list[Runner] = field(default_factory=list)
    #: Runners being started on this connection right now.
    starting: int = 0
    #: Commands waiting for an idle runner or the end of a start.
    waiters: list[asyncio.Future] = field(default_factory=list)

    def give_back(self, runner: Runner) -> None:
        """runner is free for the next command."""
        self.idle.append(runner)
        self.wake()

    def wake(self) -> None:
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def changed(self) -> None:
        """Return when a runner is given back or a start ends."""
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        await waiter

    def make_room(self) -> None:
        """Close idle runners until a new session fits within MAX_CHANNELS."""
        while self.idle and self.busy + len(self.idle) > MAX_CHANNELS:
            self.idle.pop().close()

    @property
    def alive(self) -> bool:
        return not self.client.lost


class SSHHost(Host):
    """A host from the lab config, driven over a pool of SSH connections."""

    def __init__(
        self, config: HostConfig, *, resolve: Callable[[str], HostConfig] | None = None, via: SSHHost | None = None
    ) -> None:
        """via: an open host to tunnel through (a guest behind it), which closing this host leaves open."""
        self.name = config.name
        self.config = config
        self._jump: SSHHost | None = via
        self._owns_jump = via is None
        if config.jump and via is None:
            if resolve is None:
                raise HostError(f"host {config.name}: jump host {config.jump!r} given but no way to resolve it")
            self._jump = SSHHost(resolve(config.jump), resolve=resolve)
        self._conns: list[_Conn] = []
        self._pool_lock = asyncio.Lock()
        self._gate = asyncio.Semaphore(MAX_CHANNELS * MAX_CONNECTIONS)
        self._sampler: asyncssh.SSHClientProcess | None = None
        self._sampler_os = ""
        self._sample_lock = asyncio.Lock()
        self._cpu_before: linux.CpuTimes | None = None
        self._facts: Facts | None = None
        self._forwards: dict[str, tuple[asyncssh.SSHListener, _Conn, str]] = {}
        self._forward_dir: str | None = None
        self._forward_count = 0

    @property
    def runtime_dir(self) -> str:
        """``runtime_dir`` from the config, else /tmp/labtui-USER; made private (0700, ours) on connect."""
        return self.config.runtime_dir or f"/tmp/labtui-{self.config.user or getpass.getuser()}"

    # -- commands ------------------------------------------------------------

    async def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float = 60.0,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CommandResult:
        if input is None:
            return await self._run_in_runner(argv, timeout, env)
        started = time.monotonic()
        pid: list[int] = []
        try:
            async with self._slot() as conn:
                proc = await self._start(conn, argv, env)
                try:
                    out, err = await asyncio.wait_for(self._collect(proc, pid, input), timeout)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    proc.close()
                    raise
                except (asyncssh.Error, OSError) as exc:
                    raise HostError(f"host {self.name}: connection lost while running {argv[0]}: {_reason(exc)}") from exc
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            if pid:  # the slot is free again, so the kill never waits on our own session
                await self._kill_group(pid[0])
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise CommandTimeout(f"{argv[0]} timed out after {timeout:g} s on host {self.name}") from None
        returncode = proc.returncode
        if returncode is None:
            raise HostError(f"host {self.name}: connection lost while running {argv[0]}")
        stderr = err.decode(errors="replace")
        if returncode == 127 and _not_found(stderr, argv[0]):
            raise HostError(f"{argv[0]}: command not found on host {self.name}")
        return CommandResult(tuple(argv), returncode, out.decode(errors="replace"), stderr, time.monotonic() - started)

    async def _run_in_runner(self, argv: Sequence[str], timeout: float, env: Mapping[str, str] | None) -> CommandResult:
        """run() through one of the connection's runners (started when none is idle)."""
        if not argv:
            raise HostError(f"host {self.name}: empty command")
        if self.config.path:
            env = {"PATH": self.config.path, **(env or {})}
        started = time.monotonic()
        lost = None
        try:
            async with self._slot() as conn:
                await self._ensure_prepared(conn)
                runner = await self._runner_on(conn)
                try:
                    status, out, err = await asyncio.wait_for(runner.run(one_line_command(command_words(argv, env))), timeout)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    runner.close()
                    lost = runner  # the kill waits until this slot is free again
                    raise
                except RunnerError as exc:
                    raise HostError(f"host {self.name}: connection lost while running {argv[0]}: {exc}") from exc
                conn.give_back(runner)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            if lost is not None:  # the runner leads its session: its group is the command and the runner
                await self._kill_group(lost.pid, files=lost.files(self.runtime_dir))
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise CommandTimeout(f"{argv[0]} timed out after {timeout:g} s on host {self.name}") from None
        stderr = err.decode(errors="replace")
        if status == 127 and _not_found(stderr, argv[0]):
            raise HostError(f"{argv[0]}: command not found on host {self.name}")
        return CommandResult(tuple(argv), status, out.decode(errors="replace"), stderr, time.monotonic() - started)

    async def _runner_on(self, conn: _Conn) -> Runner:
        """An idle runner of conn, else a new one; at most RUNNER_STARTS_AHEAD start at once per connection.

        A command that finds none idle while that many are starting waits for
        whichever comes first: a runner done with its command, or a start ending.
        Short commands then share a few runners instead of paying a login shell each.
        """
        while True:
            runner = _pop_usable(conn.idle)
            if runner is not None:
                return runner
            if conn.starting < RUNNER_STARTS_AHEAD:
                conn.starting += 1
                try:
                    return await self._start_runner(conn)
                finally:
                    conn.starting -= 1
                    conn.wake()
            if not conn.alive:
                raise HostError(f"host {self.name}: connection lost while waiting for a command runner")
            await conn.changed()

    async def _start_runner(self, conn: _Conn, *, prepare: bool = False) -> Runner:
        """A new runner on conn; with prepare, it first makes the runtime dir private.

        Starts are paced (_pacer) and each is bounded by the connect timeout from
        its turn on; one that times out on a live connection (a slow host) is
        tried again with twice the timeout, RUNNER_START_ATTEMPTS in all.
        """
        launch = remote_command(["sh", "-c", RUNNER_SCRIPT, "sh", self.runtime_dir], None,
                                prepare_dir=self.runtime_dir if prepare else None, pid=False)
        timeout = self.config.connect_timeout_s
        for attempt in range(1, RUNNER_START_ATTEMPTS + 1):
            try:
                async with _pacer():
                    return await asyncio.wait_for(Runner.start(conn.conn, launch), timeout)
            except RunnerError as exc:
                if exc.exit_status == PREPARE_FAILED:
                    raise self._prepare_failure(str(exc).encode()) from None
                raise HostError(f"host {self.name}: cannot start a command runner: {exc}") from None
            except asyncio.TimeoutError as exc:
                if not conn.alive or attempt == RUNNER_START_ATTEMPTS:
                    raise HostError(f"host {self.name}: cannot start a command runner: timed out "
                                    f"({attempt} attempts, the last {timeout:g} s)") from exc
                timeout *= 2
            except (asyncssh.Error, OSError) as exc:
                raise HostError(f"host {self.name}: cannot start a command runner: {_reason(exc)}") from exc
        raise AssertionError("unreachable")

    async def stream(self, argv: Sequence[str], *, timeout: float | None = None) -> AsyncIterator[str]:
        deadline = None if timeout is None else time.monotonic() + timeout
        pid: int | None = None
        try:
            async with self._slot() as conn:
                proc = await self._start(conn, argv, None)
                proc.stdin.write_eof()
                try:
                    pid = await self._read_pid(proc)
                    while True:
                        remaining = None if deadline is None else deadline - time.monotonic()
                        if remaining is not None and remaining <= 0:
                            raise CommandTimeout(f"{argv[0]} timed out after {timeout:g} s on host {self.name}")
                        try:
                            line = await asyncio.wait_for(proc.stdout.readline(), remaining)
                        except asyncio.TimeoutError:
                            continue
                        except (asyncssh.Error, OSError) as exc:
                            raise HostError(f"host {self.name}: connection lost while streaming {argv[0]}: "
                                            f"{_reason(exc)}") from exc
                        if not line:
                            with contextlib.suppress(asyncio.TimeoutError):
                                await asyncio.wait_for(proc.wait_closed(), KILL_TIMEOUT_S)
                            if proc.returncode is None and proc.is_closing():
                                pid = None  # no exit status: the connection went, and the host with it
                                raise HostError(f"host {self.name}: connection lost while streaming {argv[0]}")
                            break
                        yield line.decode(errors="replace").rstrip("\n")
                finally:
                    if proc.returncode is not None:
                        pid = None
                    proc.close()
        finally:
            if pid is not None:  # stopped early, timed out or cancelled: end what is left
                await self._kill_group(pid)

    async def _start(self, conn: _Conn, argv: Sequence[str], env: Mapping[str, str] | None) -> asyncssh.SSHClientProcess:
        """Start argv in a session of its own on conn (the runtime dir checked first)."""
        if not argv:
            raise HostError(f"host {self.name}: empty command")
        if self.config.path:  # the host's configured PATH, unless the caller set one
            env = {"PATH": self.config.path, **(env or {})}
        await self._ensure_prepared(conn)
        conn.make_room()
        try:
            return await conn.conn.create_process(remote_command(argv, env), encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise HostError(f"host {self.name}: cannot start {argv[0]}: {_reason(exc)}") from exc

    async def _ensure_prepared(self, conn: _Conn) -> None:
        """Make the runtime dir private through conn, once: the first runner checks it, the others wait.

        That runner then waits idle for the connection's next command, so the
        check costs no session of its own.
        """
        if conn.prepared:
            return
        async with conn.prepare_lock:
            if not conn.prepared:
                conn.give_back(await self._start_runner(conn, prepare=True))
                conn.prepared = True

    async def _output_on(self, conn: _Conn, argv: list[str]) -> str:
        """The stdout of a short argv run on conn (a slot the caller holds), by one of its runners.

        A runner rather than a session of its own: no login shell when one is idle,
        and a new one's start is paced and retried like any runner's.
        """
        await self._ensure_prepared(conn)
        runner = await self._runner_on(conn)
        env = {"PATH": self.config.path} if self.config.path else None
        timeout = max(self.config.connect_timeout_s, OUTPUT_TIMEOUT_S)
        try:
            status, out, err = await asyncio.wait_for(runner.run(one_line_command(command_words(argv, env))), timeout)
        except (RunnerError, asyncio.TimeoutError) as exc:
            runner.close()
            raise HostError(f"host {self.name}: cannot run {argv[0]}: {_reason(exc)}") from exc
        conn.give_back(runner)
        if status != 0:
            detail = err.decode(errors="replace").strip() or f"exit {status}"
            raise HostError(f"host {self.name}: {argv[0]} failed: {detail}")
        return out.decode(errors="replace")

    def _prepare_failure(self, stderr: bytes) -> HostError:
        detail = stderr.decode(errors="replace").strip() or "not a directory owned by the user, or a symlink"
        return HostError(f"host {self.name}: cannot prepare private runtime dir {self.runtime_dir}: {detail}")

    async def _os_name(self, conn: _Conn) -> str:
        """``uname -s`` of the host behind conn, read once per connection."""
        if not conn.os_name:
            conn.os_name = (await self._output_on(conn, ["uname", "-s"])).strip()
        return conn.os_name

    async def _collect(
        self, proc: asyncssh.SSHClientProcess, pid: list[int], input: bytes | None
    ) -> tuple[bytes, bytes]:
        if input:
            proc.stdin.write(input)
        proc.stdin.write_eof()
        found = await self._read_pid(proc)
        if found is not None:
            pid.append(found)
        out, err = await proc.communicate()
        return out, err

    async def _read_pid(self, proc: asyncssh.SSHClientProcess) -> int | None:
        line = await proc.stdout.readline()
        try:
            return int(line)
        except ValueError:
            return None

    async def _kill_group(self, pid: int, *, files: Sequence[str] = ()) -> None:
        """SIGKILL a timed-out command's process group (it leads one: sshd made it a session), then remove files."""
        argv = ["sh", "-c", 'kill -9 "-$1"; shift; rm -f -- "$@"', "sh", str(pid), *files]  # dash's kill takes no --

        async def kill() -> None:
            async with self._slot() as conn:
                conn.make_room()
                proc = await conn.conn.create_process(remote_command(argv, None))
                proc.stdin.write_eof()
                await proc.wait_closed()

        with contextlib.suppress(HostError, asyncssh.Error, OSError, asyncio.TimeoutError):
            await asyncio.wait_for(kill(), KILL_TIMEOUT_S)

    # -- files ---------------------------------------------------------------

    async def put_file(self, local_path: str, remote_path: str, *, mode: int = 0o644) -> None:
        """Copy local_path to remote_path: to a temporary name beside it, chmod mode, rename.

        Through SFTP where the host offers it, else over an exec channel (size
        and SHA-256 checked); what the host supports is remembered per host.
        """
        partial = f"{remote_path}.labtui-{os.getpid()}-{secrets.token_hex(4)}.partial"
        if await self._sftp_supported():
            async with self._sftp() as sftp:
                if sftp is not None:
                    try:
                        parent = str(Path(remote_path).parent)
                        await sftp.makedirs(parent, exist_ok=True)
                        await sftp.put(local_path, partial)
                        await sftp.chmod(partial, mode)
                        await sftp.posix_rename(partial, remote_path)
                    except BaseException:
                        with contextlib.suppress(Exception):
                            await asyncio.wait_for(sftp.remove(partial), KILL_TIMEOUT_S)
                        raise
                    return
        size, digest = ssh_transfer.sha256_of(local_path)
        argv = ["sh", "-c", ssh_transfer.PUT_SCRIPT, "sh", ssh_transfer.safe_path(remote_path),
                ssh_transfer.safe_path(partial), str(size), digest, f"{mode & 0o7777:o}"]
        await self._exec_transfer(argv, f"copying {local_path} to {remote_path}",
                                  lambda proc: ssh_transfer.send(proc, local_path))

    async def get_file(self, remote_path: str, local_path: str) -> None:
        """Copy remote_path to local_path (through a temporary name), by SFTP or over an exec channel."""
        Path(local_path).parent.mkdir(parents=True, exist_ok=True)
        partial = f"{local_path}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            if await self._sftp_supported():
                async with self._sftp() as sftp:
                    if sftp is not None:
                        await sftp.get(remote_path, partial)
                        os.replace(partial, local_path)
                        return
            argv = ["sh", "-c", ssh_transfer.GET_SCRIPT, "sh", ssh_transfer.safe_path(remote_path)]
            await self._exec_transfer(argv, f"copying {remote_path} from the host",
                                      lambda proc: ssh_transfer.receive(proc, partial))
            os.replace(partial, local_path)
        finally:
            ssh_transfer.remove_quietly(partial)

    async def _sftp_supported(self) -> bool:
        """False once this host (address, port, user) has refused the SFTP subsystem."""
        return _TRANSFER.get(self._transfer_key) != "exec"

    @property
    def _transfer_key(self) -> tuple[str, int, str, str]:
        cfg = self.config
        return (cfg.address, cfg.port, cfg.user or "", self._jump.name if self._jump is not None else "")

    @contextlib.asynccontextmanager
    async def _sftp(self) -> AsyncIterator[asyncssh.SFTPClient | None]:
        """An SFTP client on a pooled session, or None when the host refuses the subsystem (then remembered)."""
        async with self._slot() as conn:
            await self._ensure_prepared(conn)
            conn.make_room()
            client = None
            try:
                client = await conn.conn.start_sftp_client()
            except (asyncssh.Error, OSError) as exc:
                if not conn.alive:
                    raise HostError(f"host {self.name}: SFTP: {_reason(exc)}") from exc
            if client is None:  # refused, or no sftp-server there: commands still run
                _TRANSFER[self._transfer_key] = "exec"
                yield None
                return
            _TRANSFER[self._transfer_key] = "sftp"
            try:
                async with client:
                    yield client
            except (asyncssh.Error, OSError) as exc:
                raise HostError(f"host {self.name}: SFTP: {_reason(exc)}") from exc

    async def _exec_transfer(self, argv: list[str], what: str, move) -> None:
        """Run a transfer script in a session of its own; move(proc) streams the bytes either way."""
        pid: int | None = None
        try:
            async with self._slot() as conn:
                proc = await self._start(conn, argv, None)
                try:
                    pid = await self._read_pid(proc)
                    await move(proc)
                    pid = None
                except ssh_transfer.TransferError as exc:
                    pid = None
                    if proc.returncode is None:
                        raise HostError(f"host {self.name}: connection lost while {what}") from None
                    raise HostError(f"host {self.name}: {what}: {exc}") from None
                except (asyncssh.Error, OSError) as exc:
                    raise HostError(f"host {self.name}: connection lost while {what}: {_reason(exc)}") from exc
                finally:
                    proc.close()
        finally:
            if pid is not None:  # cancelled or broken midway: end the remote script
                await self._kill_group(pid)

    # -- sockets -------------------------------------------------------------

    async def unix_socket_path(self, remote_path: str) -> str:
        """A private socket on the controller forwarded to remote_path through the pool."""
        known = self._forwards.get(remote_path)
        if known is not None:
            if known[1].alive:
                return known[2]
            known[0].close()  # its connection is gone: a fresh forward gets a fresh name
            with contextlib.suppress(FileNotFoundError):
                os.unlink(known[2])
        if self._forward_dir is None:
            self._forward_dir = tempfile.mkdtemp(prefix=f"labtui-fwd-{self.name}-")
        self._forward_count += 1
        local = f"{self._forward_dir}/{self._forward_count}-{Path(remote_path).name}"[:100]
        async with self._pool_lock:
            conn = await self._pick_locked(reserve=False)
        try:
            listener = await conn.conn.forward_local_path(local, remote_path)
        except (asyncssh.Error, OSError) as exc:
            raise HostError(f"host {self.name}: cannot forward {remote_path}: {_reason(exc)}") from exc
        self._forwards[remote_path] = (listener, conn, local)
        return local

    # -- resources -----------------------------------------------------------

    async def sample(self) -> ResourceSample:
        async with self._sample_lock:
            proc = await self._sampler_channel()
            try:
                proc.stdin.write(b"\n")
                lines = await asyncio.wait_for(_read_until_end(proc), self.config.connect_timeout_s)
            except (asyncssh.Error, OSError, asyncio.TimeoutError, EOFError) as exc:
                proc.close()
                self._sampler = None
                raise HostError(f"host {self.name}: resource sampler failed: {_reason(exc)}") from exc
            sections = remote_sampler.split_sections(lines)
            try:
                sample, self._cpu_before = remote_sampler.build_sample(
                    self.name, self._sampler_os, sections, self._cpu_before
                )
            except (KeyError, ValueError, IndexError) as exc:
                raise HostError(f"host {self.name}: unreadable resource sample: {exc}") from exc
            return sample

    async def _sampler_channel(self) -> asyncssh.SSHClientProcess:
        """The long-lived sampler process, started on first use and after a lost connection."""
        if self._sampler is not None and self._sampler.returncode is None and not self._sampler.is_closing():
            return self._sampler
        async with self._pool_lock:
            conn = await self._pick_locked(reserve=True)  # holds one session for the sampler's life
        try:
            script = remote_sampler.sampler_script(await self._os_name(conn))
            conn.make_room()
        except ValueError as exc:
            conn.busy -= 1
            raise HostError(f"host {self.name}: {exc}") from None
        except HostError:
            conn.busy -= 1
            raise
        try:
            async with _pacer():
                proc = await conn.conn.create_process(remote_command(["sh", "-c", script], None), encoding=None)
                await self._read_pid(proc)
        except (asyncssh.Error, OSError) as exc:
            conn.busy -= 1
            raise HostError(f"host {self.name}: cannot start the resource sampler: {_reason(exc)}") from exc
        except BaseException:
            conn.busy -= 1
            raise
        _release_when_closed(proc, conn)
        self._sampler, self._sampler_os, self._cpu_before = proc, conn.os_name, None
        return proc

    async def facts(self) -> Facts:
        """Kernel, CPU and memory, read once per connection pool."""
        if self._facts is not None and any(c.alive for c in self._conns):
            return self._facts
        async with self._slot() as conn:
            os_name = await self._os_name(conn)
        if os_name == "SunOS":
            uname, kstat, pagesize = await self._outputs(
                ["uname", "-r", "-m"], ["kstat", "-p", *illumos.FACT_KSTATS], ["pagesize"]
            )
            kstats = illumos.parse_kstat(kstat)
            cores, model = illumos.ncpus(kstats), illumos.cpu_model(kstats)
            mem_total = int(kstats["unix:0:system_pages:physmem"]) * int(pagesize.split()[0])
        else:
            uname, meminfo, cpuinfo, nproc = await self._outputs(
                ["uname", "-r", "-m"], ["cat", "/proc/meminfo"], ["cat", "/proc/cpuinfo"], ["getconf", "_NPROCESSORS_ONLN"]
            )
            cores, model = int(nproc.strip() or 1), linux.parse_cpu_model(cpuinfo)
            mem_total = linux.parse_meminfo(meminfo)["MemTotal"]
        release, arch = uname.split()
        self._facts = Facts(os_name, release, arch, model, cores, mem_total)
        return self._facts

    async def _outputs(self, *argvs: list[str]) -> list[str]:
        results = await asyncio.gather(*(self.run(argv, timeout=30) for argv in argvs))
        return [r.check().stdout for r in results]

    # -- connections ---------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[_Conn]:
        """One session's worth of a pooled connection, held for the block."""
        async with self._gate:
            async with self._pool_lock:
                conn = await self._pick_locked(reserve=True)
            try:
                yield conn
            finally:
                conn.busy -= 1
                conn.wake()  # a waiting command looks again (this one may have lost its runner)

    async def _pick_locked(self, *, reserve: bool) -> _Conn:
        """A live connection with a free session (reserved when asked); opens one if needed."""
        self._conns = [c for c in self._conns if c.alive]
        free = [c for c in self._conns if c.busy < MAX_CHANNELS]  # idle runners make room on demand
        if free or (self._conns and not reserve):
            conn = min(free or self._conns, key=lambda c: c.busy)
        elif len(self._conns) < MAX_CONNECTIONS:
            conn = await self._connect()
            self._conns.append(conn)
        else:  # only reached by the sampler, which is outside the gate
            conn = min(self._conns, key=lambda c: c.busy)
        if reserve:
            conn.busy += 1
        return conn

    async def _connect(self) -> _Conn:
        """Connect with backoff; key and authentication refusals are final, not retried.

        Handshakes are paced over all hosts (_pacer): the connect timeout runs
        from a handshake's turn, so 32 hosts at once queue rather than time out.
        """
        last: Exception | None = None
        delays = (0.0, *RECONNECT_BACKOFF_S)
        for delay in delays:
            if delay:
                await asyncio.sleep(delay)
            try:
                tunnel = await self.jump_connection()  # outside our turn: the jump host paces its own
                async with _pacer():
                    return await self._connect_once(tunnel)
            except (hostkeys.HostKeyRefused, _AuthRefused):
                raise
            except HostError as exc:
                last = exc
        raise HostError(f"{last} (gave up after {len(delays)} attempts)")

    async def _connect_once(self, tunnel: asyncssh.SSHClientConnection | None) -> _Conn:
        cfg = self.config
        client = _Client()
        identity = cfg.identity_path
        try:
            conn = await asyncssh.connect(
                cfg.address,
                cfg.port,
                tunnel=tunnel if tunnel is not None else (),
                username=cfg.user or (),
                client_keys=[str(identity)] if identity else (),
                agent_path=None if identity else (),
                known_hosts=hostkeys.known_hosts_for(cfg),
                config=[],
                preferred_auth="publickey",
                connect_timeout=cfg.connect_timeout_s,
                keepalive_interval=cfg.keepalive_s,
                keepalive_count_max=KEEPALIVE_COUNT_MAX,
                client_factory=lambda: client,
            )
        except asyncssh.HostKeyNotVerifiable:
            raise await hostkeys.refusal(cfg, tunnel) from None
        except asyncssh.PermissionDenied as exc:
            keys = str(identity) if identity else "the default keys and agent"
            raise _AuthRefused(
                f"host {self.name}: {cfg.user or getpass.getuser()}@{cfg.address}:{cfg.port} refused "
                f"authentication with {keys}: {exc.reason}"
            ) from None
        except (asyncssh.Error, OSError, asyncio.TimeoutError) as exc:
            raise HostError(f"host {self.name}: cannot connect to {cfg.address}:{cfg.port}: {_reason(exc)}") from exc
        return _Conn(conn, client)

    async def jump_connection(self) -> asyncssh.SSHClientConnection | None:
        """The connection to this host's jump host, or None when it is reached directly."""
        return await self._jump.tunnel() if self._jump is not None else None

    async def tunnel(self) -> asyncssh.SSHClientConnection:
        """A live connection to this host for tunnelling to a host behind it."""
        async with self._pool_lock:
            return (await self._pick_locked(reserve=False)).conn

    @contextlib.asynccontextmanager
    async def connect(self, address: str, port: int) -> AsyncIterator[tuple[Any, Any]]:
        """A TCP connection to address:port forwarded through this host's connection; closed on exit."""
        try:
            reader, writer = await (await self.tunnel()).open_connection(address, port)
        except (asyncssh.Error, OSError) as exc:
            raise HostError(f"host {self.name}: cannot connect to {address}:{port}: {_reason(exc)}") from exc
        try:
            yield reader, writer
        except asyncssh.Error as exc:
            raise HostError(f"host {self.name}: connection to {address}:{port} failed: {_reason(exc)}") from exc
        finally:
            writer.close()

    def ssh_login(self, config: HostConfig) -> SSHHost:
        """An SSH host for a machine behind this one, tunnelled through this host's connection."""
        return SSHHost(config, via=self)

    def terminal_argv(self, argv: Sequence[str]) -> list[str]:
        """OpenSSH's ``ssh -t`` to this host running argv (under the config's PATH), for a session on this terminal."""
        env = {"PATH": self.config.path} if self.config.path else None
        command = " ".join(map(shlex.quote, command_words(argv, env)))
        return ["ssh", *self.ssh_options(), "-t", self.config.address, command]

    def ssh_options(self) -> list[str]:
        """OpenSSH options that log in as labtui does: the config's port, user, key and known_hosts, its jump host."""
        cfg = self.config
        options = ["-p", str(cfg.port), "-o", f"UserKnownHostsFile={cfg.known_hosts_path}",
                   "-o", "StrictHostKeyChecking=yes", "-o", f"ConnectTimeout={max(1, round(cfg.connect_timeout_s))}"]
        if cfg.user:
            options += ["-l", cfg.user]
        if cfg.identity_path:
            options += ["-i", str(cfg.identity_path), "-o", "IdentitiesOnly=yes"]
        if self._jump is not None:
            jump = ["ssh", *self._jump.ssh_options(), "-W", "%h:%p", self._jump.config.address]
            options += ["-o", f"ProxyCommand={shlex.join(jump)}"]
        return options

    async def close(self) -> None:
        """Stop the sampler and forwards, close every connection, then the jump host's."""
        if self._sampler is not None:
            self._sampler.close()
            self._sampler = None
        for listener, _, _ in self._forwards.values():
            listener.close()
        self._forwards.clear()
        if self._forward_dir is not None:
            shutil.rmtree(self._forward_dir, ignore_errors=True)
            self._forward_dir = None
        conns, self._conns = self._conns, []
        for c in conns:
            c.conn.close()
        for c in conns:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(c.conn.wait_closed(), 5)
        if self._jump is not None and self._owns_jump:
            await self._jump.close()


class _AuthRefused(HostError):
    """The host refused our keys: retrying will not help."""


def command_words(argv: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """argv, behind ``env K=V ...`` when there is an environment to set."""
    return [*(["env", *(f"{k}={v}" for k, v in env.items())] if env else []), *map(str, argv)]


def remote_command(
    argv: Sequence[str], env: Mapping[str, str] | None, *, prepare_dir: str | None = None, pid: bool = True
) -> str:
    """The remote shell command for argv: print the shell's PID (unless pid is False), then exec argv.

    Each word is quoted.  With prepare_dir, first make that directory exist,
    ours, no symlink and 0700, or exit PREPARE_FAILED before printing anything.
    """
    command = ("printf '%s\\n' $$; " if pid else "") + "exec " + " ".join(map(shlex.quote, command_words(argv, env)))
    if prepare_dir is None:
        return command
    script = 'mkdir -p -m 700 "$1" && test -O "$1" && test ! -h "$1" && chmod 700 "$1"'
    return f"sh -c {shlex.quote(script)} sh {shlex.quote(prepare_dir)} || exit {PREPARE_FAILED}; {command}"


async def _read_until_end(proc: asyncssh.SSHClientProcess) -> list[str]:
    lines: list[str] = []
    while True:
        raw = await proc.stdout.readline()
        if not raw:
            raise EOFError("sampler channel closed")
        line = raw.decode(errors="replace").rstrip("\n")
        if line == remote_sampler.END:
            return lines
        lines.append(line)


def _pop_usable(idle: list[Runner]) -> Runner | None:
    """An idle runner whose channel is still open (closed ones are dropped), or None."""
    while idle:
        runner = idle.pop()
        if runner.usable:
            return runner
    return None


def _release_when_closed(proc: asyncssh.SSHClientProcess, conn: _Conn) -> None:
    async def wait() -> None:
        with contextlib.suppress(Exception):
            await proc.wait_closed()
        conn.busy -= 1

    task = asyncio.get_running_loop().create_task(wait())
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[asyncio.Task] = set()

#: How each host (address, port, user, jump host) takes files: "sftp", or "exec" once it refused the subsystem.
_TRANSFER: dict[tuple[str, int, str, str], str] = {}


def _not_found(stderr: str, program: str) -> bool:
    """Whether the remote shell's exec (or env, with a configured PATH) reported program missing."""
    if f"exec: {program}: not found" in stderr:  # bash and dash wording
        return True
    return stderr.startswith("env: ") and program in stderr and "No such file or directory" in stderr


def _reason(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return "timed out"
    if isinstance(exc, asyncssh.DisconnectError | asyncssh.ChannelOpenError):
        return exc.reason or type(exc).__name__
    return str(exc) or type(exc).__name__
