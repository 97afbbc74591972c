"""Real OpenSSH sshd processes on loopback addresses, each with its own host key (for tests).

Each server runs in the foreground (``sshd -D``) from its own config file in a
temporary directory: its own host key, authorized_keys and pid file, key
authentication only.  Used by tests/hosts/test_ssh_host.py and tests/perf.

``sftp=False`` leaves out the ``Subsystem sftp`` line, as hardened hosts do:
such a server refuses the SFTP subsystem and labtui must move files over exec
channels.  ``LABTUI_TEST_SSHD_SFTP=0`` in the environment makes that the
default for every server the tests start.
"""

from __future__ import annotations

import getpass
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import asyncssh

SSHD = "/usr/sbin/sshd"


def sshd_available() -> bool:
    return os.access(SSHD, os.X_OK)


def free_port(address: str) -> int:
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def write_key(path: Path) -> asyncssh.SSHKey:
    """A new ed25519 key pair at path (private, 0600) and path.pub."""
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(path))
    key.write_public_key(str(path) + ".pub")
    os.chmod(path, 0o600)
    return key


@dataclass
class Sshd:
    """One running sshd: address, port, its host key, and the process."""

    address: str
    port: int
    directory: Path
    host_key: asyncssh.SSHKey
    proc: subprocess.Popen
    sftp: bool = True

    @property
    def fingerprint(self) -> str:
        return self.host_key.get_fingerprint("sha256")

    def descendants(self) -> list[int]:
        """PIDs of every process below this sshd (connection handlers and their commands)."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], [self.proc.pid]
        while todo:
            for child in children.get(todo.pop(), []):
                found.append(child)
                todo.append(child)
        return found

    def signal_all(self, signum: int) -> None:
        """Send signum to sshd and everything below it (the 'host' dies or freezes).

        Spared: pyenv, which a login shell's rc file may be running (root's ~/.bashrc runs
        `pyenv init` on the development machine).  `pyenv rehash` holds a lock file in the
        machine's ~/.pyenv while it runs; killed there, it leaves the lock behind and every
        later login shell on the machine waits 60 s for it.
        """
        for pid in [self.proc.pid, *self.descendants()]:
            if _is_pyenv(pid):
                continue
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        self.signal_all(signal.SIGCONT)
        self.signal_all(signal.SIGKILL)
        self.proc.wait(timeout=10)


def sftp_default() -> bool:
    """Whether servers offer SFTP unless told: yes, but LABTUI_TEST_SSHD_SFTP=0 says no."""
    return os.environ.get("LABTUI_TEST_SSHD_SFTP", "1") != "0"


def _is_pyenv(pid: int) -> bool:
    try:
        return b"pyenv" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def start_sshd(
    directory: Path, address: str, client_pub: Path, *, host_key: Path | None = None, sftp: bool | None = None,
    port: int | None = None, extra: tuple[str, ...] = (),
) -> Sshd:
    """Start sshd on address (a free port, unless given) accepting client_pub; wait until it listens.

    sftp: offer the SFTP subsystem (default: sftp_default()); extra: more sshd_config lines.
    """
    if sftp is None:
        sftp = sftp_default()
    directory.mkdir(parents=True, exist_ok=True)
    if host_key is None:
        host_key = directory / "host_ed25519"
        write_key(host_key)
    authorized = directory / "authorized_keys"
    authorized.write_text(client_pub.read_text())
    port = port or free_port(address)
    config = directory / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"ListenAddress {address}",
                f"Port {port}",
                f"HostKey {host_key}",
                f"PidFile {directory / 'sshd.pid'}",
                f"AuthorizedKeysFile {authorized}",
                "PermitRootLogin prohibit-password",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "MaxSessions 10",
                "StrictModes no",
                *(["Subsystem sftp internal-sftp"] if sftp else []),
                "AllowTcpForwarding yes",
                "AllowStreamLocalForwarding yes",
                "LogLevel ERROR",
                *extra,
            ]
        )
        + "\n"
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # sshd's privilege separation directory
    log = open(directory / "sshd.log", "ab")
    proc = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(config)], stdout=log, stderr=log, start_new_session=True
    )
    log.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection((address, port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"sshd on {address}:{port} did not start: {(directory / 'sshd.log').read_text()}") from None
            time.sleep(0.02)
    return Sshd(address, port, directory, asyncssh.read_public_key(str(host_key) + ".pub"), proc, sftp)


def host_table(name: str, server: Sshd, tmp: Path, **extra: object) -> str:
    """A [hosts.NAME] table for server using the test client key and known_hosts in tmp."""
    values: dict[str, object] = {
        "address": server.address,
        "port": server.port,
        "user": getpass.getuser(),
        "identity": str(tmp / "client_key"),
        "known_hosts": str(tmp / "known_hosts"),
        "runtime_dir": str(tmp / f"runtime-{name}"),
        "tags": ["lab"],
        **extra,
    }

    def toml(value: object) -> str:
        if isinstance(value, str):
            return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(value, list):
            return "[" + ", ".join(toml(v) for v in value) + "]"
        return str(value)

    return f"[hosts.{name}]\n" + "".join(f"{k} = {toml(v)}\n" for k, v in values.items()) + "\n"
