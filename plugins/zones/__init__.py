"""The zones backend: every instance is an illumos zone, driven with the host's own tools.

A create configures the zone from a generated zonecfg command file (its lab labels in
``attr`` resources), installs it (or clones ``spec.image``, a template zone), boots it and,
when the spec names a probe, runs it inside with zlogin.  The probe binary is built in the
global zone's runtime dir and lofs-mounted read-only into the zone at the same path.  A spec's
``start_at`` (the host's clock) is held in the zone by labtui-runat, built and mounted the same
way, which sleeps until then on the host's CLOCK_REALTIME.  Each phase is timed into
``Instance.details`` (configure_s, install_s, boot_s, creation_s, run_s).
A failed phase undoes the earlier ones (uninstall -F, zonecfg delete -F), so nothing is left
half-made.  Commands are found through the host's PATH (``path`` in the lab config).
``logs`` reads the zone's console as zoneadmd keeps it, ``<zonepath>/logs/console.log`` (one
bunyan JSON object a line: usr/src/cmd/zoneadmd/log.c), since ``zlogin -C`` is interactive.
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
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from labtui.backends.kit import (
    CPU_LIMIT,
    CPU_WEIGHT,
    EXEC,
    MEM_LIMIT,
    Availability,
    Backend,
    BackendError,
    CommandResult,
    HostError,
    HostTools,
    Instance,
    InstanceSpec,
    Labels,
    ProgramUnavailable,
    last_line,
)
from labtui.backends.kit import (
    runat as runat_tool,
)

from .listing import ACTIVE, ZoneEntry, parse_zoneadm_list, rss_by_zoneid
from .names import PREFIX, check_name, zone_name
from .zonecfg import Fs, ZoneConfig, command_file, labels_from_attrs, parse_attrs

if TYPE_CHECKING:
    from labtui.backends.kit import Host

#: Seconds any single administrative command may take when the spec gives no tighter bound.
COMMAND_TIMEOUT_S = 3600.0
#: Seconds for quick queries (list, info, kstat).
QUERY_TIMEOUT_S = 60.0
#: Most bytes of a console log `logs` reads (its end).
LOG_LIMIT = 1 << 20


class ZonesBackend(Backend):
    """Instances are non-global zones on an illumos host."""

    name = "zones"
    capabilities = frozenset({EXEC, CPU_LIMIT, CPU_WEIGHT, MEM_LIMIT})
    #: zoneadm install holds the package system; a few in flight is what admins do.
    max_parallel_creates = 4
    #: Parent of every zone's zonepath.
    zonepath_base = "/zones"

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self._tools = HostTools(self.name, host, command_timeout_s=COMMAND_TIMEOUT_S)

    async def check(self) -> Availability:
        """Usable where ``zoneadm list -p`` answers in the global zone."""
        try:
            result = await self.host.run(["zoneadm", "list", "-p"], timeout=QUERY_TIMEOUT_S)
        except HostError as exc:
            return Availability(False, f"zoneadm not usable on host {self.host.name}: {exc}")
        if not result.ok:
            return Availability(False, f"zoneadm list on host {self.host.name}: {last_line(result.stderr)}")
        try:
            version = (await self.host.run(["uname", "-v"], timeout=QUERY_TIMEOUT_S)).stdout.strip()
        except HostError:
            version = ""
        return Availability(True, "illumos zones (zoneadm answers)", version)

    async def prepare(self, programs: Sequence[str]) -> None:
        """Build the named probes in the global zone (cached across runs)."""
        await asyncio.gather(*(self._tools.program(name) for name in set(programs)))

    async def isolation(self) -> str:
        return "zone(shared-ip,lofs-ro-probes)"

    # -- create --------------------------------------------------------------

    async def create(self, spec: InstanceSpec) -> Instance:
        _validate(spec)
        name = zone_name(spec.labels)
        deadline = time.monotonic() + spec.timeout_s
        binary = await self._tools.program(spec.program) if spec.program else None
        runat = await self._runat() if spec.start_at is not None else None
        shared = sorted({str(PurePosixPath(path).parent) for path in (binary, runat) if path})
        fss = tuple(Fs(directory, directory) for directory in shared)
        config = ZoneConfig(
            zonepath=f"{self.zonepath_base}/{name}",
            labels=spec.labels,
            fss=fss,
            cpu_shares=spec.cpu_weight,  # the same relative scale: every labtui zone gets one explicitly
            capped_cpus=spec.cpu_cap,
            capped_memory_mib=None if spec.mem_limit_bytes is None else max(1, spec.mem_limit_bytes // 2**20),
        )
        created_at = time.time()
        details: dict[str, object] = {"zone": name, "zonepath": config.zonepath, "template": spec.image}
        started = time.monotonic()
        await self._configure(name, command_file(config), deadline)
        details["configure_s"] = time.monotonic() - started
        try:
            phase = time.monotonic()
            if spec.image:
                await self._zoneadm(name, ["clone", check_name(spec.image)], deadline)
            else:
                await self._zoneadm(name, ["install"], deadline)
            details["install_s"] = time.monotonic() - phase
            phase = time.monotonic()
            await self._zoneadm(name, ["boot"], deadline)
            details["boot_s"] = time.monotonic() - phase
            ready = time.monotonic()
            details["creation_s"] = ready - started
            instance = Instance(labels=spec.labels, name=name, backend=self.name, host=self.host.name,
                                state="running", created_at=created_at, ready_at=created_at + (ready - started),
                                boot_s=ready - started, handle=name, details=details)
            if binary:
                await self._start_program(instance, spec, binary, runat, deadline, started)
            return instance
        except BaseException:
            with contextlib.suppress(BackendError, HostError, asyncio.TimeoutError):
                await asyncio.shield(self._teardown(name, force=True))
            raise

    async def _configure(self, name: str, commands: str, deadline: float) -> None:
        remote = f"{self.host.runtime_dir}/zonecfg/{name}.cfg"
        with tempfile.NamedTemporaryFile("w", suffix=".cfg", delete=False) as local:
            local.write(commands)
        try:
            await self.host.put_file(local.name, remote, mode=0o600)
        except HostError as exc:
            raise BackendError(f"zones backend on host {self.host.name}: writing {remote}: {exc}") from exc
        finally:
            os.unlink(local.name)
        try:
            result = await self._tools.run(["zonecfg", "-z", name, "-f", remote], deadline)
            if not result.ok:
                raise self._tools.error(f"zonecfg -z {name} -f {remote}", result)
        finally:
            with contextlib.suppress(HostError):
                await self.host.run(["rm", "-f", remote], timeout=QUERY_TIMEOUT_S)

    async def _runat(self) -> str:
        """The path of labtui-runat in the global zone's runtime dir."""
        try:
            return await runat_tool.build(self.host)
        except (ProgramUnavailable, HostError) as exc:
            raise self._tools.fail(f"building {runat_tool.NAME}: {exc}") from exc

    async def _start_program(self, instance: Instance, spec: InstanceSpec, binary: str, runat: str | None,
                             deadline: float, started: float) -> None:
        """Run the probe in the zone: to its exit (wait="exit") or detached (wait="ready").

        With ``spec.start_at`` the probe runs under labtui-runat, which holds it until then
        on the host's clock and reports its host-clock start and end (``details["start_ns"]``,
        ``details["end_ns"]``) on stderr; the probe's stdout is left as it printed it.
        """
        argv: tuple[str, ...] = (binary, *spec.args)
        if runat is not None:
            assert spec.start_at is not None  # runat is built only for a held start
            argv = (runat, str(runat_tool.at_ns(spec.start_at)), "--", *argv)
        words = " ".join(shlex.quote(w) for w in argv)
        if spec.wait == "ready":
            result = await self._tools.run(["zlogin", "-S", instance.name, f"({words}) </dev/null >/dev/null 2>&1 &"],
                                     deadline)
            if not result.ok:
                raise self._tools.error(f"zlogin {instance.name}", result)
            return
        phase = time.monotonic()
        result = await self._tools.run(["zlogin", "-S", instance.name, words], deadline)
        ended = time.monotonic()
        if result.returncode in (1, 127) and result.stderr.startswith(("zlogin:", "sh:")):
            raise self._tools.error(f"zlogin {instance.name} {spec.program}", result)
        if runat is not None:
            times = runat_tool.closing_line(result.stderr)
            complaint = runat_tool.complaint(result.stderr)
            if times is None or complaint:
                raise self._tools.fail(f"zlogin {instance.name} {runat_tool.NAME} ... {spec.program} exited "
                                       f"{result.returncode}: {complaint or last_line(result.stderr)}")
            instance.details["start_ns"], instance.details["end_ns"] = times[:2]
        instance.details["run_s"] = ended - phase
        instance.details["exit_code"] = result.returncode
        instance.state, instance.exit_code = "exited", result.returncode
        instance.boot_s = ended - started
        assert instance.created_at is not None
        instance.ready_at = instance.created_at + instance.boot_s  # an exited instance is ready when it exited
        if spec.capture_output:
            instance.output = result.stdout

    # -- destroy -------------------------------------------------------------

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        """Halt, uninstall and delete a zone whose attrs carry the instance's labels."""
        entry = await self._entry(instance.handle)
        if entry is None:
            return
        labels = await self._labels(instance.handle)
        if labels != instance.labels:
            raise BackendError(f"zones backend on host {self.host.name}: refusing to destroy zone "
                               f"{instance.handle}: its labels {labels} are not {instance.labels}")
        await self._teardown(instance.handle, force=force, entry=entry)

    async def _teardown(self, name: str, *, force: bool, entry: ZoneEntry | None = None) -> None:
        """Walk the zone down the state machine: halt, uninstall -F, zonecfg delete -F."""
        deadline = time.monotonic() + COMMAND_TIMEOUT_S
        entry = entry or await self._entry(name)
        if entry is None:
            return
        if entry.state in ACTIVE:
            await self._zoneadm(name, ["halt"], deadline)
        if entry.state != "configured":
            await self._zoneadm(name, ["uninstall", "-F"], deadline)
        result = await self._tools.run(["zonecfg", "-z", name, "delete", "-F"], deadline)
        if not result.ok and "No such zone configured" not in result.stderr:
            raise self._tools.error(f"zonecfg -z {name} delete -F", result)

    # -- list, memory, exec --------------------------------------------------

    async def list(self, session: str | None = None) -> list[Instance]:
        found = []
        for entry in await self._entries():
            if not entry.name.startswith(PREFIX):
                continue
            labels = await self._labels(entry.name)
            if labels is None or (session is not None and labels.session != session):
                continue
            found.append(Instance(labels=labels, name=entry.name, backend=self.name, host=self.host.name,
                                  state=entry.state, handle=entry.name,
                                  details={"zoneid": entry.zoneid, "zonepath": entry.zonepath, "uuid": entry.uuid,
                                           "brand": entry.brand, "ip_type": entry.ip_type}))
        return found

    async def memory_bytes(self, instance: Instance) -> int | None:
        (used,) = await self.memory_many([instance])
        return used

    async def memory_many(self, instances: Sequence[Instance]) -> list[int | None]:
        """RSS per zone from the memory_cap kstats: one zoneadm list and one kstat call for all."""
        entries = {e.name: e for e in await self._entries()}
        result = await self._tools.run(["kstat", "-p", "memory_cap:::rss"], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            raise self._tools.error("kstat -p memory_cap:::rss", result)
        rss = rss_by_zoneid(result.stdout)
        out: list[int | None] = []
        for instance in instances:
            entry = entries.get(instance.handle)
            if entry is None:
                out.append(None)
            else:
                out.append(rss.get(entry.zoneid, 0) if entry.zoneid is not None else 0)
        return out

    async def exec(self, instance: Instance, argv: Sequence[str], *, timeout: float = 60.0) -> CommandResult:
        """Run argv in the zone with zlogin (which hands its arguments to the zone's shell, hence quoted)."""
        if not argv:
            raise BackendError("zones backend: exec needs a command")
        try:
            return await self.host.run(["zlogin", "-S", instance.handle, " ".join(shlex.quote(a) for a in argv)],
                                       timeout=timeout)
        except HostError as exc:
            raise BackendError(f"zones backend on host {self.host.name}: zlogin {instance.handle}: {exc}") from exc

    async def shell_argv(self, instance: Instance) -> list[str]:
        """``zlogin <zone>`` on the zone's host: a login shell in the zone on this terminal."""
        if instance.state != "running":
            raise BackendError(f"no shell in zone {instance.handle}: it is {instance.state}, not running")
        return self.host.terminal_argv(["zlogin", instance.handle])

    async def logs(self, instance: Instance) -> str | None:
        """The zone's console output: the console stream of zoneadmd's ``<zonepath>/logs/console.log`` (its end)."""
        zonepath = str(instance.details.get("zonepath") or f"{self.zonepath_base}/{instance.handle}")
        path = f"{zonepath}/logs/console.log"
        result = await self._tools.run(["tail", "-c", str(LOG_LIMIT), path], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            raise BackendError(f"zones backend on host {self.host.name}: no console log of zone {instance.handle} "
                               f"at {path}: {last_line(result.stderr)}")
        return console_text(result.stdout)

    # -- helpers -------------------------------------------------------------

    async def _entries(self) -> list[ZoneEntry]:
        result = await self._tools.run(["zoneadm", "list", "-cp"], time.monotonic() + QUERY_TIMEOUT_S)
        if not result.ok:
            raise self._tools.error("zoneadm list -cp", result)
        try:
            return parse_zoneadm_list(result.stdout)
        except ValueError as exc:
            raise BackendError(f"zones backend on host {self.host.name}: {exc}") from None

    async def _entry(self, name: str) -> ZoneEntry | None:
        return next((e for e in await self._entries() if e.name == name), None)

    async def _labels(self, name: str) -> Labels | None:
        result = await self._tools.run(["zonecfg", "-z", name, "info", "attr"], time.monotonic() + QUERY_TIMEOUT_S)
        return labels_from_attrs(parse_attrs(result.stdout)) if result.ok else None

    async def _zoneadm(self, name: str, args: list[str], deadline: float) -> None:
        result = await self._tools.run(["zoneadm", "-z", name, *args], deadline)
        if not result.ok:
            raise self._tools.error(f"zoneadm -z {name} {' '.join(args)}", result)

BACKEND = ZonesBackend


def _validate(spec: InstanceSpec) -> None:
    if spec.tool is not None or spec.capture_stderr:
        raise BackendError("zones backend runs labtui's probes in zones: no tool from the host, no stderr capture")
    if spec.cpus:
        raise BackendError("zones backend: no pinning to CPUs (a zone gets CPUs through a pool, which labtui "
                           "does not configure); cpu_cap and cpu_weight are honoured")
    if spec.cpu_cap is not None and spec.cpu_cap < 0.01:
        raise BackendError(f"zones backend: capped-cpu ncpus must be at least 0.01, not {spec.cpu_cap:g}")
    if spec.wait not in ("ready", "exit"):
        raise BackendError(f"zones backend: wait must be 'ready' or 'exit', not {spec.wait!r}")
    if spec.wait == "exit" and not spec.program:
        raise BackendError("zones backend: wait='exit' needs spec.program, the probe to run in the zone")
    if spec.capture_output and spec.wait != "exit":
        raise BackendError("zones backend: capture_output needs wait='exit'")
    if spec.start_at is not None and not spec.program:
        raise BackendError("zones backend: start_at needs spec.program, the probe whose start is held")


def console_text(log: str) -> str:
    """The console's output from zoneadmd's log lines: each console record's message, CR LF as LF.

    Other streams (the log file's own open and close events) are left out, and so is a first line
    cut by reading the file's end.
    """
    out = []
    for line in log.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("stream") == "console":
            out.append(str(record.get("msg", "")).replace("\r\n", "\n").replace("\r", ""))
    return "".join(out)
