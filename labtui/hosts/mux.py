"""The background SSH mux: keeps connections to persisted hosts open between commands.

    python -m labtui.hosts.mux CONFIG SOCKET [HOST]...

Serves one JSON line per connection on SOCKET (in labtui's private runtime
dir): ``{"host", "argv", "timeout"}`` is answered with ``{"returncode",
"stdout", "stderr"}`` or ``{"error", "timed_out"}``, or ``{"unavailable": true}`` unrun when the
mux is about to exit; ``{"stop": true}`` ends the mux.  The HOSTs named at start are connected at once.  A host is closed
when it has been idle for its ``persist_s``; the mux exits when it has no
host left.  Only hosts with ``persist_s > 0`` in CONFIG are served, and host
keys are checked exactly as for any SSHHost.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from labtui.hosts.base import CommandTimeout, HostError
from labtui.hosts.config import LabConfig, load_lab_config
from labtui.hosts.ssh import SSHHost

#: Seconds between idle checks.
REAP_INTERVAL_S = 1.0


class Mux:
    """Persisted hosts by name, each closed after its own idle time."""

    def __init__(self, lab: LabConfig) -> None:
        self.lab = lab
        self.hosts: dict[str, SSHHost] = {}
        self.active: dict[str, int] = {}
        self.last_used: dict[str, float] = {}
        self.stopped = asyncio.Event()
        #: Set once the mux has decided to exit: new requests are turned away unrun.
        self.exiting = False

    def host(self, name: str) -> SSHHost:
        cfg = self.lab.hosts.get(name)
        if cfg is None or cfg.persist_s <= 0:
            raise HostError(f"host {name!r} is not persisted (persist_s) in {self.lab.path}")
        if name not in self.hosts:
            self.hosts[name] = SSHHost(cfg, resolve=self.lab.hosts.__getitem__)
            self.last_used[name] = time.monotonic()
        return self.hosts[name]

    async def run(self, name: str, argv: list[str], timeout: float) -> dict[str, Any]:
        self.active[name] = self.active.get(name, 0) + 1
        try:
            result = await self.host(name).run(argv, timeout=timeout)
        except CommandTimeout as exc:
            return {"error": str(exc), "timed_out": True}
        except HostError as exc:
            return {"error": str(exc)}
        finally:
            self.active[name] -= 1
            self.last_used[name] = time.monotonic()
        return {"returncode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = json.loads(await reader.readline())
            if request.get("stop"):
                self.stopped.set()
                answer: dict[str, Any] = {"stopped": True}
            elif self.exiting or self.stopped.is_set():
                answer = {"unavailable": True}  # the client runs it itself
            else:
                answer = await self.run(str(request["host"]), [str(a) for a in request["argv"]], float(request["timeout"]))
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            writer.write(json.dumps({"error": f"bad request to the mux: {exc}"}).encode() + b"\n")
        except ConnectionError:
            pass
        finally:
            writer.close()

    async def reap_until_idle(self) -> None:
        """Close hosts idle past their persist_s; return when none is left (or on stop)."""
        while not self.stopped.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.stopped.wait(), REAP_INTERVAL_S)
            now = time.monotonic()
            for name in list(self.hosts):
                idle = now - self.last_used[name]
                if not self.active.get(name) and idle > self.lab.hosts[name].persist_s:
                    await self.hosts.pop(name).close()
            if not self.hosts:
                self.exiting = True
                return

    async def close(self) -> None:
        await asyncio.gather(*(h.close() for h in self.hosts.values()), return_exceptions=True)
        self.hosts.clear()


async def main(config: Path, socket: Path, warm: list[str]) -> None:
    mux = Mux(load_lab_config(config))
    os.umask(0o077)
    with contextlib.suppress(FileNotFoundError):
        socket.unlink()
    server = await asyncio.start_unix_server(mux.serve, str(socket))
    try:
        await asyncio.gather(*(mux.run(name, ["true"], 30.0) for name in warm))
        await mux.reap_until_idle()
    finally:
        mux.exiting = True
        server.close()
        with contextlib.suppress(FileNotFoundError):
            socket.unlink()
        await mux.close()


if __name__ == "__main__":
    config_arg, socket_arg, *hosts = sys.argv[1:]
    lock_path = Path(socket_arg).with_suffix(".lock")
    with open(lock_path, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SystemExit(0) from None  # another mux serves this config already
        asyncio.run(main(Path(config_arg), Path(socket_arg), hosts))
