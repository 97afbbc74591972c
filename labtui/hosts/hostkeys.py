"""Host key verification against known_hosts, and recording a key on purpose.

labtui never connects with verification off: keys come from the host's
known_hosts file only.  When a host offers a key that is not recorded (or not
the recorded one), the refusal shows the offered key's fingerprint and says how
to trust it (``labtui hosts trust NAME``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import asyncssh

from labtui.core.paths import make_private_dirs
from labtui.hosts.config import HostConfig
from labtui.hosts.errors import HostError


class HostKeyRefused(HostError):
    """The host offered a key that its known_hosts file does not vouch for."""


def known_hosts_for(config: HostConfig) -> asyncssh.SSHKnownHosts:
    """The host's known_hosts file loaded (an empty set when the file does not exist yet)."""
    path = config.known_hosts_path
    try:
        return asyncssh.import_known_hosts(path.read_text() if path.exists() else "")
    except (OSError, ValueError) as exc:
        raise HostError(f"host {config.name}: cannot read known_hosts {path}: {exc}") from exc


def recorded_keys(config: HostConfig) -> list[asyncssh.SSHKey]:
    """Keys known_hosts records for this host's address and port."""
    port = None if config.port == 22 else config.port
    return list(known_hosts_for(config).match(config.address, config.address, port)[0])


def fingerprint(key: asyncssh.SSHKey) -> str:
    """``ssh-ed25519 SHA256:...``: the algorithm and the SHA256 fingerprint, as ssh shows it."""
    return f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"


async def offered_key(
    config: HostConfig, *, tunnel: asyncssh.SSHClientConnection | None = None, like: Sequence[asyncssh.SSHKey] = ()
) -> asyncssh.SSHKey:
    """The key the host offers (of the recorded keys' algorithms when like is given)."""
    algs = sorted({k.get_algorithm() for k in like}) or ()
    try:
        key = await asyncio.wait_for(
            asyncssh.get_server_host_key(
                config.address,
                config.port,
                tunnel=tunnel if tunnel is not None else (),
                server_host_key_algs=algs,
                config=[],
            ),
            config.connect_timeout_s,
        )
    except (OSError, asyncssh.Error, TimeoutError) as exc:
        raise HostError(f"host {config.name}: cannot fetch the host key from {_where(config)}: {exc}") from exc
    if key is None:
        raise HostError(f"host {config.name}: {_where(config)} offered no host key")
    return key


async def refusal(config: HostConfig, tunnel: asyncssh.SSHClientConnection | None = None) -> HostKeyRefused:
    """Explain why the host's key was refused, with the offered key's fingerprint."""
    recorded = recorded_keys(config)
    try:
        key = await offered_key(config, tunnel=tunnel, like=recorded)
        offered = fingerprint(key)
    except HostError as exc:
        offered = f"unknown ({exc})"
    trust = f"labtui hosts trust {config.name}"
    if not recorded:
        return HostKeyRefused(
            f"host {config.name} ({_where(config)}): unknown host key {offered}, not in {config.known_hosts_path}. "
            f"If that fingerprint is the host's, record it with `{trust}`."
        )
    old = ", ".join(fingerprint(k) for k in recorded)
    return HostKeyRefused(
        f"host {config.name} ({_where(config)}): HOST KEY CHANGED: offered {offered}, "
        f"{config.known_hosts_path} records {old}. This can be an attack; if the host was really "
        f"reinstalled, run `{trust} --replace`."
    )


@dataclass(frozen=True, slots=True)
class TrustResult:
    fingerprint: str
    path: Path
    action: str  # "recorded", "replaced" or "already trusted"


async def trust(
    config: HostConfig,
    *,
    replace: bool = False,
    expect: str | None = None,
    tunnel: asyncssh.SSHClientConnection | None = None,
) -> TrustResult:
    """Record the key the host offers now in its known_hosts file.

    A different recorded key is kept (and this refuses) unless replace is set;
    expect, a ``SHA256:...`` fingerprint, must match the offered key.
    """
    key = await offered_key(config, tunnel=tunnel)
    shown = fingerprint(key)
    if expect is not None and key.get_fingerprint("sha256") != expect:
        raise HostKeyRefused(f"host {config.name}: offered {shown}, not the expected {expect}; nothing recorded")
    path = config.known_hosts_path
    recorded = recorded_keys(config)
    if any(k.public_data == key.public_data for k in recorded):
        return TrustResult(shown, path, "already trusted")
    action = "recorded"
    if recorded:
        if not replace:
            old = ", ".join(fingerprint(k) for k in recorded)
            raise HostKeyRefused(
                f"host {config.name}: {path} records {old} but the host offers {shown}; "
                f"re-run with --replace to swap the recorded key"
            )
        _drop_plain_entries(path, config.known_hosts_pattern)
        if recorded_keys(config):
            raise HostKeyRefused(
                f"host {config.name}: {path} still records an old key (hashed or wildcard entry); remove it by hand"
            )
        action = "replaced"
    algorithm, blob = key.export_public_key("openssh").decode().split()[:2]
    _append(path, f"{config.known_hosts_pattern} {algorithm} {blob}\n")
    return TrustResult(shown, path, action)


def _append(path: Path, line: str) -> None:
    make_private_dirs(path.parent)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(line)


def _drop_plain_entries(path: Path, pattern: str) -> None:
    """Remove lines whose host list names exactly pattern (hashed lines are left alone)."""
    kept = []
    for line in path.read_text().splitlines(keepends=True):
        hosts = line.split(maxsplit=1)[0].split(",") if line.strip() and not line.startswith("#") else []
        if pattern not in hosts:
            kept.append(line)
    tmp = path.with_name(f".{path.name}.labtui-tmp")
    tmp.write_text("".join(kept))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _where(config: HostConfig) -> str:
    return f"{config.address}:{config.port}"
