"""The unikraft backend: unikernels on qemu-system-x86_64, started and found by labtui.

An instance is one QEMU process booting a unikernel: a real Unikraft image
(``spec.image``: ``unikraft:<app>``, built from Unikraft's own source by
build.py, or a kernel file or image description) or one of labtui's multiboot
test kernels (``spec.program``: ``hello``, ``sleeper``, ``spinner``, built
from ``suites/kernels``).  QEMU is
started through ``labtui-qemu`` (``launcher.c``, compiled on the host), which
times the boot on the host and checks labels before it touches a process.
In kraft mode (``LABTUI_UNIKRAFT_MODE=kraft``) KraftKit's ``kraft`` starts and
removes the machines instead (kraft_mode.py).  See docs/backend-unikraft.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterable, Sequence

from labtui.backends.kit import (
    PINNING,
    Availability,
    Backend,
    BackendError,
    Host,
    HostError,
    Instance,
    InstanceSpec,
    Labels,
    ProgramUnavailable,
    ensure_kernel,
    lab_name,
    last_line,
    tab_records,
)

from .build import built_image, ensure_image, recipe
from .elfprobes import MEMORY as PROBE_MEMORY
from .elfprobes import READY as PROBE_READY
from .elfprobes import check_supported, ensure_probe_rootfs, is_test_kernel, probe_file
from .helper import SLACK_S, Helper, run_on
from .images import BUILT, check_image, test_kernel_launch
from .kraft import Kraft, parse_handle
from .kraft_mode import KraftMode
from .probe import kvm_verdict
from .qemu import QEMU, Launch, decode_exit, qemu_argv
from .rootfs import APPS, app, ensure_rootfs
from .state import StateDir, check_labels, labels_from_name, root, vm_name

#: Which accelerator to use: "auto" (KVM when /dev/kvm is usable and Unikraft boots under it), "kvm" or "tcg".
ACCEL_ENV = "LABTUI_UNIKRAFT_ACCEL"
#: Who starts QEMU: "qemu" (labtui itself, the default) or "kraft" (KraftKit's kraft).
MODE_ENV = "LABTUI_UNIKRAFT_MODE"
MODES = ("qemu", "kraft")
#: Terminal control sequences on a serial console (SeaBIOS clears the screen; the sleeper redraws its frame).
_ESCAPES = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|[@-Z\\-_])|\r")


class UnikraftBackend(Backend):
    """Instances are QEMU processes, labelled through -name and a state directory (or a kraft machine name)."""

    name = "unikraft"
    capabilities = frozenset({PINNING})
    max_parallel_creates = 16
    #: Seconds QEMU gets to quit after QMP "quit" before it is killed.
    stop_grace_s = 2.0

    def __init__(self, host: Host, *, mode: str | None = None) -> None:
        super().__init__(host)
        self.mode = mode or os.environ.get(MODE_ENV) or "qemu"
        if self.mode not in MODES:
            raise BackendError(f"{MODE_ENV}={self.mode!r}: expected one of {', '.join(MODES)}")
        self.helper = Helper(host)
        self.kraft_mode = KraftMode(host, self.helper, self.name)
        self._accel = ""
        self._accel_why = ""
        self._built: dict[str, Launch] = {}

    async def check(self) -> Availability:
        """Usable when qemu-system-x86_64 runs and the helper builds (and, in kraft mode, kraft runs)."""
        try:
            result = await self.host.run([QEMU, "--version"])
        except HostError as exc:
            return Availability(False, f"{QEMU} not found on host {self.host.name}: install qemu-system-x86 ({exc})")
        if not result.ok:
            return Availability(False, f"{QEMU} --version failed on host {self.host.name}: {result.stderr.strip()}")
        version = result.stdout.splitlines()[0] if result.stdout else ""
        try:
            await self.helper.path()
        except ProgramUnavailable as exc:
            return Availability(False, str(exc), version)
        if self.mode == "kraft":
            try:
                version = f"{await Kraft(self.host).version()}; {version}"
            except BackendError as exc:
                return Availability(False, f"{exc} (install KraftKit, or unset {MODE_ENV})", version)
        by = ", started by kraft" if self.mode == "kraft" else ""
        if not await self._accel_is_cheap():  # a check never builds a unikernel: listing backends stays quick
            return Availability(True, f"QEMU{by}; KVM or TCG is decided by a probe boot of Unikraft's hello world "
                                "at the first run", version)
        accel = await self.accel()
        return Availability(True, f"QEMU with {accel}{by}: {self._accel_why}", f"{version}; accel {accel}")

    async def _accel_is_cheap(self) -> bool:
        """True when accel() needs no build: decided already, set by the environment, or its probe kernel built."""
        if self._accel or os.environ.get(ACCEL_ENV, "auto") != "auto":
            return True
        try:
            return await built_image(self.host, "helloworld") is not None
        except ProgramUnavailable:
            return True  # no Unikraft source: /dev/kvm alone decides, at once

    async def prepare(self, programs: Iterable[str]) -> None:
        """Build the helper, the named test kernels and the ELF loader with the named probes (cached)."""
        await asyncio.gather(self.helper.path(), self.accel())
        names = set(programs)
        tests = sorted(p for p in names if is_test_kernel(p))
        kernels, _ = await asyncio.gather(asyncio.gather(*(ensure_kernel(self.host, p) for p in tests)),
                                          asyncio.gather(*(self._probe(p, ()) for p in sorted(names - set(tests)))))
        if self.mode == "kraft":
            await asyncio.gather(*(self.kraft_mode.kraft.runnable_kernel(k) for k in kernels))

    def check_invocations(self, invocations: Iterable[tuple[str, tuple[str, ...]]]) -> None:
        """Refuse a probe Unikraft cannot run as meant (fork, a disk attacker) before anything is built."""
        for name, args in invocations:
            if not is_test_kernel(name):
                check_supported(name, args)

    async def prepare_images(self, images: Iterable[str]) -> None:
        """Check every image (description, kernel, initrd) exists before any instance starts."""
        for image in images:
            await self._image(image)

    async def accel(self) -> str:
        """"kvm" or "tcg" for everything this backend boots: LABTUI_UNIKRAFT_ACCEL, else decided on the host.

        KVM needs /dev/kvm readable and writable and a real boot of Unikraft's
        hello world under KVM to print its line (probe.py); without Unikraft's
        source to build it from, /dev/kvm alone decides.
        """
        if not self._accel:
            wanted = os.environ.get(ACCEL_ENV, "auto")
            if wanted not in ("auto", "kvm", "tcg"):
                raise BackendError(f"{ACCEL_ENV}={wanted!r}: expected auto, kvm or tcg")
            self._accel_why = f"{ACCEL_ENV}={wanted}"
            if wanted == "auto":
                wanted, self._accel_why = await self._decide_accel()
            self._accel = wanted
        return self._accel

    async def _decide_accel(self) -> tuple[str, str]:
        usable = await run_on(self.host, ["test", "-r", "/dev/kvm", "-a", "-w", "/dev/kvm"], timeout=30.0)
        if not usable.ok:
            return "tcg", "no readable and writable /dev/kvm"
        try:
            hello = await ensure_image(self.host, "helloworld")
        except ProgramUnavailable as exc:
            return "kvm", f"/dev/kvm usable; no Unikraft probe boot ({exc})"
        verdict = await kvm_verdict(self.host, hello)
        return verdict.accel, verdict.why

    async def isolation(self) -> str:
        """Hardware virtualization under KVM, or QEMU's TCG emulation."""
        return "hvm-kvm" if await self.accel() == "kvm" else "tcg-emulation"

    # -- create --------------------------------------------------------------

    async def create(self, spec: InstanceSpec) -> Instance:
        """Boot one instance; wait for its console marker, or for its exit."""
        check_labels(spec.labels)
        launch = await self._launch(spec)
        accel = await self.accel()
        if self.mode == "kraft":
            return await self.kraft_mode.create(spec, launch, accel=accel)
        state = StateDir.of(self.host.runtime_dir, spec.labels)
        daemonize = spec.wait == "ready"
        ports = tuple(dict.fromkeys([*launch.ports, *spec.ports]))
        argv = qemu_argv(launch, state, spec.labels, accel=accel, args=spec.args, daemonize=daemonize, ports=ports)
        if spec.cpus:
            argv = ["taskset", "-c", spec.cpus, *argv]
        await self._write_state(state, spec, launch, accel)
        helper = ["launch", "--dir", state.path, "--wait", spec.wait, "--timeout", f"{spec.timeout_s:g}"]
        if daemonize and launch.ready:
            helper += ["--ready", launch.ready]
        if daemonize and ports:
            helper += ["--ports", ",".join(map(str, ports))]
        try:
            result = await self.helper.run([*helper, "--", *argv], timeout=spec.timeout_s + SLACK_S)
        except BaseException:  # failed, timed out or cancelled: the QEMU must not outlive the create
            await asyncio.shield(self.helper.kill([state.path], grace=0))
            raise
        fields = result.stdout.strip().split("\t")
        if fields[0] not in ("ready", "exit"):
            console = await self._console_tail(state)
            await self.helper.kill([state.path], grace=0)
            reason = fields[1] if len(fields) > 1 else last_line(result.stderr, skip_warnings=True)
            qemu_error = last_line(result.stderr, skip_warnings=True)
            raise BackendError(
                f"unikraft backend on host {self.host.name}: booting {launch.kernel}: {reason}"
                f" (qemu: {qemu_error}; console: {console or 'empty'})"
            )
        pid, wall_ns, boot_ns = int(fields[1]), int(fields[2]), int(fields[3])
        exit_code = output = None
        published: dict[int, int] = {}
        if fields[0] == "exit":
            if spec.capture_output:
                output = (await run_on(self.host, ["cat", state.console], timeout=60.0)).stdout
            await self.helper.kill([state.path], grace=0)
            try:
                exit_code = decode_exit(int(fields[4]), result.stderr)
            except BackendError as exc:
                where = f"unikraft backend on host {self.host.name}"
                raise BackendError(f"{where}: booting {launch.kernel}: {exc}") from exc
        elif fields[4] != "-":
            published = {int(g): int(h) for g, h in (pair.split("=") for pair in fields[4].split(","))}
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
                     "ports": published, "mode": "qemu"},
            output=output,
        )

    async def _launch(self, spec: InstanceSpec) -> Launch:
        if spec.mem_limit_bytes is not None:
            raise BackendError("unikraft backend cannot limit memory: it has no mem_limit capability")
        if spec.cpu_weight is not None or spec.cpu_cap is not None:
            raise BackendError("unikraft backend cannot weigh or cap CPU use: it has neither cpu_weight nor cpu_limit")
        if spec.wait not in ("ready", "exit"):
            raise BackendError(f"unikraft backend: wait must be 'ready' or 'exit', not {spec.wait!r}")
        if spec.start_at is not None:
            raise BackendError("unikraft backend cannot hold a unikernel's start until a given time (start_at)")
        if spec.tool is not None or spec.capture_stderr:
            raise BackendError("unikraft backend boots unikernels: no tool from the host, no stderr capture")
        if bool(spec.program) == bool(spec.image):
            raise BackendError("unikraft backend needs exactly one of spec.program (a test kernel) or spec.image")
        bad = [p for p in spec.ports if not 0 < p < 65536]
        if bad:
            raise BackendError(f"unikraft backend: ports must be TCP ports 1-65535, not {bad}")
        if spec.program and is_test_kernel(spec.program):
            return test_kernel_launch(spec.program, await ensure_kernel(self.host, spec.program))
        if spec.program:
            return await self._probe(spec.program, spec.args)
        assert spec.image is not None
        return await self._image(spec.image)

    async def _image(self, image: str) -> Launch:
        """The Launch of an image: ``unikraft:<app>`` built from source (once per backend), else check_image."""
        if not image.startswith(BUILT):
            return await check_image(self.host, image)
        if image not in self._built:
            try:
                self._built[image] = await self._build(image.removeprefix(BUILT))
            except ProgramUnavailable as exc:
                raise BackendError(f"unikraft backend: image {image}: {exc}") from exc
        return self._built[image]

    async def _probe(self, name: str, args: tuple[str, ...]) -> Launch:
        """A labtui probe run by Unikraft's ELF loader (elfprobes.py), both built on first use."""
        check_supported(name, args)
        try:
            probe_file(name)  # an unknown name is refused before the ELF loader is built
            kernel, initrd = await asyncio.gather(ensure_image(self.host, "elfloader"),
                                                  ensure_probe_rootfs(self.host, name))
        except ProgramUnavailable as exc:
            raise BackendError(f"unikraft backend: program {name}: {exc}") from exc
        return Launch(kernel=kernel, initrd=initrd, memory=PROBE_MEMORY, ready=PROBE_READY, cmd=(f"/{name}",),
                      cpu="max")

    async def _build(self, name: str) -> Launch:
        """A recipe's kernel (build.py), or an ELF loader app: the loader plus a rootfs of host binaries."""
        if name not in APPS:
            built = recipe(name)
            return Launch(kernel=await ensure_image(self.host, name), memory=built.memory, ready=built.ready)
        server = app(name)
        kernel, initrd = await asyncio.gather(ensure_image(self.host, "elfloader"), ensure_rootfs(self.host, name))
        return Launch(kernel=kernel, initrd=initrd, append=server.append, memory=server.memory, ports=(server.port,),
                      ready=server.ready, cmd=server.cmd, cpu="max")

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
            where = f"unikraft backend on host {self.host.name}"
            raise BackendError(f"{where}: state directory {state.path}: {exc}") from exc

    async def _console_tail(self, state: StateDir) -> str:
        result = await run_on(self.host, ["tail", "-c", "300", state.console], timeout=30.0)
        return " | ".join(line.strip() for line in result.stdout.splitlines() if line.strip()) if result.ok else ""

    async def shell_argv(self, instance: Instance) -> list[str]:
        """None to give: a unikernel is one program linked with its kernel, with no shell to log into."""
        raise BackendError(f"no shell in {instance.name}: a unikernel runs one program linked with its kernel and "
                           "has no shell or login; l shows its console output")

    async def logs(self, instance: Instance) -> str | None:
        """The serial console so far (Unikraft's banner, then the application's lines), terminal escapes removed.

        A unikernel that exited has no console file any more: its captured
        output, else None.
        """
        if instance.handle.startswith("kraft:"):
            console = instance.details.get("console")
        else:
            _check_handles([instance], self.host.runtime_dir)
            console = StateDir(instance.handle).console
        if isinstance(console, str) and console:
            result = await run_on(self.host, ["cat", "--", console], timeout=60.0)
            if result.ok:
                return _ESCAPES.sub("", result.stdout)
        return instance.output

    # -- destroy -------------------------------------------------------------

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        """End one instance; returns once its QEMU process no longer exists."""
        await self.destroy_many([instance], force=force)

    async def destroy_many(self, instances: Sequence[Instance], *, force: bool = False) -> None:
        """End instances: QMP quit (unless force), then SIGKILL, until each QEMU is gone (reaped).

        The helper touches only processes whose command line carries the
        instance's -name and removes the state directories.  Instances with a
        kraft handle are removed with kraft rm (kraft_mode.py), whatever the mode.
        """
        live = [i for i in instances if i.state != "exited"]
        machines = [i for i in live if i.handle.startswith("kraft:")]
        dirs = [i for i in live if not i.handle.startswith("kraft:")]
        _check_handles(dirs, self.host.runtime_dir)
        problems = await self.helper.kill([i.handle for i in dirs], grace=0 if force else self.stop_grace_s)
        if machines:
            problems += await self.kraft_mode.destroy(machines, force=force)
        if problems:
            raise BackendError(f"unikraft backend on host {self.host.name}: " + "; ".join(problems))

    # -- list and memory -----------------------------------------------------

    async def list(self, session: str | None = None) -> list[Instance]:
        """Instances from the state directories whose QEMU still runs (orphans included), or kraft's machines.

        Directories whose QEMU is gone (a crash, a guest that exited) are
        listed with state "gone", so that cleanup removes them.
        """
        if session is not None:
            check_labels(Labels(session, "r", "i"))
        if self.mode == "kraft":
            return await self.kraft_mode.list(session)
        result = await self.helper.run(["ps", root(self.host.runtime_dir), *([session] if session else [])],
                                       timeout=SLACK_S)
        if not result.ok:
            raise self.helper.error("ps", result)
        found = [self._found(fields) for fields in tab_records(result.stdout) if fields[0] == "vm"]
        return [instance for instance in found if instance is not None]

    async def memory_bytes(self, instance: Instance) -> int | None:
        """The QEMU process's Pss (else RSS); None when it is gone."""
        (used,) = await self.memory_many([instance])
        return used

    async def memory_many(self, instances: Sequence[Instance]) -> list[int | None]:
        """memory_bytes of many instances, one helper call per batch of handles."""
        _check_handles(instances, self.host.runtime_dir)
        return await self.helper.memory([i.handle for i in instances])

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
            details={"pid": int(pid), "proc_state": proc_state, "rss_bytes": int(rss),
                     "console": StateDir(path).console, "mode": "qemu"},
        )


BACKEND = UnikraftBackend


def _check_handles(instances: Iterable[Instance], runtime_dir: str) -> None:
    """Refuse handles that are neither state directories under this host's runtime dir nor kraft handles."""
    prefix = root(runtime_dir) + "/"
    for instance in instances:
        if instance.handle.startswith("kraft:"):
            parse_handle(instance.handle)
        elif not instance.handle.startswith(prefix) or "/../" in instance.handle:
            raise BackendError(f"unikraft backend: {instance.name} has no state directory handle under {prefix}")
