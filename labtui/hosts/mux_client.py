"""Talking to the background SSH mux (``labtui.hosts.mux``) without importing asyncssh.

Hosts whose lab config sets ``persist_s`` keep their connection open in one
background process per lab config, like OpenSSH's ControlPersist, so the next
`labtui exec` skips the connection, the authentication and the login shell.
Its socket lives in labtui's private runtime dir and is named after the
config's path and contents: an edited config gets a fresh mux.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labtui.core.paths import local_runtime_dir

#: Largest answer read from the mux (a command's whole output).
MAX_ANSWER_BYTES = 1 << 30


def mux_socket(config: Path) -> Path:
    """The mux socket for the lab config at config (path and contents decide it)."""
    digest = hashlib.sha256(str(config.resolve()).encode() + b"\0" + config.read_bytes()).hexdigest()[:16]
    return local_runtime_dir() / f"mux-{digest}.sock"


async def ask(socket: Path, request: dict[str, Any]) -> dict[str, Any] | None:
    """Send one request; its answer, or None when no mux took it (none listens, or it is exiting).

    None always means the request did not run.
    """
    try:
        reader, writer = await asyncio.open_unix_connection(str(socket), limit=MAX_ANSWER_BYTES)
    except OSError:  # none listens (or the path is unusable, e.g. too long): the caller runs it itself
        return None
    try:
        writer.write(json.dumps(request).encode() + b"\n")
        await writer.drain()
        line = await reader.readline()
    except ConnectionResetError:  # closed before it accepted us
        return None
    finally:
        writer.close()
    if not line:
        return {"error": "the background mux ended without an answer (the command may have run)"}
    try:
        answer = json.loads(line)
    except ValueError:
        return {"error": f"the background mux answered nonsense: {line[:200]!r}"}
    return None if answer.get("unavailable") else answer


def start_mux(config: Path, socket: Path, warm: Sequence[str]) -> None:
    """Start the mux in the background (it exits at once if one already serves socket)."""
    log = open(socket.with_suffix(".log"), "ab")
    with log:
        subprocess.Popen(
            [sys.executable, "-m", "labtui.hosts.mux", str(config), str(socket), *warm],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
        )
