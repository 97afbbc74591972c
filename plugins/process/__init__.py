"""The process backend: every instance is a plain Linux process tree.

All work on the host is done by ``labtui-agent`` (``agent.c`` beside this
file), compiled on the host on first use and driven through ``host.run``, so
the backend is the same on the local machine and over SSH.  The agent starts
instances in their own session, pid/ipc/uts namespaces and cgroup where the
host allows it, and labels them through their environment (LABTUI_SESSION,
LABTUI_ROLE, LABTUI_INSTANCE), which is how ``list`` finds them again after a
crash and how ``destroy`` proves a pid is still ours before signalling it.
An instance's handle is ``"<pid>:<instance>"``.  With ``capture_output`` the
agent sends the instance's stdout to a file under ``{runtime_dir}/out``, read
back and removed once the instance exited; without it, the instance's stdout
and stderr go to its log, ``{runtime_dir}/logs/<session>/<instance>.log``
(opened by the agent before the boot clock starts), which ``logs`` reads (the
console's ``l``) and ``destroy`` removes.  ``cpu_weight`` and ``cpu_cap``
go to the instance's cgroup (v2 ``cpu.weight``/``cpu.max``, else the v1 cpu
controller's ``cpu.shares``/``cpu.cfs_quota_us``); a weight alone falls back to
nice where neither is writable, a cap fails before anything starts.

``exec`` runs a command inside a running instance through ``labtui-agent exec``:
in the instance's pid/ipc/uts namespaces (setns), its cgroups, CPU affinity,
nice value and labels, as ``docker exec`` runs one in a container.  Instances
share the host's mount namespace, so host paths are the same inside and the
default ``stage`` (paths unchanged) holds.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from labtui.backends.kit import (
    CPU_LIMIT,
    CPU_WEIGHT,
    EXEC,
    HOST_TOOL,
    PINNING,
    STDERR,
    Availability,
    Backend,
    BackendError,
    CommandResult,
    HostError,
    Instance,
    InstanceSpec,
    Labels,
    ProgramUnavailable,
    Usage,
    chunks,
    ensure_program,
    gather_limited,
    lab_name,
    last_line,
    probe_source,
    raise_first,
    tab_records,
)

if TYPE_CHECKING:
    from labtui.backends.kit import Host

AGENT_SOURCE = Path(__file__).resolve().parent / "agent.c"
AGENT_NAME = "labtui-agent"
#: Instances one agent invocation spawns, and handles one invocation kills or measures.
SPAWN_BATCH = 64
HANDLE_BATCH = 256
#: Agent invocations in flight at once (each spawns its batch one by one).
AGENT_CALLS = 8
#: Time an agent call may take beyond the instance's own timeout.
AGENT_SLACK_S = 30.0
#: Most bytes of an instance's log `logs` reads (its end).
LOG_LIMIT = 1 << 20
#: Most bytes of a captured stdout read back.
OUTPUT_LIMIT = 1 << 20
#: What starts the agent's closing record on the stderr of ``exec``.
EXEC_RECORD = "\nlabtui-agent-exec\t"


class ProcessBackend(Backend):
    """Instances are process trees started, found and ended by labtui-agent."""

    name = "process"
    capabilities = frozenset({PINNING, CPU_WEIGHT, CPU_LIMIT, EXEC, HOST_TOOL, STDERR})
    max_parallel_creates = 32
    #: Seconds between SIGTERM and SIGKILL when destroying.
    stop_grace_s = 2.0

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self._binaries: dict[str, str] = {}
        self._isolation = ""

    async def check(self) -> Availability:
        """Usable on Linux hosts where the agent can be built (or is already)."""
        try:
            system, release = (await self.host.run(["uname", "-s", "-r"])).check().stdout.split()
        except (HostError, ValueError) as exc:
            return Availability(False, f"cannot identify host {self.host.name} with uname: {exc}")
        if system != "Linux":
            return Availability(False, f"host {self.host.name} runs {system}; the process backend needs Linux", release)
        try:
            await self._agent()
        except ProgramUnavailable as exc:
            return Availability(False, str(exc), release)
        return Availability(True, "Linux with labtui-agent", release)

    async def prepare(self, programs: Iterable[str]) -> None:
        """Build the agent and the named probes on the host (cached across runs)."""
        await asyncio.gather(self._agent(), *(self._program(name) for name in set(programs)))

    async def create(self, spec: InstanceSpec) -> Instance:
        (instance,) = await self.create_many([spec])
        return instance

    async def create_many(self, specs: Sequence[InstanceSpec]) -> list[Instance]:
        """Create instances in batches, one agent call per batch.

        Specs that differ only in their instance label share a batch.  If any
        batch fails, every instance this call created is destroyed again and
        the first error is raised.
        """
        for spec in specs:
            _validate(spec)
        _check_unique(spec.labels for spec in specs)
        batches = _batches(list(specs))
        results = await gather_limited([self._spawn(batch) for batch in batches], AGENT_CALLS)
        created = [i for r in results if isinstance(r, list) for i in r]
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            await self._destroy_quietly(created)
            raise errors[0]
        by_labels = {i.labels: i for i in created}
        return [by_labels[spec.labels] for spec in specs]

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        await self.destroy_many([instance], force=force)

    async def destroy_many(self, instances: Sequence[Instance], *, force: bool = False) -> None:
        """End instances and their trees; raise BackendError naming any the agent refused.

        Instances created with ``wait="exit"`` were reaped, and their leftovers
        killed, by the agent that ran them: there is nothing left to end.
        """
        live = [i for i in instances if i.state != "exited"]
        _check_handles(live)
        calls = []
        for session in sorted({i.labels.session for i in live}):
            handles = [i.handle for i in live if i.labels.session == session]
            calls += [self._kill(session, chunk, force) for chunk in chunks(handles, HANDLE_BATCH)]
        problems = [p for chunk in raise_first(await gather_limited(calls, AGENT_CALLS)) for p in chunk]
        if problems:
            raise BackendError(f"process backend on host {self.host.name}: " + "; ".join(problems))

    async def list(self, session: str | None = None) -> list[Instance]:
        argv = [await self._agent(), "ps", *(["--session", session] if session else [])]
        result = await self._run_agent(argv)
        if not result.ok:
            raise self._agent_error("ps", result)
        return [self._found(fields) for fields in tab_records(result.stdout) if fields[0] == "proc"]

    async def memory_bytes(self, instance: Instance) -> int | None:
        """Pss (else RSS) summed over the instance's tree; None when it is gone."""
        (used,) = await self.memory_many([instance])
        return used

    async def memory_many(self, instances: Sequence[Instance]) -> list[int | None]:
        """memory_bytes for many instances (usage_many's memory)."""
        return [usage.memory_bytes for usage in await self.usage_many(instances)]

    async def usage_many(self, instances: Sequence[Instance]) -> list[Usage]:
        """Memory and CPU time of many instances, a batch of handles per agent call (``labtui-agent mem``).

        The CPU time is the instance cgroup's (every process it held), else its live tree's with what they reaped.
        """
        _check_handles(instances)
        calls = [self._usage([i.handle for i in chunk]) for chunk in chunks(instances, HANDLE_BATCH)]
        return [usage for chunk in raise_first(await gather_limited(calls, AGENT_CALLS)) for usage in chunk]

    async def shell_argv(self, instance: Instance) -> list[str]:
        """None to give: a process instance is a process tree on the host, not a machine with a terminal."""
        raise BackendError(f"no shell in {instance.name}: a process instance is a process tree on host "
                           f"{self.host.name} with no terminal of its own; e runs one command in it")

    async def exec(self, instance: Instance, argv: Sequence[str], *, timeout: float = 60.0) -> CommandResult:
        """Run argv inside a running instance; the result has its exit code, output and duration.

        The timeout SIGKILLs the command and everything it started (BackendError);
        so does its exit, for whatever it left running.
        """
        if not argv:
            raise BackendError("process backend: exec needs a command")
        _check_handles([instance])
        where = f"process backend on host {self.host.name}: exec {argv[0]} in {instance.name}"
        if instance.state == "exited":
            raise BackendError(f"{where}: the instance ran to its exit; there is nothing to run in")
        command = [await self._agent(), "exec", "--timeout", f"{timeout:g}", instance.handle, "--", *argv]
        result = await self._run_agent(command, timeout=timeout + AGENT_SLACK_S)
        stderr, found, record = result.stderr.rpartition(EXEC_RECORD)
        kind, *fields = record.rstrip("\n").split("\t")
        if found and kind == "error" and fields:
            raise BackendError(f"{where}: {fields[0]}")
        if found and kind == "timeout":
            raise BackendError(f"{where}: ran over {timeout:g} s; killed with what it started")
        if not (found and kind == "exit" and len(fields) == 2 and all(f.lstrip("-").isdigit() for f in fields)):
            raise self._agent_error("exec", result)
        return CommandResult(tuple(argv), int(fields[0]), result.stdout, stderr, int(fields[1]) / 1e9)

    async def logs(self, instance: Instance) -> str | None:
        """The end (LOG_LIMIT bytes) of the instance's stdout and stderr, from the log the agent keeps of it."""
        _check_handles([instance])
        path = f"{self._log_dir(instance.labels.session)}/{instance.labels.instance}.log"
        result = await self._run_agent(["tail", "-c", str(LOG_LIMIT), path])
        if not result.ok:
            why = "its output went to its result" if instance.state == "exited" else last_line(result.stderr)
            raise BackendError(f"process backend on host {self.host.name}: no log of {instance.name} at {path}: {why}")
        return result.stdout

    def _log_dir(self, session: str) -> str:
        """Where the agent keeps the logs of a session's instances (one file each, named by the instance)."""
        return f"{self.host.runtime_dir}/logs/{session}"

    async def isolation(self) -> str:
        """What spawn applies here, from the last spawn or a hello probe run once."""
        if not self._isolation:
            labels = Labels(f"isolation-probe-{secrets.token_hex(4)}", "probe", "hello")
            await self.create(InstanceSpec(labels, program="hello", wait="exit", timeout_s=10.0))
        return self._isolation

    # -- agent calls ---------------------------------------------------------

    async def _spawn(self, specs: list[InstanceSpec]) -> list[Instance]:
        """Start one batch (specs identical but for the instance label) with one agent call."""
        first = specs[0]
        argv = [await self._agent(), "spawn", "--session", first.labels.session, "--role", first.labels.role]
        argv += ["--wait", first.wait]
        if first.wait == "exit":
            argv += ["--timeout", f"{first.timeout_s:g}"]
        if first.cpus:
            argv += ["--cpus", first.cpus]
        if first.start_at is not None:
            argv += ["--start-at", str(int(first.start_at * 1e9))]
        if first.cpu_weight is not None:
            argv += ["--cpu-weight", str(first.cpu_weight)]
        if first.cpu_cap is not None:
            argv += ["--cpu-cap", f"{first.cpu_cap:.6f}"]
        output_path = await self._output_path(first) if first.capture_output else None
        if output_path:
            argv += ["--stdout", output_path, *(["--stderr-too"] if first.capture_stderr else [])]
        else:
            argv += ["--log-dir", self._log_dir(first.labels.session)]
        if first.tool:  # a real tool may count on what a process that is not PID 1 gets (see the agent's --init)
            argv += ["--init"]
        for spec in specs:
            argv += ["--instance", spec.labels.instance]
        argv += ["--", first.tool or await self._program(first.program or ""), *first.args]
        try:
            result = await self._run_agent(argv, timeout=first.timeout_s + AGENT_SLACK_S)
        except (BackendError, asyncio.CancelledError):  # the agent was killed midway (a timeout, an interrupt)
            await self._destroy_batch_leftovers(specs)
            raise
        by_id = {spec.labels.instance: spec for spec in specs}
        records = tab_records(result.stdout)
        started = [fields for fields in records if fields[0] in ("instance", "exit")]
        created = [self._started(fields, by_id[fields[1]]) for fields in started]
        if output_path:
            output = await self._read_output(output_path)
            for instance in created:
                instance.output = output
        if result.ok and len(created) == len(specs):
            return created
        await self._destroy_quietly(created)
        errors = [f"{fields[1]}: {fields[2]}" for fields in records if fields[0] == "error"]
        detail = "; ".join(errors) or last_line(result.stderr)
        raise BackendError(f"process backend on host {self.host.name}: starting {first.tool or first.program}: {detail}")

    async def _kill(self, session: str, handles: list[str], force: bool) -> list[str]:
        """Kill one batch of handles; return the agent's refusals and failures."""
        argv = [await self._agent(), "kill", "--grace", f"{self.stop_grace_s:g}", "--session", session,
                "--log-dir", self._log_dir(session)]
        argv += [*(["--force"] if force else []), *handles]
        result = await self._run_agent(argv, timeout=self.stop_grace_s + AGENT_SLACK_S)
        records = tab_records(result.stdout)
        if len(records) != len(handles):
            raise self._agent_error("kill", result)
        return [f"{f[0]} {f[1]}:{f[2]}: {f[3]}" for f in records if f[0] in ("refused", "failed")]

    async def _usage(self, handles: list[str]) -> list[Usage]:
        """Measure one batch of handles: bytes and CPU ns, None for the ones that are gone."""
        result = await self._run_agent([await self._agent(), "mem", *handles])
        records = tab_records(result.stdout)
        if len(records) != len(handles):
            raise self._agent_error("mem", result)
        refused = [f"{f[1]}:{f[2]}: {f[3]}" for f in records if f[0] == "refused"]
        if refused:
            raise BackendError(f"process backend on host {self.host.name}: memory of " + "; ".join(refused))
        return [Usage(int(f[3]), int(f[4])) if f[0] == "mem" else Usage(None) for f in records]

    async def _output_path(self, spec: InstanceSpec) -> str:
        """A fresh file on the host for one instance's stdout (its directory created)."""
        directory = f"{self.host.runtime_dir}/out"
        result = await self._run_agent(["mkdir", "-p", directory])
        if not result.ok:
            raise BackendError(f"process backend on host {self.host.name}: mkdir {directory}: {last_line(result.stderr)}")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{spec.labels.session}.{spec.labels.instance}")
        return f"{directory}/{safe}.{secrets.token_hex(4)}.out"

    async def _read_output(self, path: str) -> str:
        """Read back (at most OUTPUT_LIMIT bytes of) a captured stdout and remove the file."""
        try:
            result = await self._run_agent(["head", "-c", str(OUTPUT_LIMIT), path])
        finally:
            await self._run_agent(["rm", "-f", path])
        return result.stdout if result.ok else ""

    async def _destroy_quietly(self, instances: Sequence[Instance]) -> None:
        """Best-effort cleanup after a failed create; the create error is what gets reported."""
        try:
            await self.destroy_many(instances, force=True)
        except BackendError:
            pass

    async def _destroy_batch_leftovers(self, specs: list[InstanceSpec]) -> None:
        """After an agent call died midway, end what it started: by label, then by cgroup.

        The instance the agent was waiting for may not have exec'd yet: it has left the
        agent's process group (so the agent's death did not end it) but carries no labels
        until its exec, so no list finds it.  It was created inside its named cgroup,
        which ``kill --session S 0:INSTANCE`` empties and removes.
        """
        wanted = {spec.labels for spec in specs}
        session = specs[0].labels.session
        try:
            found = [i for i in await self.list(session) if i.labels in wanted]
        except BackendError:
            found = []
        await self._destroy_quietly(found)
        unlabelled = sorted(label.instance for label in wanted - {i.labels for i in found})
        for chunk in chunks(unlabelled, HANDLE_BATCH):
            try:
                await self._kill(session, [f"0:{instance}" for instance in chunk], True)
            except BackendError:
                pass

    async def _run_agent(self, argv: list[str], *, timeout: float = 60.0) -> CommandResult:
        try:
            return await self.host.run(argv, timeout=timeout)
        except HostError as exc:
            raise BackendError(f"process backend on host {self.host.name}: {exc}") from exc

    def _agent_error(self, command: str, result: CommandResult) -> BackendError:
        return BackendError(
            f"labtui-agent {command} on host {self.host.name} exited {result.returncode}: {last_line(result.stderr)}"
        )

    # -- binaries ------------------------------------------------------------

    async def _agent(self) -> str:
        return await self._binary(AGENT_NAME, AGENT_SOURCE)

    async def _program(self, probe: str) -> str:
        return await self._binary(probe, probe_source(probe))

    async def _binary(self, name: str, source: Path) -> str:
        if name not in self._binaries:
            self._binaries[name] = await ensure_program(self.host, source, name)
        return self._binaries[name]

    # -- records -> instances ------------------------------------------------

    def _started(self, fields: list[str], spec: InstanceSpec) -> Instance:
        """An instance from a spawn record: instance|exit ID PID WALL_NS BOOT_NS [CODE] ISOLATION."""
        kind, instance_id, pid, wall_ns, boot_ns = fields[:5]
        exit_code = int(fields[5]) if kind == "exit" else None
        self._isolation = fields[-1]
        created_at, boot_s = int(wall_ns) / 1e9, int(boot_ns) / 1e9
        return Instance(
            labels=spec.labels,
            name=lab_name(spec.labels),
            backend=self.name,
            host=self.host.name,
            state="exited" if kind == "exit" else "running",
            created_at=created_at,
            ready_at=created_at + boot_s,
            boot_s=boot_s,
            exit_code=exit_code,
            handle=f"{pid}:{instance_id}",
            details={"pid": int(pid), "isolation": fields[-1], "exit_code": exit_code, "program": spec.program},
        )

    def check_images(self, images: Iterable[str]) -> None:
        """Refuse every image before anything is created: processes run probes and host tools."""
        for image in images:
            raise BackendError(f"backend {self.name} cannot run image {image!r}")

    def _found(self, fields: list[str]) -> Instance:
        """An instance from a ps record: proc PID SESSION ROLE INSTANCE STATE RSS START COMM."""
        _, pid, session, role, instance_id, state, rss, started, comm = fields
        labels = Labels(session, role, instance_id)
        return Instance(
            labels=labels,
            name=lab_name(labels),
            backend=self.name,
            host=self.host.name,
            state="zombie" if state == "Z" else "running",
            created_at=float(started),
            handle=f"{pid}:{instance_id}",
            details={"pid": int(pid), "proc_state": state, "rss_bytes": int(rss), "comm": comm},
        )


