"""The Xen backend: every instance is a user domain created from Domain-0 with xl (else xm).

A create writes a domain config (labels in the domain name and in comments), runs
``xl create`` and, for ``wait="exit"``, polls ``xl list`` until the domain has powered off
(``on_poweroff="destroy"``).  ``spec.image`` names a guest kernel on Domain-0; ``spec.program``
names a probe built on Domain-0 and given as the kernel, which suits a simulated dom0 or a
unikernel build of the probe.  ``spec.args`` become the kernel command line (``extra``),
``spec.cpus`` the vCPU pinning (``xl vcpu-pin``), ``spec.mem_limit_bytes`` the domain memory,
``spec.cpu_weight`` and ``spec.cpu_cap`` the credit scheduler's weight and cap (``xl sched-credit``).
With ``[hosts.NAME.guests]`` in the lab config, ``image = "guest"`` boots that guest kernel with
an address of its own and the backend can exec in the domain over SSH (``guests.py``).
Commands are found through the host's PATH (``path`` in the lab config).
``logs`` reads a domain's console as xenconsoled logs it, ``<console_log_dir>/guest-<domain>.log``
(``/var/log/xen/console``, written when xenconsoled runs with ``--log=guest``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shlex
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from labtui.backends.kit import (
    CPU_LIMIT,
    CPU_WEIGHT,
    EXEC,
    MEM_LIMIT,
    PINNING,
    Availability,
    Backend,
    BackendError,
    CommandResult,
    HostError,
    HostTools,
    Instance,
    InstanceSpec,
    last_line,
)

from .domconfig import DomainConfig, domain_name, labels_from_name, render
from .guests import GUEST_IMAGE, Guests, guest_addresses
from .listing import Domain, parse_info, parse_list

if TYPE_CHECKING:
    from labtui.backends.kit import Host

QUERY_TIMEOUT_S = 60.0
#: Most bytes of a console log `logs` reads (its end).
LOG_LIMIT = 1 << 20
#: Seconds between ``xl list`` polls while waiting for a domain to power off.
POLL_S = 0.05
DEFAULT_MEMORY_MB = 128
#: The credit scheduler's default weight, which InstanceSpec.cpu_weight's default (100) maps to.
CREDIT_WEIGHT_DEFAULT = 256


class XenBackend(Backend):
    """Instances are Xen user domains."""

    name = "xen"
    capabilities = frozenset({PINNING, MEM_LIMIT, CPU_WEIGHT, CPU_LIMIT})
    max_parallel_creates = 4

    #: Where xenconsoled writes each guest's console (its --log-dir); a guest's is guest-<domain>.log.
    console_log_dir = "/var/log/xen/console"

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self._tool: str | None = None
        self._tools = HostTools(self.name, host)
        login = getattr(getattr(host, "config", None), "guests", None)
        self.guests = Guests(host, login) if login is not None else None
        if self.guests is not None:
            self.capabilities = XenBackend.capabilities | {EXEC}
        else:
            self.exec_hint = ("labtui runs commands in domains it logs into, which needs a Domain-0 from the lab "
                              f"config with a [hosts.{host.name}.guests] table (docs/backend-xen.md)")

    async def check(self) -> Availability:
        """Usable where ``xl info`` (else ``xm info``) answers."""
        reasons = []
        for tool in ("xl", "xm"):
            try:
                result = await self.host.run([tool, "info"], timeout=QUERY_TIMEOUT_S)
            except HostError as exc:
                reasons.append(str(exc))
                continue
            if result.ok:
                self._tool = tool
                info = parse_info(result.stdout)
                return Availability(True, f"Xen Domain-0 with {tool}", info.get("xen_version", ""))
            reasons.append(f"{tool} info exited {result.returncode}: {last_line(result.stderr)}")
        return Availability(False, f"no Xen toolstack on host {self.host.name}: " + "; ".join(reasons))

    async def prepare(self, programs: Sequence[str]) -> None:
        await asyncio.gather(*(self._tools.program(p) for p in set(programs)))

    async def isolation(self) -> str:
        return f"xen-pv({await self.tool()})"

    async def tool(self) -> str:
        """``xl`` where it answers, else ``xm``; BackendUnavailable-style error when neither does."""
        if self._tool is None:
            availability = await self.check()
            if not availability.usable:
                raise BackendError(availability.reason)
        assert self._tool is not None
        return self._tool

    # -- create --------------------------------------------------------------

    async def create(self, spec: InstanceSpec) -> Instance:
        _validate(spec)
        name = domain_name(spec.labels)
        deadline = time.monotonic() + spec.timeout_s
        tool = await self.tool()
        memory = -(-spec.mem_limit_bytes // (1 << 20)) if spec.mem_limit_bytes else DEFAULT_MEMORY_MB
        extra = " ".join(shlex.quote(a) for a in spec.args)
        address = None
        if spec.image == GUEST_IMAGE:
            guests = self._guests()
            address = await guests.claim((await self._guest_addresses()).values())
            config = DomainConfig(name=name, labels=spec.labels, kernel=guests.login.kernel, memory_mb=memory,
                                  ramdisk=guests.login.ramdisk, extra=f"{guests.kernel_args(address)} {extra}".strip(),
                                  vifs=(guests.vif(address),))
        else:
            kernel = spec.image or await self._tools.program(spec.program or "")
            config = DomainConfig(name=name, labels=spec.labels, kernel=kernel, memory_mb=memory, extra=extra)
        remote = f"{self.host.runtime_dir}/xen/{name}.cfg"
        created_at = time.time()
        started = time.monotonic()
        try:
            await self._write(render(config), remote)
            result = await self._tools.run([tool, "create", remote], deadline)
            if not result.ok:
                raise self._tools.error(f"{tool} create {remote}", result)
            created = time.monotonic()
            if address is not None:
                await self._guests().wait_ready(name, address, deadline)
            ready = time.monotonic()
            instance = Instance(labels=spec.labels, name=name, backend=self.name, host=self.host.name,
                                state="running", created_at=created_at, ready_at=created_at + (ready - started),
                                boot_s=ready - started, handle=name,
                                details={"domain": name, "tool": tool, "kernel": config.kernel, "memory_mb": memory,
                                         "create_s": created - started})
            if address is not None:
                instance.details.update(guest_address=address, login_s=ready - created)
            if spec.cpus:
                await self.pin(instance, "all", spec.cpus)
            if spec.cpu_weight is not None or spec.cpu_cap is not None:
                weight, cap = credit_params(spec)
                await self.set_credit(instance, weight=weight, cap=cap)
                instance.details.update(credit_weight=weight, credit_cap=cap)
            if spec.wait == "exit":
                await self._wait_gone(name, deadline)
                ended = time.monotonic()
                instance.state, instance.exit_code, instance.boot_s = "exited", 0, ended - started
            return instance
        except BaseException:
            with contextlib.suppress(BackendError, HostError):
                await asyncio.shield(self._destroy_name(name))
            if self.guests is not None:
                await asyncio.shield(self.guests.forget(name, address))
            raise
        finally:
            with contextlib.suppress(HostError):
                await self.host.run(["rm", "-f", remote], timeout=QUERY_TIMEOUT_S)

    async def _wait_gone(self, name: str, deadline: float) -> None:
        """Poll until the domain has powered off (and was destroyed by on_poweroff)."""
        while True:
            if name not in {d.name for d in await self._domains()}:
                return
            if time.monotonic() > deadline:
                raise BackendError(f"xen backend on host {self.host.name}: domain {name} still running at its timeout")
            await asyncio.sleep(POLL_S)

    # -- controls ------------------------------------------------------------

    async def pin(self, instance: Instance, vcpu: str, cpus: str) -> None:
        """Pin a vCPU (or ``all``) of the domain to a CPU list (``xl vcpu-pin``)."""
        tool = await self.tool()
        result = await self._tools.run([tool, "vcpu-pin", instance.handle, vcpu, cpus], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            raise self._tools.error(f"{tool} vcpu-pin {instance.handle}", result)

    async def set_credit(self, instance: Instance, *, weight: int | None = None, cap: int | None = None) -> None:
        """Set the credit scheduler's weight (1-65535) and/or cap (% of one CPU, 0 = none)."""
        if weight is None and cap is None:
            raise BackendError("xen backend: set_credit needs a weight or a cap")
        tool = await self.tool()
        argv = [tool, "sched-credit", "-d", instance.handle]
        argv += [*(["-w", str(weight)] if weight is not None else []), *(["-c", str(cap)] if cap is not None else [])]
        result = await self._tools.run(argv, time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            # xl prints libxl's reason, then "libxl_domain_sched_params_set failed.": keep both.
            reason = "; ".join(line.strip() for line in result.stderr.splitlines() if line.strip())
            raise self._tools.fail(f"{' '.join(argv)} exited {result.returncode}: {reason or last_line(result.stdout)}")

    async def host_memory(self) -> tuple[int, int]:
        """Total and free host memory in bytes, from ``xl info``."""
        tool = await self.tool()
        result = await self._tools.run([tool, "info"], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            raise self._tools.error(f"{tool} info", result)
        info = parse_info(result.stdout)
        try:
            return int(info["total_memory"]) << 20, int(info["free_memory"]) << 20
        except (KeyError, ValueError) as exc:
            raise BackendError(f"xen backend on host {self.host.name}: {tool} info lacks memory figures: {exc}") from None

    # -- destroy, list, memory -----------------------------------------------

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        """Shut the domain down (``shutdown -w``, or ``destroy`` when forced or when that fails)."""
        if labels_from_name(instance.handle) != instance.labels:
            raise BackendError(f"xen backend: refusing to destroy domain {instance.handle!r}: "
                               f"its name does not carry the labels {instance.labels}")
        if self.guests is not None:
            await self.guests.forget(instance.handle, instance.details.get("guest_address"))
        if instance.handle not in {d.name for d in await self._domains()}:
            return
        if not force:
            tool = await self.tool()
            with contextlib.suppress(BackendError):
                result = await self._tools.run([tool, "shutdown", "-w", instance.handle], time.monotonic() + 30.0)
                if result.ok:
                    return
        await self._destroy_name(instance.handle)

    async def _destroy_name(self, name: str) -> None:
        tool = await self.tool()
        result = await self._tools.run([tool, "destroy", name], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok and "invalid domain identifier" not in result.stderr and "does not exist" not in result.stderr:
            raise self._tools.error(f"{tool} destroy {name}", result)

    async def list(self, session: str | None = None) -> list[Instance]:
        """labtui's domains; on a host with guests, each with its ``guest_address`` (from ``xl list -l``)."""
        found = []
        addresses = await self._guest_addresses() if self.guests is not None and await self.tool() == "xl" else {}
        for domain in await self._domains():
            labels = labels_from_name(domain.name)
            if labels is None or (session is not None and labels.session != session):
                continue
            details = {"domid": domain.domid, "mem_mib": domain.mem_mib, "vcpus": domain.vcpus,
                       "xen_state": domain.state, "cpu_time_s": domain.cpu_time_s}
            if domain.name in addresses:
                details["guest_address"] = addresses[domain.name]
            found.append(Instance(labels=labels, name=domain.name, backend=self.name, host=self.host.name,
                                  state="running", handle=domain.name, details=details))
        return found

    async def memory_bytes(self, instance: Instance) -> int | None:
        (used,) = await self.memory_many([instance])
        return used

    # -- inside guests (with [hosts.NAME.guests]) ----------------------------

    async def logs(self, instance: Instance) -> str | None:
        """The domain's console output so far (its end), from the log xenconsoled keeps of it."""
        path = f"{self.console_log_dir}/guest-{instance.handle}.log"
        result = await self._tools.run(["tail", "-c", str(LOG_LIMIT), path], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            raise BackendError(f"xen backend on host {self.host.name}: no console log of domain {instance.handle} at "
                               f"{path} ({last_line(result.stderr)}); xenconsoled writes one only when it runs with "
                               "--log=guest (XENCONSOLED_TRACE=guest in /etc/default/xencommons)")
        return result.stdout

    async def exec(self, instance: Instance, argv: Sequence[str], *, timeout: float = 60.0) -> CommandResult:
        """Run argv in the domain's guest over SSH."""
        if not argv:
            raise BackendError("xen backend: exec needs a command")
        return await self._guests().run(instance.handle, await self._address(instance), argv, timeout)

    async def shell_argv(self, instance: Instance) -> list[str]:
        """``xl console <domain>`` (``xm`` where xl is missing) in Domain-0: the guest's console; ctrl+] leaves it."""
        return self.host.terminal_argv([await self.tool(), "console", instance.handle])

    async def stage(self, instance: Instance, paths: Sequence[str]) -> list[str]:
        """Copy Domain-0's files into the domain's guest; their paths there."""
        return await self._guests().stage(instance.handle, await self._address(instance), paths)

    async def clock_offset_ns(self, instance: Instance) -> int:
        """How far the guest's clock is ahead of Domain-0's (measured once per domain)."""
        offset = await self._guests().clock_offset_ns(instance.handle, await self._address(instance))
        instance.details["clock_offset_ns"] = offset
        return offset

    def _guests(self) -> Guests:
        if self.guests is None:
            raise BackendError(f"xen backend: host {self.host.name} has no [hosts.{self.host.name}.guests] in the "
                               f"lab config, so labtui cannot boot a guest it logs into (image = {GUEST_IMAGE!r}) "
                               "or run commands inside domains")
        return self.guests

    async def _address(self, instance: Instance) -> str:
        """The guest's address: recorded at create, else read back from ``xl list -l``."""
        address = instance.details.get("guest_address") or (await self._guest_addresses()).get(instance.handle)
        if not address:
            raise BackendError(f"xen backend on host {self.host.name}: domain {instance.handle} has no guest address "
                               f"(it was not booted with image = {GUEST_IMAGE!r})")
        return str(address)

    async def _guest_addresses(self) -> dict[str, str]:
        """Every domain's vif address from ``xl list -l`` (xm has no JSON listing)."""
        tool = await self.tool()
        if tool != "xl":
            raise BackendError(f"xen backend on host {self.host.name}: guests that labtui logs into need xl "
                               "(xm lists no vif addresses labtui can read)")
        result = await self._tools.run([tool, "list", "-l"], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            raise self._tools.error(f"{tool} list -l", result)
        try:
            return guest_addresses(json.loads(result.stdout or "[]"))
        except (ValueError, AttributeError) as exc:
            raise BackendError(f"xen backend on host {self.host.name}: {tool} list -l is not the JSON "
                               f"labtui reads: {exc}") from None

    async def memory_many(self, instances: Sequence[Instance]) -> list[int | None]:
        """Each domain's current memory from one ``xl list`` (MiB, as xl reports it)."""
        by_name = {d.name: d for d in await self._domains()}
        return [by_name[i.handle].mem_mib << 20 if i.handle in by_name else None for i in instances]

    # -- helpers -------------------------------------------------------------

    async def _domains(self) -> list[Domain]:
        tool = await self.tool()
        result = await self._tools.run([tool, "list"], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            raise self._tools.error(f"{tool} list", result)
        try:
            return parse_list(result.stdout)
        except ValueError as exc:
            raise BackendError(f"xen backend on host {self.host.name}: {exc}") from None

    async def _write(self, text: str, remote: str) -> None:
        with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as local:
            local.write(text)
        try:
            await self.host.put_file(local.name, remote, mode=0o600)
        except HostError as exc:
            raise BackendError(f"xen backend on host {self.host.name}: writing {remote}: {exc}") from exc
        finally:
            os.unlink(local.name)

BACKEND = XenBackend


def credit_params(spec: InstanceSpec) -> tuple[int | None, int | None]:
    """The credit weight (256 is the default) and cap (% of one CPU) for the spec's cpu_weight and cpu_cap."""
    weight = None if spec.cpu_weight is None else max(1, round(spec.cpu_weight * CREDIT_WEIGHT_DEFAULT / 100))
    cap = None if spec.cpu_cap is None else max(1, round(spec.cpu_cap * 100))
    return weight, cap


def _validate(spec: InstanceSpec) -> None:
    if spec.tool is not None or spec.capture_stderr:
        raise BackendError("xen backend runs guest kernels and labtui's probes: no tool from the host, no stderr "
                           "capture")
    if not spec.image and not spec.program:
        raise BackendError("xen backend: needs spec.image (a guest kernel on Domain-0) or spec.program (a probe)")
    if spec.wait not in ("ready", "exit"):
        raise BackendError(f"xen backend: wait must be 'ready' or 'exit', not {spec.wait!r}")
    if spec.capture_output:
        raise BackendError("xen backend: cannot capture a domain's output (no console capture); use measure='boot'")
    if spec.start_at is not None:
        raise BackendError("xen backend: cannot hold a domain's start until a given time")
    if spec.cpu_weight is not None and not 1 <= spec.cpu_weight <= 10000:
        raise BackendError(f"xen backend: cpu_weight must be from 1 to 10000, not {spec.cpu_weight}")
    if spec.cpu_cap is not None and not spec.cpu_cap >= 0.01:
        raise BackendError(f"xen backend: cpu_cap must be at least 0.01 CPUs (a 1% credit cap), not {spec.cpu_cap}")
