"""StoreProcess: the parent's side of the store's own process (labtui.session.store_child).

A run's measuring process never loads DuckDB, polars or pyarrow: it asks this
child process to read the store, open it and feed it, one request at a time.
The child runs at a low CPU and I/O priority; `pause` and `resume` stop and
continue it around a measurement it must not share the host with.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

from labtui.session.estimate import PastRows
from labtui.session.store_frames import HEAD, decode, encode
from labtui.store.errors import StoreError

#: How long `close` waits for the child to finish its last request and exit before it is killed (seconds).
CLOSE_WAIT_S = 10.0


class StoreProcess:
    """A running store process; `await StoreProcess.start()`, then `view`, `open`, `feed`, and `close`."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._turn = asyncio.Lock()
        self._paused = False

    @classmethod
    async def start(cls) -> StoreProcess:
        """Start the child (StoreError when it cannot be started)."""
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "labtui.session.store_child", str(os.getpid()),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        except OSError as exc:
            raise StoreError(f"cannot start the store's process: {exc}") from None
        return cls(process)

    @property
    def pid(self) -> int:
        return self._process.pid

    async def view(self, db: Path) -> Any:
        """What reconciling needs from the store at db (a StoreView, or None when it cannot be read soon)."""
        return await self._ask("view", db)

    async def history(self, db: Path, suite: str, host: str, backend: str, config: dict[str, Any]) -> PastRows:
        """The latest comparable completed session's rows (labtui.session.estimate.read_history)."""
        answer = await self._ask("history", db, suite, host, backend, config)
        assert isinstance(answer, PastRows)
        return answer

    async def open(self, db: Path, wait: float) -> str | None:
        """Check (or create) the store for writing; a notice when another program holds it, else None."""
        answer = await self._ask("open", db, wait)
        return answer if isinstance(answer, str) else None

    async def feed(self, journals: list[Path], wait: float) -> tuple[int, list[Path]]:
        """Move the journals' new rows into the store: (rows moved, the journals it emptied); StoreBusy after
        `wait` s of a store held elsewhere."""
        rows, drained = await self._ask("feed", journals, wait)
        return rows, drained

    def pause(self) -> None:
        """Stop the child where it is (SIGSTOP) until `resume`."""
        if not self._paused and self._process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, signal.SIGSTOP)
            self._paused = True

    def resume(self) -> None:
        """Let a paused child go on."""
        if self._paused:
            self._paused = False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, signal.SIGCONT)

    async def close(self) -> None:
        """End the child: its input closes, it finishes its request and exits (killed after CLOSE_WAIT_S)."""
        self.resume()
        process = self._process
        if process.stdin is not None and not process.stdin.is_closing():
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), CLOSE_WAIT_S)
        except TimeoutError:  # a feed that does not end: its transaction is rolled back, the journals keep the rows
            self._kill()
            await process.wait()
        except asyncio.CancelledError:
            self._kill()
            raise

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._process.kill()

    async def _ask(self, *request: Any) -> Any:
        """Send one request and return its answer; raise the exception it answered with."""
        process = self._process
        assert process.stdin is not None and process.stdout is not None
        async with self._turn:
            try:
                process.stdin.write(encode(request))
                await process.stdin.drain()
                head = await process.stdout.readexactly(HEAD.size)
                answer = decode(await process.stdout.readexactly(HEAD.unpack(head)[0]))
            except (OSError, asyncio.IncompleteReadError) as exc:
                raise StoreError(f"the store's process (pid {process.pid}) ended: {exc or type(exc).__name__}") from None
        if isinstance(answer, BaseException):
            raise answer
        return answer
