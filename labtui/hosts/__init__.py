"""Hosts: the local machine now, SSH hosts through the lab config."""

from labtui.hosts.base import CommandResult, CommandTimeout, Facts, Host, HostError

__all__ = ["CommandResult", "CommandTimeout", "Facts", "Host", "HostError", "get_host", "known_hosts"]


def known_hosts() -> list[str]:
    """Names accepted by --host."""
    return ["local"]


def get_host(name: str) -> Host:
    """Return the host called name, or raise HostError listing the known ones."""
    if name == "local":
        from labtui.hosts.local import LocalHost

        return LocalHost()
    raise HostError(f"unknown host {name!r}; known hosts: {', '.join(known_hosts())}")
