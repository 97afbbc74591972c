"""The docker backend: every instance is a container on a Docker engine.

It talks to the Engine API over the engine's unix socket with aiodocker (no
``docker`` CLI), reached through ``host.unix_socket_path`` so an SSH host's
engine works the same as the local one.  Containers carry the lab labels
``labtui.session``, ``labtui.role`` and ``labtui.instance``; list, destroy and
cleanup select by them and refuse anything else.  Probes run from
``labtui/<probe>`` images built FROM scratch on first use (``images.py``),
servers from ``labtui/nginx`` and ``labtui/redis`` built FROM scratch from the
host's installed binaries (``services.py``).  Programs a benchmark runs inside
a container (creation suites) are copied into it by ``stage`` (``staging.py``).
An instance's handle is the container id.  ``backend.runtime`` (``configure``)
names the engine runtime every container gets (``runsc``: gVisor); the
runtimes the engine offers are read from its info (``runtimes.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self

import aiodocker

from labtui.backends.kit import (
    CPU_LIMIT,
    CPU_WEIGHT,
    EXEC,
    MEM_LIMIT,
    NETWORKING,
    PINNING,
    STDERR,
    TMPFS,
    Availability,
    Backend,
    BackendError,
    CommandResult,
    HostError,
    Instance,
    InstanceSpec,
    Labels,
    Usage,
)
from labtui.backends.kit import (
    runat as runat_tool,
)

from . import held, runtimes
from .containers import (
    LABEL_SESSION,
    ContainerSpec,
    container_name,
    cpu_used,
    create_body,
    lab_labels,
    memory_used,
    validate,
)
from .engine import DOCKER_SOCKET, Engine, EngineError
from .images import BuiltImage, ImageBuilder, bundled_probes, managed_probe
from .services import (
    SERVICES,
    ServiceBuilder,
    ServiceUnavailable,
    managed_service,
    service_image,
)
from .staging import Stager, stage_path

if TYPE_CHECKING:
    from labtui.backends.kit import Host

__all__ = ["ContainerSpec", "DockerBackend"]

#: Seconds any one list/inspect/remove/stats call may take.
API_TIMEOUT_S = 60.0
#: Stats requests in flight at once (below aiohttp's 100 connections per client).
STATS_IN_FLIGHT = 96
#: The shell ``shell_argv`` opens in a container (labtui's probe images carry the host's, see images.py).
SHELL = "/bin/sh"
#: Seconds the check that a container has SHELL may take.
SHELL_CHECK_S = 10.0


class DockerBackend(Backend):
    """Instances are containers created, found and removed through the Engine API."""

    name = "docker"
    capabilities = frozenset({PINNING, CPU_LIMIT, CPU_WEIGHT, MEM_LIMIT, TMPFS, EXEC, NETWORKING, STDERR})
    max_parallel_creates = 8
    #: Seconds ``docker stop`` waits between SIGTERM and SIGKILL when destroying.
    stop_grace_s = 2
    settings = frozenset({"runtime"})

    def __init__(self, host: Host, socket_path: str = DOCKER_SOCKET) -> None:
        super().__init__(host)
        self.engine = Engine(host, socket_path)
        self.images = ImageBuilder(host, self.engine)
        self.services = ServiceBuilder(host, self.engine)
        self.staging = Stager(host, self.engine)
        self._known_images: set[str] = set()
        #: Image -> its Config from an inspect (what a held container wraps).
        self._image_configs: dict[str, dict[str, Any]] = {}
        #: The engine runtime containers are created with (None: the engine's default).
        self.runtime: str | None = None

    def configure(self, settings: Mapping[str, object]) -> None:
        """Take ``backend.runtime``: the engine runtime (runc, runsc, ...) every container of the run gets."""
        super().configure(settings)
        runtime = settings.get("runtime")
        self.runtime = None if runtime is None else str(runtime)

    async def check(self) -> Availability:
        """Usable when the engine answers on its socket and offers the chosen runtime.

        The version is the engine's (and the chosen runtime's, with its arguments); the reason lists the
        runtimes the engine offers.
        """
        socket_path = self.engine.socket_path
        try:
            present = (await self.host.run(["test", "-S", socket_path], timeout=10.0)).ok
        except HostError as exc:
            return Availability(False, f"cannot check {socket_path} on host {self.host.name}: {exc}")
        if not present:
            return Availability(False, f"no docker socket at {socket_path} on host {self.host.name}: is dockerd running?")
        try:
            async with asyncio.timeout(API_TIMEOUT_S):
                found = await self.engine.call("asking the engine's version", "GET", "version", versioned_api=False)
                info = await self.engine.call("reading engine info", "GET", "info")
        except (BackendError, TimeoutError) as exc:
            reason = str(exc) or f"no answer from the engine within {API_TIMEOUT_S:g}s"
            if "Permission denied" in reason:
                reason += " (run as root or join the docker group)"
            return Availability(False, reason)
        if refused := runtimes.refusal(self.runtime, info):
            return Availability(False, refused)
        version = f"Docker {found.get('Version', '?')} (API {found.get('ApiVersion', '?')})"
        if self.runtime is not None:
            version += f", runtime {' '.join([self.runtime, *runtimes.offered(info)[self.runtime]])}"
        return Availability(True, f"docker engine on {socket_path}; runtimes: {runtimes.describe(info)}", version)

    async def prepare(self, programs: Iterable[str]) -> None:
        """Build the images of the named probes that the engine lacks or has stale."""
        async with self.engine.client():
            for probe in sorted(set(programs)):
                await self.images.ensure_cached(probe)

    async def prepare_images(self, images: Iterable[str]) -> None:
        """Build labtui's images a run names and make sure every other one is on the engine."""
        async with self.engine.client():
            for image in sorted(set(images)):
                await self._image_for(InstanceSpec(Labels("", "", ""), image=image))

    async def build_images(self, *, force: bool = False) -> list[BuiltImage]:
        """Ensure every ``labtui/<probe>`` and service image (rebuild all with force).

        A service whose server is not installed on the host is returned with
        ``skipped`` saying so; BackendError when the engine is unusable.
        """
        availability = await self.check()
        if not availability.usable:
            raise BackendError(availability.reason)
        async with self.engine.client():
            built = [await self.images.ensure(probe, force=force) for probe in bundled_probes()]
            for service in SERVICES:
                try:
                    built.append(await self.services.ensure(service, force=force))
                except ServiceUnavailable as exc:
                    built.append(BuiltImage(service_image(service), "", 0, built=False, skipped=str(exc)))
            return built

    async def isolation(self) -> str:
        """The runtime containers get (the chosen one, else the engine's default), the engine's security
        options and cgroup driver, e.g. ``runc+seccomp,cgroupfs`` or ``runsc+seccomp,cgroupfs``."""
        try:
            found = await self.engine.call("reading engine info", "GET", "info")
        except BackendError:
            return ""
        security = [o.split(",")[0].removeprefix("name=") for o in found.get("SecurityOptions") or []]
        return f"{'+'.join([runtimes.chosen(self.runtime, found), *security])},{found.get('CgroupDriver', '')}"

    # -- create ----------------------------------------------------------------

    async def create(self, spec: InstanceSpec) -> Instance:
        """Create (and start) one container; for ``wait="exit"`` run it to exit and remove it.

        ``boot_s`` runs from the create request to start returning (ready) or
        to the engine reporting the exit; ``details["phases"]`` splits it into
        create, (stage,) start and run.  Image builds happen before the clock
        starts.  With ``start_at`` the program is held by labtui-runat
        (``held.py``) until then: run_s includes the hold, ``stage_s`` is the
        copy of labtui-runat into the container, and for ``wait="exit"``
        ``details`` has the host-clock ``start_ns``/``end_ns`` it reported.
        """
        return await self._create(spec, None)

    async def _create(self, spec: InstanceSpec, gate: asyncio.Semaphore | None) -> Instance:
        """create, holding a place under gate until the exit, or only until the start of a held program."""
        validate(spec)
        async with self.engine.client() as docker:
            image, cmd = await self._image_for(spec)
            runat, entrypoint = None, None
            if spec.start_at is not None:
                runat = await runat_tool.build(self.host)
                cmd = await self._command(spec, image, cmd)
                entrypoint = held.entrypoint(stage_path(runat), spec.start_at)
            body = create_body(spec, image, cmd, entrypoint, runtime=self.runtime)
            params = {"name": name} if (name := container_name(spec.labels)) else {}
            container_id = ""
            phases: dict[str, float] = {}
            times = None
            try:
                async with _Slot(gate) as slot, asyncio.timeout(spec.timeout_s):
                    created_at, t0 = time.time(), time.monotonic()
                    container_id = await self._create_container(image, params, body)
                    t1 = time.monotonic()
                    phases["create_s"] = t1 - t0
                    if runat is not None:
                        await self.staging.stage(container_id, [runat])
                        staged = time.monotonic()
                        phases["stage_s"], t1 = staged - t1, staged
                    await self.engine.call(f"starting container {container_id[:12]}", "POST",
                                           f"containers/{container_id}/start")
                    t2 = time.monotonic()
                    phases["start_s"] = t2 - t1
                    if runat is not None:
                        slot.release()  # the program waits for start_at, not for the other creates
                    exit_code = None
                    if spec.wait == "exit":
                        waited = await self.engine.call(f"waiting for container {container_id[:12]}", "POST",
                                                        f"containers/{container_id}/wait")
                        exit_code = int(waited.get("StatusCode", -1))
                        phases["run_s"] = time.monotonic() - t2
                    ports = await self._ports(container_id) if spec.ports else {}
                    output = None
                    if spec.capture_output and spec.wait == "exit":
                        output = await self._log(docker, container_id, stdout=True, stderr=spec.capture_stderr)
                        if spec.capture_stderr and runat is not None:
                            output = runat_tool.program_stderr(output)
                    if runat is not None and spec.wait == "exit":
                        stderr = await self._log(docker, container_id, stdout=False, stderr=True)
                        times = held.runat_times(stderr, f"container {container_id[:12]} from {image}")
            except TimeoutError:
                await self._remove_quietly(container_id)
                raise BackendError(
                    f"docker on host {self.host.name}: creating {spec.labels.instance} from {image} "
                    f"took over {spec.timeout_s:g}s"
                ) from None
            except BaseException:
                await self._remove_quietly(container_id)
                raise
            if spec.wait == "exit":
                await self._remove_quietly(container_id)
        boot_s = sum(phases.values())
        details = {"container_id": container_id, "image": image, "phases": phases, "ports": ports,
                   "exit_code": exit_code}
        if spec.start_at is not None:
            details["start_at_ns"] = runat_tool.at_ns(spec.start_at)
        if times is not None:
            details["start_ns"], details["end_ns"] = times[0], times[1]
        return Instance(
            labels=spec.labels,
            name=name or container_id[:12],
            backend=self.name,
            host=self.host.name,
            state="exited" if spec.wait == "exit" else "running",
            created_at=created_at,
            ready_at=created_at + boot_s,
            boot_s=boot_s,
            exit_code=exit_code,
            handle=container_id,
            details=details,
            output=output,
        )

    async def create_many(self, specs: Sequence[InstanceSpec]) -> list[Instance]:
        """Create containers, at most max_parallel_creates in flight, over one client.

        A create holds its place until its container exits (``wait="exit"``),
        but one whose program is held until ``start_at`` gives it up once the
        container has started, so more than max_parallel_creates held
        containers still start together.  If any create fails, the others this
        call made are removed and the first error is raised.
        """
        async with self.engine.client():
            for spec in specs:
                validate(spec)
                await self._image_for(spec)
            if any(spec.start_at is not None for spec in specs):
                await runat_tool.build(self.host)
            gate = asyncio.Semaphore(self.max_parallel_creates)
            creates = [asyncio.ensure_future(self._create(s, gate)) for s in specs]
            try:
                results = await asyncio.gather(*creates, return_exceptions=True)
            except asyncio.CancelledError:
                # The creates still in flight remove their own container; those already done are ours to remove.
                done = [t.result() for t in creates if t.done() and not t.cancelled() and t.exception() is None]
                await asyncio.shield(self._destroy_quietly(done))
                raise
            created = [r for r in results if isinstance(r, Instance)]
            errors = [r for r in results if isinstance(r, BaseException)]
            if errors:
                await self._destroy_quietly(created)
                raise errors[0]
            return created

    async def _command(self, spec: InstanceSpec, image: str, cmd: list[str] | None) -> list[str]:
        """The whole command a container of image runs given cmd: ``/bin/<probe> ARGS`` for a probe."""
        if probe := spec.program or managed_probe(spec.image or ""):
            return [f"/bin/{probe}", *spec.args]
        if image not in self._image_configs:
            found = await self.engine.call(f"inspecting image {image}", "GET", f"images/{image}/json")
            self._image_configs[image] = found.get("Config") or {}
        return held.command_of(image, self._image_configs[image], cmd)

    async def _image_for(self, spec: InstanceSpec) -> tuple[str, list[str] | None]:
        """The image to run and the command (None: the image's own); builds labtui probe and service images."""
        probe = spec.program or managed_probe(spec.image or "")
        if probe:
            image = await self.images.ensure_cached(probe)
            return image, [f"/bin/{probe}", *spec.args] if spec.args else None
        assert spec.image is not None
        if service := managed_service(spec.image):
            return await self.services.ensure_cached(service), list(spec.args) if spec.args else None
        if spec.image not in self._known_images:
            try:
                await self.engine.call(f"inspecting image {spec.image}", "GET", f"images/{spec.image}/json")
            except EngineError as exc:
                if exc.status == 404:
                    raise BackendError(
                        f"docker on host {self.host.name}: image {spec.image!r} is not on the engine; labtui builds "
                        "only labtui/<probe>, labtui/nginx and labtui/redis (`labtui images build`), "
                        "pull or load other images first"
                    ) from None
                raise
            self._known_images.add(spec.image)
        return spec.image, list(spec.args) if spec.args else None

    async def _log(self, docker: aiodocker.Docker, container_id: str, *, stdout: bool, stderr: bool) -> str:
        """What an exited container printed on stdout, stderr or both (in the order written), from the engine's
        log of it."""
        try:
            lines = await docker.containers.container(container_id).log(stdout=stdout, stderr=stderr)
        except aiodocker.DockerError as exc:
            raise self.engine.error(f"reading the output of {container_id[:12]}", exc) from exc
        return "".join(lines)

    async def logs(self, instance: Instance) -> str | None:
        """What the container printed so far on stdout and stderr (the engine's log of it)."""
        async with self.engine.client() as docker:
            return await self._log(docker, instance.handle, stdout=True, stderr=True)

    async def _ports(self, container_id: str) -> dict[int, int]:
        """Container TCP port -> host port on 127.0.0.1, as the engine published them."""
        found = await self.engine.call(f"inspecting container {container_id[:12]}", "GET",
                                       f"containers/{container_id}/json")
        ports = (found.get("NetworkSettings") or {}).get("Ports") or {}
        return {int(key.split("/")[0]): int(b[0]["HostPort"]) for key, b in ports.items() if b}

    # -- destroy ---------------------------------------------------------------

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        """Remove the container after checking it carries the instance's labels.

        ``force`` removes it at once (SIGKILL); otherwise it is stopped first
        (SIGTERM, then SIGKILL after stop_grace_s).  A container already gone
        is not an error.
        """
        if not instance.handle:
            raise BackendError(f"docker backend: {instance.name} has no container id")
        short = instance.handle[:12]
        async with self.engine.client(), asyncio.timeout(API_TIMEOUT_S + self.stop_grace_s):
            try:
                found = await self.engine.call(f"inspecting container {short}", "GET",
                                               f"containers/{instance.handle}/json")
                if lab_labels((found.get("Config") or {}).get("Labels")) != instance.labels:
                    raise BackendError(
                        f"docker on host {self.host.name}: refusing to remove container {short}: "
                        f"it does not carry the labels of {instance.labels.session}/{instance.labels.instance}"
                    )
                if not force and (found.get("State") or {}).get("Running"):
                    await self.engine.call(f"stopping container {short}", "POST",
                                           f"containers/{instance.handle}/stop", params={"t": self.stop_grace_s})
                await self.engine.call(f"removing container {short}", "DELETE", f"containers/{instance.handle}",
                                       params={"force": True})
            except EngineError as exc:
                if exc.status == 409 and "already in progress" in str(exc):
                    await self._gone(instance.handle)  # another removal (of a create cut short) is under way
                elif exc.status != 404:
                    raise
        self.staging.forget(instance.handle)

    async def _gone(self, handle: str) -> None:
        """Wait until the engine no longer knows the container (bounded by the caller's timeout)."""
        while True:
            try:
                await self.engine.call(f"inspecting container {handle[:12]}", "GET", f"containers/{handle}/json")
            except EngineError as exc:
                if exc.status == 404:
                    return
                raise
            await asyncio.sleep(0.05)

    async def destroy_many(self, instances: Sequence[Instance], *, force: bool = False) -> None:
        """Remove containers over one client, at most max_parallel_creates at a time; raise the first error."""
        async with self.engine.client():
            gate = asyncio.Semaphore(self.max_parallel_creates)

            async def one(instance: Instance) -> None:
                async with gate:
                    await self.destroy(instance, force=force)

            results = await asyncio.gather(*(one(i) for i in instances), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def _create_container(self, image: str, params: dict[str, str], body: dict[str, Any]) -> str:
        """POST containers/create and return the id; if cancelled meanwhile, wait for the id and remove it.

        The engine goes on creating a container after its client gives up, so a create cut
        short by an interrupt left a ``Created`` container behind (up to 8 an interrupt in the
        signal soak, after the teardown's sweep had listed the session).
        """
        call = asyncio.ensure_future(self.engine.call(f"creating a container from {image}", "POST",
                                                      "containers/create", params=params, data=body))
        try:
            created = await asyncio.shield(call)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(API_TIMEOUT_S):
                    await self._remove_quietly((await call)["Id"])
            raise
        return created["Id"]

    async def _remove_quietly(self, container_id: str) -> None:
        """Remove a container this backend just created; the error that led here is what matters."""
        if container_id:
            try:
                async with asyncio.timeout(API_TIMEOUT_S):
                    await self.engine.call("removing a container", "DELETE", f"containers/{container_id}",
                                           params={"force": True})
            except (BackendError, TimeoutError):
                pass
            self.staging.forget(container_id)

    async def _destroy_quietly(self, instances: Sequence[Instance]) -> None:
        try:
            await self.destroy_many(instances, force=True)
        except BackendError:
            pass

    # -- list, memory, exec, stage ---------------------------------------------

    async def list(self, session: str | None = None) -> list[Instance]:
        """Containers carrying lab labels (of one session, or all), running or not."""
        label = f"{LABEL_SESSION}={session}" if session else LABEL_SESSION
        async with asyncio.timeout(API_TIMEOUT_S):
            found = await self.engine.call("listing containers", "GET", "containers/json",
                                           params={"all": True, "filters": {"label": [label]}})
        instances = []
        for entry in found:
            labels = lab_labels(entry.get("Labels"))
            if labels is None or (session and labels.session != session):
                continue
            names = entry.get("Names") or []
            instances.append(Instance(
                labels=labels,
                name=names[0].lstrip("/") if names else entry["Id"][:12],
                backend=self.name,
                host=self.host.name,
                state=entry.get("State", "unknown"),
                created_at=float(entry.get("Created", 0)) or None,
                handle=entry["Id"],
                details={"container_id": entry["Id"], "image": entry.get("Image", ""), "status": entry.get("Status", "")},
            ))
        return instances

    async def memory_bytes(self, instance: Instance) -> int | None:
        """Memory charged to the container (usage minus inactive file cache); None when it is gone."""
        return (await self._usage(instance)).memory_bytes

    async def _usage(self, instance: Instance) -> Usage:
        """Memory and CPU time of a container from one stats answer; Usage(None) when it is gone."""
        try:
            async with asyncio.timeout(API_TIMEOUT_S):
                stats = await self.engine.call(f"reading stats of {instance.handle[:12]}", "GET",
                                               f"containers/{instance.handle}/stats",
                                               params={"stream": False, "one-shot": True})
        except EngineError as exc:
            if exc.status == 404:
                return Usage(None)
            raise
        return Usage(memory_used(stats), cpu_used(stats))

    async def memory_many(self, instances: Sequence[Instance]) -> list[int | None]:
        """memory_bytes of many containers (usage_many's memory)."""
        return [usage.memory_bytes for usage in await self.usage_many(instances)]

    async def usage_many(self, instances: Sequence[Instance]) -> list[Usage]:
        """Memory and CPU time of many containers over one client, STATS_IN_FLIGHT at a time.

        The engine answers a stats request at its collector's next tick (once
        a second) whatever ``one-shot`` says, so requests are mostly waiting:
        many in flight cost the engine one collection, not one each.
        """
        gate = asyncio.Semaphore(STATS_IN_FLIGHT)

        async def one(instance: Instance) -> Usage:
            async with gate:
                return await self._usage(instance)

        async with self.engine.client():
            return list(await asyncio.gather(*(one(i) for i in instances)))

    async def shell_argv(self, instance: Instance) -> list[str]:
        """``docker exec -it <id> /bin/sh`` on the container's host, once the container is running and has one.

        labtui's probe images carry the host's shell; its service images (nginx, redis) and images without
        one are named in the BackendError.
        """
        image = instance.details.get("image") or "its image"
        if instance.state != "running":
            raise BackendError(f"no shell in {instance.name}: it is {instance.state}, not running")
        check = await self.exec(instance, [SHELL, "-c", "exit 0"], timeout=SHELL_CHECK_S)
        if not check.ok:
            raise BackendError(f"no shell in {instance.name}: {image} has no {SHELL} "
                               f"(exec exited {check.returncode})")
        socket = [] if self.engine.socket_path == DOCKER_SOCKET else ["-H", f"unix://{self.engine.socket_path}"]
        return self.host.terminal_argv(["docker", *socket, "exec", "-it", instance.handle, SHELL])

    async def exec(self, instance: Instance, argv: Sequence[str], *, timeout: float = 60.0) -> CommandResult:
        """Run argv inside the container and collect its output and exit code."""
        short = instance.handle[:12]
        started = time.monotonic()
        out: list[bytes] = []
        err: list[bytes] = []
        async with self.engine.client() as docker:
            try:
                async with asyncio.timeout(timeout):
                    container = docker.containers.container(instance.handle)
                    execution = await container.exec(list(argv), stdout=True, stderr=True)
                    async with execution.start(detach=False) as stream:
                        while (message := await stream.read_out()) is not None:
                            (out if message.stream == 1 else err).append(message.data)
                    code = (await execution.inspect()).get("ExitCode")
            except TimeoutError:
                raise BackendError(f"docker on host {self.host.name}: exec in {short} ran over {timeout:g}s") from None
            except aiodocker.DockerError as exc:
                raise self.engine.error(f"exec {argv[0] if argv else ''} in {short}", exc) from exc
        return CommandResult(tuple(argv), int(code if code is not None else -1), b"".join(out).decode(errors="replace"),
                             b"".join(err).decode(errors="replace"), time.monotonic() - started)

    async def stage(self, instance: Instance, paths: Sequence[str]) -> list[str]:
        """Copy host programs into the container under ``/labtui/bin`` (once each); return their paths there.

        A program that is not a static binary is refused with a BackendError
        naming it: the container's image has no dynamic loader to run it.
        """
        if not instance.handle:
            raise BackendError(f"docker backend: {instance.name} has no container id")
        try:
            async with asyncio.timeout(API_TIMEOUT_S):
                return await self.staging.stage(instance.handle, paths)
        except TimeoutError:
            raise BackendError(
                f"docker on host {self.host.name}: copying {', '.join(paths)} into {instance.handle[:12]} "
                f"took over {API_TIMEOUT_S:g}s"
            ) from None


class _Slot:
    """A place under a create gate (None: no gate), given back once: on exit, or earlier by release()."""

    def __init__(self, gate: asyncio.Semaphore | None) -> None:
        self.gate = gate
        self.held = False

    async def __aenter__(self) -> Self:
        if self.gate is not None:
            await self.gate.acquire()
            self.held = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.release()

    def release(self) -> None:
        """Give the place back now (again: nothing)."""
        if self.held and self.gate is not None:
            self.held = False
            self.gate.release()
