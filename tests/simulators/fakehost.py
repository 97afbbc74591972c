"""Fake illumos and Xen hosts for tests: a real sshd on loopback whose PATH starts with the simulators.

A fake host is a directory: ``bin/`` holds symlinks to the simulator scripts beside this
file, ``state/`` holds their state and ``state/sim.json`` the test's knobs.  The lab config
gives the host ``path = "<bin>:/usr/bin:/bin"`` (the per-host PATH of labtui's lab config),
so every command labtui runs over SSH finds the simulated tools first.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from sshd_fixture import Sshd, host_table, start_sshd, write_key

HERE = Path(__file__).resolve().parent
TOOLS = {"zones": ("zonecfg", "zoneadm", "zlogin", "kstat"), "xen": ("xl", "xm")}


@dataclass
class FakeHost:
    name: str
    root: Path
    server: Sshd

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def path(self) -> str:
        return f"{self.bin}:/usr/bin:/bin"

    def knobs(self, **values: object) -> None:
        """Replace the simulator knobs (delays, injected failures, hanging commands)."""
        (self.state / "sim.json").write_text(json.dumps(values))

    def tool(self, *argv: str, input: str | None = None) -> subprocess.CompletedProcess:
        """Run a simulated tool directly (to seed state or inspect it)."""
        env = {**os.environ, "PATH": self.path, "LABTUI_SIM_STATE": str(self.state)}
        return subprocess.run(argv, env=env, capture_output=True, text=True, input=input, timeout=60)

    def table(self, tmp: Path) -> str:
        return host_table(self.name, self.server, tmp, path=self.path)

    def known_hosts_line(self) -> str:
        key = self.server.host_key.export_public_key("openssh").decode().split()
        return f"[{self.server.address}]:{self.server.port} {key[0]} {key[1]}\n"


def start_fake_host(root: Path, name: str, address: str, kind: str, client_pub: Path, *,
                    tools: tuple[str, ...] | None = None) -> FakeHost:
    """Make the host directory (symlinks to kind's simulators, or just tools) and start its sshd."""
    (root / "bin").mkdir(parents=True)
    (root / "state").mkdir()
    for tool in tools if tools is not None else TOOLS[kind]:
        (root / "bin" / tool).symlink_to(HERE / tool)
    server = start_sshd(root / "sshd", address, client_pub)
    return FakeHost(name, root, server)


def write_lab(tmp: Path, hosts: list[FakeHost], keys: Path) -> Path:
    """A lab config naming the fake hosts, with the client key and known_hosts copied into tmp."""
    for suffix in ("", ".pub"):
        (tmp / f"client_key{suffix}").write_bytes((keys / f"client_key{suffix}").read_bytes())
    os.chmod(tmp / "client_key", 0o600)
    (tmp / "known_hosts").write_text("".join(h.known_hosts_line() for h in hosts))
    config = tmp / "labtui.toml"
    config.write_text("".join(h.table(tmp) for h in hosts))
    return config


__all__ = ["FakeHost", "start_fake_host", "write_lab", "write_key"]
