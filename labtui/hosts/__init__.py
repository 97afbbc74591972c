"""Hosts: the local machine, and SSH hosts declared in the lab config (labtui.toml).

Host, CommandResult and Facts load labtui.hosts.base (and asyncio) on first
use, so a command that only checks the lab config (every command does, in
labtui.cli) does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from labtui.hosts.errors import CommandTimeout, HostError

if TYPE_CHECKING:
    from labtui.hosts.base import CommandResult, Facts, Host

__all__ = ["CommandResult", "CommandTimeout", "Facts", "Host", "HostError", "get_host", "known_hosts"]
_FROM_BASE = ("CommandResult", "Facts", "Host")


def __getattr__(name: str) -> Any:
    """Load one of labtui.hosts.base's names on first use (PEP 562)."""
    if name not in _FROM_BASE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from labtui.hosts import base

    return getattr(base, name)


def known_hosts() -> list[str]:
    """Names accepted by --host: local, then the lab config's hosts."""
    from labtui.hosts.config import load_lab_config

    return ["local", *load_lab_config().hosts]


def get_host(name: str) -> Host:
    """Return the host called name, or raise HostError listing the known ones."""
    if name == "local":
        from labtui.hosts.local import LocalHost

        return LocalHost()
    from labtui.hosts.config import load_lab_config

    lab = load_lab_config()
    if name in lab.hosts:
        from labtui.hosts.ssh import SSHHost

        return SSHHost(lab.hosts[name], resolve=lab.hosts.__getitem__)
    from labtui.core.words import name_list

    where = f" (lab config: {lab.path})" if lab.path else " (no labtui.toml here; --config or LABTUI_CONFIG names one)"
    raise HostError(f"unknown host {name!r}; known hosts: {name_list(['local', *lab.hosts], '`labtui hosts`')}{where}")