BACKEND = ProcessBackend


def _validate(spec: InstanceSpec) -> None:
    if spec.image:
        raise BackendError(f"process backend runs probes, not images: got image {spec.image!r}")
    if bool(spec.program) == bool(spec.tool):
        raise BackendError("process backend needs one of spec.program, the name of a probe such as 'sleeper', "
                           "or spec.tool, the absolute path of a program on the host")
    if spec.tool is not None and (not spec.tool.startswith("/") or any(c in spec.tool for c in "\t\n\0")):
        raise BackendError(f"process backend: spec.tool must be an absolute path on the host, not {spec.tool!r}")
    if spec.capture_stderr and not spec.capture_output:
        raise BackendError("process backend: capture_stderr goes with capture_output")
    if spec.mem_limit_bytes is not None:
        raise BackendError("process backend cannot limit memory: it has no mem_limit capability")
    if spec.wait not in ("ready", "exit"):
        raise BackendError(f"process backend: wait must be 'ready' or 'exit', not {spec.wait!r}")
    if spec.capture_output and spec.wait != "exit":
        raise BackendError("process backend: capture_output needs wait='exit' (the output is read after the exit)")
    if spec.cpu_weight is not None and not 1 <= spec.cpu_weight <= 10000:
        raise BackendError(f"process backend: cpu_weight must be from 1 to 10000, not {spec.cpu_weight}")
    if spec.cpu_cap is not None and not 0.01 <= spec.cpu_cap <= 1024:
        raise BackendError(f"process backend: cpu_cap must be at least 0.01 CPUs, not {spec.cpu_cap}")
    for value in (spec.labels.session, spec.labels.role, spec.labels.instance):
        if not value or len(value) > 255 or any(c in value for c in "\t\n\0"):
            raise BackendError(f"process backend: bad label {value!r} (1-255 characters, no tabs or newlines)")


