"""The runtimes an engine offers (runc, runsc, ...), read from its ``GET /info`` answer.

A run may choose one with ``backend.runtime``; the engine only knows the
runtimes registered in its ``daemon.json`` (or with ``dockerd --add-runtime``).
"""

from __future__ import annotations

from typing import Any

#: Where a runtime is registered with dockerd (then ``kill -HUP`` dockerd, or restart it).
REGISTER_HINT = ('register it in /etc/docker/daemon.json, e.g. {"runtimes": {"runsc": {"path": "/usr/bin/runsc", '
                 '"runtimeArgs": ["--platform=ptrace", "--network=host"]}}}, then send dockerd SIGHUP')


def offered(info: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """Runtime name -> its runtime arguments, as the engine's info lists them."""
    return {name: tuple((entry or {}).get("runtimeArgs") or ()) for name, entry in (info.get("Runtimes") or {}).items()}


def describe(info: dict[str, Any]) -> str:
    """``runc (default), runsc --platform=ptrace``: every runtime with its arguments, the default marked."""
    default = info.get("DefaultRuntime", "runc")
    return ", ".join(" ".join([name + (" (default)" if name == default else ""), *args])
                     for name, args in sorted(offered(info).items()))


def chosen(runtime: str | None, info: dict[str, Any]) -> str:
    """The runtime containers run with: the one chosen, else the engine's default."""
    return runtime or info.get("DefaultRuntime", "runc")


def refusal(runtime: str | None, info: dict[str, Any]) -> str | None:
    """Why the engine cannot run containers with runtime (None: it can, or none was chosen)."""
    if runtime is None or runtime in offered(info):
        return None
    return f"the engine has no runtime {runtime!r} (it offers: {describe(info) or 'none listed'}); {REGISTER_HINT}"
