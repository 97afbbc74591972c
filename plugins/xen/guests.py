"""Logging into user domains: guest addresses, readiness, commands and files over SSH.

With ``[hosts.NAME.guests]`` in the lab config, the Xen backend boots that guest kernel for
``image = "guest"``.  Each domain gets the next free address of ``guests.addresses``.  The
address goes on the kernel command line (``ip=``, as Linux's nfsroot documentation gives
it) and in the vif.  labtui reaches the domain over SSH, tunnelled through Domain-0's own
connection.  A domain counts as ready once its sshd answers and a login runs a command.
Files labtui stages into a guest are copied from Domain-0 through the controller.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath

from labtui.backends.kit import (
    BackendError,
    CommandResult,
    GuestLogin,
    Host,
    HostConfig,
    HostError,
    runat,
)

#: ``spec.image`` that boots the lab config's guest kernel.
GUEST_IMAGE = "guest"
#: Seconds between probes of a booting guest's SSH port.
POLL_S = 0.05
#: Seconds one probe of the SSH port may take.
PROBE_TIMEOUT_S = 2.0
#: Clock readings (Domain-0, guest, Domain-0) taken to find a guest's clock offset; the tightest counts.
OFFSET_READINGS = 5


class Guests:
    """The guests of one Domain-0: their addresses and SSH logins."""

    def __init__(self, host: Host, login: GuestLogin) -> None:
        self.host = host
        self.login = login
        self._claimed: set[str] = set()
        self._claim_lock = asyncio.Lock()
        self._logins: dict[str, Host] = {}
        self._staged: dict[tuple[str, str], str] = {}
        self._offsets: dict[str, int] = {}

    # -- addresses -------------------------------------------------------------

    async def claim(self, taken: Iterable[str]) -> str:
        """The first address of the pool that no domain uses and no create in flight holds."""
        async with self._claim_lock:
            busy = set(taken) | self._claimed | {self.login.gateway or ""}
            network = self.login.network
            candidates = 0
            for address in network.hosts() if network.num_addresses > 2 else network:
                candidates += 1
                if str(address) not in busy:
                    self._claimed.add(str(address))
                    return str(address)
        raise BackendError(f"xen backend on host {self.host.name}: no free guest address in "
                           f"{self.login.addresses} (all {candidates} in use)")

    def release(self, address: str) -> None:
        """Give an address back to the pool (its domain is gone or was never made)."""
        self._claimed.discard(address)

    def kernel_args(self, address: str) -> str:
        """``ip=CLIENT::GATEWAY:NETMASK::eth0:off``, the static setup Linux reads at boot."""
        return f"ip={address}::{self.login.gateway or ''}:{self.login.guest_netmask}::eth0:off"

    def vif(self, address: str) -> str:
        """The vif spec: the guest's address on the configured bridge."""
        return f"ip={address},bridge={self.login.bridge}"

    # -- readiness and commands ------------------------------------------------

    async def wait_ready(self, name: str, address: str, deadline: float) -> None:
        """Return once the guest's sshd answers and a login runs ``true``; BackendError at the deadline."""
        last = "no answer yet"
        while time.monotonic() < deadline:
            last = await self._banner(address)
            if not last:
                break
            await asyncio.sleep(POLL_S)
        else:
            raise BackendError(f"xen backend on host {self.host.name}: guest {name} at {address}:{self.login.port} "
                               f"did not answer SSH before the timeout ({last})")
        try:
            result = await self.guest(name, address).run(["true"], timeout=max(1.0, deadline - time.monotonic()))
        except HostError as exc:
            raise BackendError(f"xen backend on host {self.host.name}: logging into guest {name}: {exc}") from exc
        if not result.ok:
            raise BackendError(f"xen backend on host {self.host.name}: guest {name}: `true` exited {result.returncode}")

    async def _banner(self, address: str) -> str:
        """Empty when an SSH server answers at address, else why not."""
        try:
            async with asyncio.timeout(PROBE_TIMEOUT_S), self.host.connect(address, self.login.port) as (reader, _):
                line = await reader.readline()
        except (OSError, TimeoutError, HostError) as exc:
            return str(exc) or type(exc).__name__
        text = line.decode() if isinstance(line, bytes) else line
        return "" if text.startswith("SSH-") else f"not an SSH server: {text.strip()[:60]!r}"

    def guest(self, name: str, address: str) -> Host:
        """The SSH login into a guest (opened on first use, through Domain-0 when it is remote)."""
        login = self._logins.get(name)
        if login is None:
            config = HostConfig(name=f"{self.host.name}/{name}", address=address, port=self.login.port,
                                user=self.login.user, identity=self.login.identity,
                                known_hosts=self.login.known_hosts)
            login = self.host.ssh_login(config)
            self._logins[name] = login
        return login

    async def run(self, name: str, address: str, argv: Sequence[str], timeout: float) -> CommandResult:
        """Run argv in the guest."""
        try:
            return await self.guest(name, address).run(argv, timeout=timeout)
        except HostError as exc:
            raise BackendError(f"xen backend on host {self.host.name}: in guest {name}: {exc}") from exc

    async def stage(self, name: str, address: str, paths: Sequence[str]) -> list[str]:
        """Copy Domain-0's files into the guest's runtime dir (once each); their paths in the guest."""
        guest = self.guest(name, address)
        staged = []
        with tempfile.TemporaryDirectory(prefix="labtui-stage-") as scratch:
            for path in paths:
                known = self._staged.get((name, path))
                if known is None:
                    local = str(Path(scratch) / PurePosixPath(path).name)
                    known = f"{guest.runtime_dir}/bin/{PurePosixPath(path).name}"
                    try:
                        await self.host.get_file(path, local)
                        await guest.put_file(local, known, mode=0o755)
                    except HostError as exc:
                        raise BackendError(f"xen backend on host {self.host.name}: copying {path} into guest "
                                           f"{name}: {exc}") from exc
                    self._staged[(name, path)] = known
                staged.append(known)
        return staged

    async def clock_offset_ns(self, name: str, address: str) -> int:
        """How far the guest's clock is ahead of Domain-0's, from labtui-runat --now on both (measured once).

        Each guest reading is taken between two Domain-0 readings and set against
        their midpoint; of several tries, the one with the tightest pair counts, so the
        error is at most half that round trip.
        """
        if name not in self._offsets:
            at_home = await runat.build(self.host)
            (inside,) = await self.stage(name, address, [at_home])
            best: tuple[int, int] | None = None
            for _ in range(OFFSET_READINGS):
                before = await self._now(self.host, at_home, name)
                guest = await self._now(self.guest(name, address), inside, name)
                after = await self._now(self.host, at_home, name)
                if best is None or after - before < best[0]:
                    best = (after - before, guest - (before + after) // 2)
            assert best is not None
            self._offsets[name] = best[1]
        return self._offsets[name]

    async def _now(self, host: Host, runat_path: str, name: str) -> int:
        try:
            return int((await host.run([runat_path, "--now"], timeout=PROBE_TIMEOUT_S * 5)).check().stdout)
        except (HostError, ValueError) as exc:
            raise BackendError(f"xen backend on host {self.host.name}: reading the clock for guest {name}: "
                               f"{exc}") from exc

    async def forget(self, name: str, address: str | None) -> None:
        """Close the login into a guest that is going away and free its address."""
        login = self._logins.pop(name, None)
        self._offsets.pop(name, None)
        self._staged = {key: value for key, value in self._staged.items() if key[0] != name}
        if address:
            self.release(address)
        if login is not None:
            with contextlib.suppress(Exception):
                await login.close()


def guest_addresses(listing: list[dict]) -> dict[str, str]:
    """Domain name -> its first vif address, from ``xl list -l`` JSON."""
    found = {}
    for domain in listing:
        config = domain.get("config", {}) if isinstance(domain, dict) else {}
        name = config.get("c_info", {}).get("name")
        ips = [nic.get("ip") for nic in config.get("nics", []) if isinstance(nic, dict) and nic.get("ip")]
        if name and ips:
            found[name] = str(ips[0]).split()[0]
    return found
