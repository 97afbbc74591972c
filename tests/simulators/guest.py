"""A simulated Xen guest image for the Xen simulator: its "kernel" boots into one sshd.

The xl simulator runs a domain's kernel as a process with the config's ``extra`` as its
arguments.  This kernel reads its address from ``ip=`` (as Linux does at boot) and execs
a real OpenSSH sshd listening there, so labtui logs into the domain over real SSH.  Every
guest booted from one image shares its host key, as guests cloned from one disk do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import asyncssh
from sshd_fixture import SSHD, write_key

KERNEL = """#!/bin/sh
# A simulated guest kernel: its userland is one sshd on the address the kernel's ip= gives.
addr=
for arg do
  case "$arg" in ip=*) addr=${{arg#ip=}}; addr=${{addr%%:*}} ;; esac
done
[ -n "$addr" ] || {{ echo "guest: no ip= on the kernel command line" >&2; exit 1; }}
exec {sshd} -D -e -f {config} -o "ListenAddress=$addr:{port}"
"""


@dataclass(frozen=True)
class GuestImage:
    kernel: Path
    port: int
    host_key: asyncssh.SSHKey

    def known_hosts_line(self, pattern: str) -> str:
        """A known_hosts line accepting this image's key at every address matching pattern (``127.0.9.*``)."""
        key = self.host_key.export_public_key("openssh").decode().split()
        return f"[{pattern}]:{self.port} {key[0]} {key[1]}\n"


def make_guest_image(directory: Path, client_pub: Path, port: int) -> GuestImage:
    """Write the image (kernel script, sshd config, host key, authorized key) into directory."""
    directory.mkdir(parents=True, exist_ok=True)
    host_key = directory / "host_ed25519"
    write_key(host_key)
    authorized = directory / "authorized_keys"
    authorized.write_text(client_pub.read_text())
    config = directory / "sshd_config"
    config.write_text("\n".join([
        f"HostKey {host_key}", "PidFile none", f"AuthorizedKeysFile {authorized}",
        "PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "UsePAM no", "StrictModes no", "Subsystem sftp internal-sftp", "LogLevel ERROR",
    ]) + "\n")
    kernel = directory / "vmlinuz-guest"
    kernel.write_text(KERNEL.format(sshd=SSHD, config=config, port=port))
    kernel.chmod(0o755)
    return GuestImage(kernel, port, asyncssh.read_public_key(str(host_key) + ".pub"))
