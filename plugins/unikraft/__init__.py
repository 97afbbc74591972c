"""The unikraft backend: unikernels on qemu-system-x86_64, started and found by labtui.

An instance is one QEMU process booting a unikernel: a real Unikraft image
(``spec.image``) or one of labtui's multiboot test kernels (``spec.program``:
``hello``, ``sleeper``, ``spinner``, built from ``suites/kernels``).  QEMU is
started through ``labtui-qemu`` (``launcher.c``, compiled on the host), which
times the boot on the host and checks labels before it touches a process.
See docs/backend-unikraft.md.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from labtui.backends import PINNING, Availability, Backend, BackendError, Instance, InstanceSpec, Labels
from labtui.hosts.base import CommandResult, HostError
from labtui.kernels import ensure_kernel
from labtui.native import ProgramUnavailable, ensure_program
from labtui.plugin_kit import chunks, lab_name, last_line, tab_records

from .images import load_image, test_kernel_launch
from .qemu import QEMU, Launch, decode_exit, qemu_argv
from .state import StateDir, check_labels, labels_from_name, root, vm_name

HELPER_SOURCE = Path(__file__).resolve().parent / "launcher.c"
HELPER_NAME = "labtui-qemu"
HANDLE_BATCH = 256
#: Time a helper call may take beyond the instance's own timeout.
SLACK_S = 30.0
#: Which accelerator to use: "auto" (KVM when /dev/kvm is usable, else TCG), "kvm" or "tcg".
ACCEL_ENV = "LABTUI_UNIKRAFT_ACCEL"


class UnikraftBackend(Backend):
    """Instances are QEMU processes, labelled through -name and a state directory."""

    name = "unikraft"
    capabilities = frozenset({PINNING})
    max_parallel_creates = 16
    #: Seconds QEMU gets to quit after QMP "quit" before it is killed.
    stop_grace_s = 2.0

    def __init__(self, host) -> None:  # noqa: ANN001 - a labtui Host
        super().__init__(host)
        self._helper_path = ""
        self._accel = ""

    async def check(self) -> Availability:
        """Usable when qemu-system-x86_64 runs and the helper builds."""
        try:
            result = await self.host.run([QEMU, "--version"])
        except HostError as exc:
            return Availability(False, f"{QEMU} not found on host {self.host.name}: install qemu-system-x86 ({exc})")
        if not result.ok:
            return Availability(False, f"{QEMU} --version failed on host {self.host.name}: {result.stderr.strip()}")
        version = result.stdout.splitlines()[0] if result.stdout else ""
        try:
            await self._helper()
        except ProgramUnavailable as exc:
            return Availability(False, str(exc), version)
        return Availability(True, f"QEMU with {await self.accel()}", version)

    async def prepare(self, programs: Iterable[str]) -> None:
        """Build the helper and the named test kernels on the host (cached)."""
        await asyncio.gather(self._helper(), self.accel(), *(ensure_kernel(self.host, p) for p in set(programs)))

    async def accel(self) -> str:
        """"kvm" or "tcg": LABTUI_UNIKRAFT_ACCEL, else KVM when /dev/kvm is readable and writable."""
        if not self._accel:
            wanted = os.environ.get(ACCEL_ENV, "auto")
            if wanted not in ("auto", "kvm", "tcg"):
                raise BackendError(f"{ACCEL_ENV}={wanted!r}: expected auto, kvm or tcg")
            if wanted == "auto":
                usable = await self.host.run(["test", "-r", "/dev/kvm", "-a", "-w", "/dev/kvm"])
                wanted = "kvm" if usable.ok else "tcg"
            self._accel = wanted
        return self._accel

    async def isolation(self) -> str:
        """Hardware virtualization under KVM, or QEMU's TCG emulation."""
        return "hvm-kvm" if await self.accel() == "kvm" else "tcg-emulation"

    # -- create --------------------------------------------------------------

    async def create(self, spec: InstanceSpec) -> Instance:
        """Boot one instance; wait for its console marker, or for its exit."""
        check_labels(spec.labels)
        launch = await self._launch(spec)
        accel = await self.accel()
        state = StateDir.of(self.host.runtime_dir, spec.labels)
        daemonize = spec.wait == "ready"
        argv = qemu_argv(launch, state, spec.labels, accel=accel, args=spec.args, daemonize=daemonize)
        if spec.cpus:
            argv = ["taskset", "-c", spec.cpus, *argv]
        await self._write_state(state, spec, launch, accel)
        helper = [await self._helper(), "launch", "--dir", state.path, "--wait", spec.wait,
                  "--timeout", f"{spec.timeout_s:g}"]
        if daemonize and launch.ready:
            helper += ["--ready", launch.ready]
        try:
            result = await self._run(helper + ["--", *argv], timeout=spec.timeout_s + SLACK_S)
        except BackendError:
            await self._kill([state.path], force=True)
            raise
        fields = result.stdout.strip().split("\t")
        if fields[0] not in ("ready", "exit"):
            console = await self._console_tail(state)
            await self._kill([state.path], force=True)
            reason = fields[1] if len(fields) > 1 else last_line(result.stderr, skip_warnings=True)
            qemu_error = last_line(result.stderr, skip_warnings=True)
            raise BackendError(
                f"unikraft backend on host {self.host.name}: booting {launch.kernel}: {reason}"
                f" (qemu: {qemu_error}; console: {console or 'empty'})"
            )
        pid, wall_ns, boot_ns = int(fields[1]), int(fields[2]), int(fields[3])
        exit_code = None
        if fields[0] == "exit":
            await self._kill([state.path], force=True)
            try:
                exit_code = decode_exit(int(fields[4]), result.stderr)
            except BackendError as exc:
                raise BackendError(f"unikraft backend on host {self.host.name}: booting {launch.kernel}: {exc}") from exc
        created_at, boot_s = wall_ns / 1e9, boot_ns / 1e9
        return Instance(
            labels=spec.labels,
            name=lab_name(spec.labels),
            backend=self.name,
            host=self.host.name,
            state="exited" if fields[0] == "exit" else "running",
            created_at=created_at,
            ready_at=created_at + boot_s,
            boot_s=boot_s,
            exit_code=exit_code,
            handle=state.path,
            details={"pid": pid, "accel": accel, "machine": launch.machine, "kernel": launch.kernel,
                     "memory": launch.memory, "console": state.console, "exit_code": exit_code,
                     "ports": list(launch.ports)},
        )

    async def _launch(self, spec: InstanceSpec) -> Launch:
        if spec.mem_limit_bytes is not None:
            raise BackendError("unikraft backend cannot limit memory: it has no mem_limit capability")
        if spec.wait not in ("ready", "exit"):
            raise BackendError(f"unikraft backend: wait must be 'ready' or 'exit', not {spec.wait!r}")
        if bool(spec.program) == bool(spec.image):
            raise BackendError("unikraft backend needs exactly one of spec.program (a test kernel) or spec.image")
        if spec.program:
            return test_kernel_launch(spec.program, await ensure_kernel(self.host, spec.program))
        assert spec.image is not None
        launch = load_image(spec.image)
        for path in (launch.kernel, launch.initrd):
            if path and not (await self.host.run(["test", "-f", path])).ok:
                raise BackendError(
                    f"unikraft backend: image file {path} (from {spec.image}) not found on host {self.host.name}; "
                    "build it with kraft (docs/backend-unikraft.md)"
                )
        return launch

    async def _write_state(self, state: StateDir, spec: InstanceSpec, launch: Launch, accel: str) -> None:
        """Create the state directory with labels.json and the name helper checks."""
        record = {"session": spec.labels.session, "role": spec.labels.role, "instance": spec.labels.instance,
                  "kernel": launch.kernel, "accel": accel, "machine": launch.machine, "memory": launch.memory}
        try:
            (await self.host.run(["mkdir", "-p", "-m", "700", state.path])).check()
            if (await self.host.run(["test", "-e", state.name_file])).ok:
                raise BackendError(f"unikraft backend: instance {spec.labels.instance} of session "
                                   f"{spec.labels.session} already exists on host {self.host.name}")
            for path, text in ((state.labels_json, json.dumps(record) + "\n"), (state.name_file, vm_name(spec.labels))):
                (await self.host.run(["tee", path], input=text.encode())).check()
        except HostError as exc:
            raise BackendError(f"unikraft backend on host {self.host.name}: state directory {state.path}: {exc}") from exc

    async def _console_tail(self, state: StateDir) -> str:
        result = await self.host.run(["tail", "-c", "300", state.console])
        return " | ".join(line.strip() for line in result.stdout.splitlines() if line.strip()) if result.ok else ""

    # -- destroy -------------------------------------------------------------

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        await self.destroy_many([instance], force=force)

    async def destroy_many(self, instances: Sequence[Instance], *, force: bool = False) -> None:
        """End instances with one helper call per batch: QMP quit (unless force), then SIGKILL.

        The helper touches only processes whose command line carries the
        instance's -name, waits up to stop_grace_s for the orderly quit, and
        removes the state directories.
        """
        live = [i for i in instances if i.state != "exited"]
        _check_handles(live, self.host.runtime_dir)
        problems: list[str] = []
        for chunk in chunks([i.handle for i in live], HANDLE_BATCH):
            problems += await self._kill(chunk, force=force)
        if problems:
            raise BackendError(f"unikraft backend on host {self.host.name}: " + "; ".join(problems))

    async def _kill(self, dirs: list[str], *, force: bool) -> list[str]:
        grace = 0.0 if force else self.stop_grace_s
        orderly = [] if force else ["--qmp"]
        result = await self._run([await self._helper(), "kill", *orderly, "--grace", f"{grace:g}", *dirs],
                                 timeout=grace + SLACK_S)
        records = tab_records(result.stdout)
        if len(records) != len(dirs):
            raise self._helper_error("kill", result)
        return [f"refused {f[1]}: {f[2]}" for f in records if f[0] == "refused"]

    # -- list and memory -----------------------------------------------------

    async def list(self, session: str | None = None) -> list[Instance]:
        """Instances from the state directories whose QEMU still runs (orphans included).

        Directories whose QEMU is gone (a crash, a guest that exited) are
        listed with state "gone", so that cleanup removes them.
        """
        if session is not None:
            check_labels(Labels(session, "r", "i"))
        argv = [await self._helper(), "ps", root(self.host.runtime_dir), *([session] if session else [])]
        result = await self._run(argv, timeout=SLACK_S)
        if not result.ok:
            raise self._helper_error("ps", result)
        found = [self._found(fields) for fields in tab_records(result.stdout) if fields[0] == "vm"]
        return [instance for instance in found if instance is not None]

    async def memory_bytes(self, instance: Instance) -> int | None:
        """The QEMU process's Pss (else RSS); None when it is gone."""
        (used,) = await self.memory_many([instance])
        return used

    async def memory_many(self, instances: Sequence[Instance]) -> list[int | None]:
        """memory_bytes of many instances, one helper call per batch of handles."""
        _check_handles(instances, self.host.runtime_dir)
        used: list[int | None] = []
        for chunk in chunks([i.handle for i in instances], HANDLE_BATCH):
            result = await self._run([await self._helper(), "mem", *chunk], timeout=SLACK_S)
            records = tab_records(result.stdout)
            if len(records) != len(chunk):
                raise self._helper_error("mem", result)
            refused = [f"{f[1]}: {f[2]}" for f in records if f[0] == "refused"]
            if refused:
                raise BackendError(f"unikraft backend on host {self.host.name}: memory of " + "; ".join(refused))
            used += [int(f[2]) if f[0] == "mem" and int(f[2]) >= 0 else None for f in records]
        return used

    def _found(self, fields: list[str]) -> Instance | None:
        """An instance from a ps record: vm DIR PID STATE RSS START NAME."""
        _, path, pid, proc_state, rss, started, name = fields
        labels = labels_from_name(name)
        if labels is None:
            return None
        return Instance(
            labels=labels,
            name=lab_name(labels),
            backend=self.name,
            host=self.host.name,
            state="running" if int(pid) else "gone",
            created_at=float(started),
            handle=path,
            details={"pid": int(pid), "proc_state": proc_state, "rss_bytes": int(rss), "console": StateDir(path).console},
        )

    # -- helper --------------------------------------------------------------

    async def _helper(self) -> str:
        if not self._helper_path:
            self._helper_path = await ensure_program(self.host, HELPER_SOURCE, HELPER_NAME)
        return self._helper_path

    async def _run(self, argv: list[str], *, timeout: float) -> CommandResult:
        try:
            return await self.host.run(argv, timeout=timeout)
        except HostError as exc:
            raise BackendError(f"unikraft backend on host {self.host.name}: {exc}") from exc

    def _helper_error(self, command: str, result: CommandResult) -> BackendError:
        return BackendError(
            f"labtui-qemu {command} on host {self.host.name} exited {result.returncode}: {last_line(result.stderr, skip_warnings=True)}"
        )


BACKEND = UnikraftBackend


def _check_handles(instances: Iterable[Instance], runtime_dir: str) -> None:
    """Refuse handles that are not state directories under this host's runtime dir."""
    prefix = root(runtime_dir) + "/"
    for instance in instances:
        if not instance.handle.startswith(prefix) or "/../" in instance.handle:
            raise BackendError(f"unikraft backend: {instance.name} has no state directory handle under {prefix}")
