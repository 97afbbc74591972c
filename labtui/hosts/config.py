"""The lab config: which SSH hosts labtui can drive, one ``[hosts.NAME]`` table each.

The file is ``labtui.toml`` in the current directory, or the file named by
``LABTUI_CONFIG`` (which ``--config`` sets).  A missing default file means "no
SSH hosts"; a missing file that was named explicitly is an error.  Every error
names the file, the line and the host.
"""

from __future__ import annotations

import ipaddress
import os
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labtui.hosts.errors import HostError

CONFIG_ENV = "LABTUI_CONFIG"
DEFAULT_FILE = "labtui.toml"
DEFAULT_KNOWN_HOSTS = "~/.ssh/known_hosts"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_KEYS = (
    "address", "port", "user", "identity", "known_hosts", "tags", "jump",
    "runtime_dir", "connect_timeout_s", "keepalive_s", "path", "persist_s", "guests",
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BRIDGE = re.compile(r"[A-Za-z0-9_.-]{1,15}")
_GUEST_KEYS = ("kernel", "ramdisk", "addresses", "netmask", "gateway", "bridge", "port", "user", "identity",
               "known_hosts")


class ConfigError(HostError):
    """The lab config is malformed; the message names file, line and host."""

    exit_status = 2


@dataclass(frozen=True, slots=True)
class GuestLogin:
    """``[hosts.NAME.guests]``: how labtui boots guests on this host and logs into them over SSH.

    The Xen backend boots ``kernel`` (and ``ramdisk``) for ``image = "guest"``, gives each
    domain the next free address of ``addresses`` (kernel ``ip=`` and ``vif``), and runs
    commands in it over SSH through the host's own connection.
    """

    kernel: str
    addresses: str
    ramdisk: str | None = None
    netmask: str | None = None
    gateway: str | None = None
    bridge: str = "xenbr0"
    port: int = 22
    user: str | None = None
    identity: str | None = None
    known_hosts: str = DEFAULT_KNOWN_HOSTS

    @property
    def network(self) -> ipaddress.IPv4Network:
        """``addresses`` as a network (host bits allowed)."""
        return ipaddress.IPv4Network(self.addresses, strict=False)

    @property
    def guest_netmask(self) -> str:
        """The netmask guests are given: ``netmask``, else that of ``addresses``."""
        return self.netmask or str(self.network.netmask)


@dataclass(frozen=True, slots=True)
class HostConfig:
    """One SSH host as declared in the lab config."""

    name: str
    address: str
    port: int = 22
    user: str | None = None
    identity: str | None = None
    known_hosts: str = DEFAULT_KNOWN_HOSTS
    tags: tuple[str, ...] = ()
    jump: str | None = None
    runtime_dir: str | None = None
    connect_timeout_s: float = 10.0
    keepalive_s: float = 15.0
    #: PATH for every command run on the host (None: the login's own PATH).
    path: str | None = None
    #: Seconds `labtui exec` keeps the connection open in its background mux after the
    #: last command, for the next commands (0: no mux; like OpenSSH's ControlPersist).
    persist_s: float = 0.0
    #: Guests on this host that labtui logs into (``[hosts.NAME.guests]``), None when not set.
    guests: GuestLogin | None = None
    source: str = field(default="", compare=False)

    @property
    def known_hosts_path(self) -> Path:
        return Path(self.known_hosts).expanduser()

    @property
    def identity_path(self) -> Path | None:
        return Path(self.identity).expanduser() if self.identity else None

    @property
    def known_hosts_pattern(self) -> str:
        """How this host is written in known_hosts (``[addr]:port`` off port 22)."""
        return self.address if self.port == 22 else f"[{self.address}]:{self.port}"


@dataclass(frozen=True, slots=True)
class LabConfig:
    path: Path | None
    hosts: dict[str, HostConfig]


def config_path() -> tuple[Path, bool]:
    """The lab config to read, and whether it was named explicitly (LABTUI_CONFIG)."""
    named = os.environ.get(CONFIG_ENV)
    if named:
        return Path(named).expanduser(), True
    return Path.cwd() / DEFAULT_FILE, False


def load_lab_config(path: Path | None = None) -> LabConfig:
    """Read and validate the lab config (the default location when path is None)."""
    explicit = path is not None
    if path is None:
        path, explicit = config_path()
    if not path.is_file():
        if explicit:
            raise ConfigError(f"{path}: lab config not found")
        return LabConfig(None, {})
    text = _read(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    return LabConfig(path, _parse(path, text, data))


def named_config_error() -> str | None:
    """What is wrong with a lab config named by --config or $LABTUI_CONFIG (missing, not TOML, a bad host), None
    when it is fine or none is named: said before a command that needs no host, so it is not passed over."""
    if not config_path()[1]:
        return None
    try:
        load_lab_config()
    except ConfigError as exc:
        return str(exc)
    return None


def _read(path: Path) -> str:
    """The config's text; a file that cannot be read or is not UTF-8 text is a ConfigError."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the lab config: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a UTF-8 text file (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
                          "a lab config is TOML") from None


def _parse(path: Path, text: str, data: dict[str, Any]) -> dict[str, HostConfig]:
    for key in data:
        if key != "hosts":
            raise ConfigError(f"{path}:{_line(text, key)}: unknown table or key {key!r} (known: hosts)")
    tables = data.get("hosts", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"{path}:{_line(text, 'hosts')}: 'hosts' must be tables like [hosts.NAME]")
    hosts = {name: _host(path, text, name, table) for name, table in tables.items()}
    for host in hosts.values():
        _check_jump(path, text, host, hosts)
    return hosts


def _host(path: Path, text: str, name: str, table: Any) -> HostConfig:
    where = f"{path}:{_line(text, name)}: host {name!r}"
    if not _NAME.fullmatch(name) or name == "local":
        raise ConfigError(f"{where}: bad host name (letters, digits, '.', '_', '-'; 'local' is reserved)")
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: must be a table [hosts.{name}]")

    def fail(key: str, why: str) -> ConfigError:
        return ConfigError(f"{path}:{_line(text, name, key)}: host {name!r}: {key}: {why}")

    for key in table:
        if key not in _KEYS:
            raise fail(key, f"unknown key (known: {', '.join(_KEYS)})")
    if "address" not in table:
        raise ConfigError(f"{where}: 'address' is required")
    values: dict[str, Any] = {}
    for key in ("address", "user", "identity", "known_hosts", "jump", "runtime_dir", "path"):
        if key in table:
            value = table[key]
            if not isinstance(value, str) or not value.strip() or _CONTROL.search(value):
                raise fail(key, f"must be a non-empty string without control characters, not {value!r}")
            values[key] = value
    port = table.get("port", 22)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise fail("port", f"must be an integer 1-65535, not {port!r}")
    values["port"] = port
    if "identity" in values:
        _check_identity(values["identity"], fail)
    tags = table.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t and not _CONTROL.search(t) for t in tags):
        raise fail("tags", f"must be a list of non-empty strings, not {tags!r}")
    values["tags"] = tuple(tags)
    if "persist_s" in table:
        value = table["persist_s"]
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise fail("persist_s", f"must be a number of seconds >= 0, not {value!r}")
        values["persist_s"] = float(value)
    for key in ("connect_timeout_s", "keepalive_s"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise fail(key, f"must be a positive number of seconds, not {value!r}")
            values[key] = float(value)
    if "runtime_dir" in values and not values["runtime_dir"].startswith("/"):
        raise fail("runtime_dir", f"must be an absolute path on the host, not {values['runtime_dir']!r}")
    if "guests" in table:
        values["guests"] = _guests(path, text, name, table["guests"])
    return HostConfig(name=name, source=str(path), **values)


def _guests(path: Path, text: str, name: str, table: Any) -> GuestLogin:
    """The ``[hosts.NAME.guests]`` table."""
    if not isinstance(table, dict):
        raise ConfigError(f"{path}:{_line(text, name, 'guests')}: host {name!r}: guests: must be a table "
                          f"[hosts.{name}.guests]")

    def fail(key: str, why: str) -> ConfigError:
        return ConfigError(f"{path}:{_line(text, name, key, sub='guests')}: host {name!r}: guests.{key}: {why}")

    for key in table:
        if key not in _GUEST_KEYS:
            raise fail(key, f"unknown key (known: {', '.join(_GUEST_KEYS)})")
    values: dict[str, Any] = {}
    for key in ("kernel", "ramdisk", "addresses", "netmask", "gateway", "bridge", "user", "identity", "known_hosts"):
        if key in table:
            value = table[key]
            if not isinstance(value, str) or not value.strip() or _CONTROL.search(value):
                raise fail(key, f"must be a non-empty string without control characters, not {value!r}")
            values[key] = value
    if "identity" in values:
        _check_identity(values["identity"], fail)
    for key in ("kernel", "addresses"):
        if key not in values:
            raise ConfigError(f"{path}:{_line(text, name, sub='guests')}: host {name!r}: guests: {key!r} is required")
    try:
        ipaddress.IPv4Network(values["addresses"], strict=False)
    except ValueError as exc:
        raise fail("addresses", f"must be an IPv4 range like 10.0.0.16/28: {exc}") from None
    for key in ("netmask", "gateway"):
        if key in values:
            try:
                ipaddress.IPv4Address(values[key])
            except ValueError:
                raise fail(key, f"must be an IPv4 address, not {values[key]!r}") from None
    if "bridge" in values and not _BRIDGE.fullmatch(values["bridge"]):
        raise fail("bridge", f"must be a network interface name (letters, digits, '.', '_', '-'; at most 15), "
                             f"not {values['bridge']!r}")
    port = table.get("port", 22)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise fail("port", f"must be an integer 1-65535, not {port!r}")
    values["port"] = port
    return GuestLogin(**values)


def _check_identity(identity: str, fail: Callable[[str, str], ConfigError]) -> None:
    """An identity file that exists must be a private key SSH can load (a missing one fails at connect)."""
    path = Path(identity).expanduser()
    if not path.is_file():
        return
    import asyncssh  # only when an identity is named: the import costs a tenth of a second

    try:
        asyncssh.read_private_key(path)
    except (asyncssh.KeyImportError, OSError, ValueError) as exc:
        raise fail("identity", f"{path} is not a private key labtui can use ({exc})") from None


def _check_jump(path: Path, text: str, host: HostConfig, hosts: dict[str, HostConfig]) -> None:
    seen = [host.name]
    current = host
    while current.jump is not None:
        if current.jump not in hosts:
            raise ConfigError(
                f"{path}:{_line(text, current.name, 'jump')}: host {current.name!r}: jump: "
                f"no host {current.jump!r} in this file"
            )
        if current.jump in seen:
            raise ConfigError(
                f"{path}:{_line(text, host.name, 'jump')}: host {host.name!r}: jump: "
                f"loop {' -> '.join([*seen, current.jump])}"
            )
        seen.append(current.jump)
        current = hosts[current.jump]


def _line(text: str, name: str, key: str | None = None, *, sub: str | None = None) -> int:
    """Best-effort line of [hosts.NAME] or [hosts.NAME.SUB] (or of KEY inside it, or of a top-level NAME)."""
    lines = text.splitlines()
    table = rf"[\"']?{re.escape(name)}[\"']?" + (rf"\s*\.\s*{re.escape(sub)}" if sub else "")
    header = re.compile(rf"\s*\[\s*hosts\s*\.\s*{table}\s*\]")
    top = re.compile(rf"\s*(\[\s*)?[\"']?{re.escape(name)}[\"']?\s*(=|\]|\.)")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        return next((i + 1 for i, line in enumerate(lines) if top.match(line)), 1)
    if key is None:
        return start + 1
    assignment = re.compile(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=")
    for i in range(start + 1, len(lines)):
        if lines[i].lstrip().startswith("["):
            break
        if assignment.match(lines[i]):
            return i + 1
    return start + 1
