"""A fork server for mutation runs: imports the heavy libraries once, then runs pytest in a fresh fork per mutant.

Each mutant's test command would otherwise spend most of its time importing scipy, numpy, polars and pytest
(10-40 s on a loaded machine, for tests that take one second).  The server imports them once and never
imports labtui, so every forked child imports the mutated module from the tree afresh.

    python tests/mutation/forkserver.py serve SOCKET            # run.py starts and stops it per target
    python tests/mutation/forkserver.py run SOCKET TIMEOUT -- PYTEST_ARGS...   # the test command
The client exits with pytest's status; 1 when the child died (a crash, or TIMEOUT seconds passed: a hang).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import sys

#: Imported once by the server; none of them imports labtui.
PRELOAD = ("numpy", "scipy.stats", "polars", "pyarrow", "duckdb", "pytest", "_pytest.python", "asyncio")


def serve(path: str) -> None:
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    assert not any(m == "labtui" or m.startswith("labtui.") for m in sys.modules), "the server must not import labtui"
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        request = json.loads(conn.makefile("r").readline())
        if os.fork() == 0:
            server.close()
            _child(conn, request)
        conn.close()


def _child(conn: socket.socket, request: dict) -> None:
    status = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.alarm(max(1, int(request["timeout"])))  # a mutant that hangs dies here: the client sees no status
        os.chdir(request["cwd"])
        sys.path.insert(0, request["cwd"])
        os.environ.update(request["env"])
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        import pytest

        status = int(pytest.main(request["args"]))
    finally:
        try:
            conn.sendall(f"{status}\n".encode())
        finally:
            os._exit(0)


def run(path: str, timeout: float, args: list[str]) -> int:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    env = {k: v for k, v in os.environ.items() if k.startswith(("LABTUI_", "TMPDIR"))}
    log = path + ".last.log"
    client.sendall((json.dumps({"cwd": os.getcwd(), "args": args, "timeout": timeout, "env": env, "log": log}) + "\n")
                   .encode())
    answer = client.makefile("r").readline().strip()
    return int(answer) if answer.isdigit() else 1


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "run":
        rest = sys.argv[4:]
        sys.exit(run(sys.argv[2], float(sys.argv[3]), rest[1:] if rest[:1] == ["--"] else rest))
    else:
        sys.exit(f"usage: {sys.argv[0]} serve SOCKET | run SOCKET TIMEOUT -- PYTEST_ARGS...")