def _check_unique(labels: Iterable[Labels]) -> None:
    seen: set[tuple[str, str]] = set()
    for label in labels:
        key = (label.session, label.instance)
        if key in seen:
            raise BackendError(f"process backend: instance {label.instance!r} requested twice in one create")
        seen.add(key)


def _batches(specs: list[InstanceSpec]) -> list[list[InstanceSpec]]:
    """Group specs that one agent call can start: same everything but the instance.

    ``wait="exit"`` instances are reaped by the agent one at a time, so each
    gets its own call.
    """
    groups: dict[tuple, list[InstanceSpec]] = {}
    for index, spec in enumerate(specs):
        key = (spec.labels.session, spec.labels.role, spec.program, spec.tool, spec.args, spec.cpus, spec.wait,
               spec.timeout_s, spec.capture_output, spec.capture_stderr, spec.start_at, spec.cpu_weight, spec.cpu_cap)
        alone = spec.wait == "exit" or spec.capture_output
        groups.setdefault(key + ((index,) if alone else ()), []).append(spec)
    return [chunk for group in groups.values() for chunk in chunks(group, SPAWN_BATCH)]


def _check_handles(instances: Iterable[Instance]) -> None:
    for instance in instances:
        if ":" not in instance.handle:
            raise BackendError(f"process backend: {instance.name} has no pid:instance handle")
