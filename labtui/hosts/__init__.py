"""Hosts: the local machine, and SSH hosts declared in the lab config (labtui.toml)."""

from labtui.hosts.base import CommandResult, CommandTimeout, Facts, Host, HostError

__all__ = ["CommandResult", "CommandTimeout", "Facts", "Host", "HostError", "get_host", "known_hosts"]


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
