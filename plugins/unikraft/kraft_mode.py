"""The unikraft backend's kraft mode: create, list and destroy through ``kraft`` (see kraft.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from labtui.backends.kit import (
    BackendError,
    Host,
    Instance,
    InstanceSpec,
    lab_name,
    last_line,
)

from .helper import SLACK_S, Helper, run_on
from .kraft import (
    KRAFT,
    Kraft,
    handle,
    instance_from_ps,
    machine_name,
    parse_handle,
    run_argv,
)
from .qemu import Launch, decode_exit

#: kraft commands in flight at once (each is a separate kraft process).
PARALLEL = 8
#: Seconds a QEMU may take to end after kraft rm returned, before it is SIGKILLed.
GRACE_S = 2.0


class KraftMode:
    """Instances are kraft machines named with their lab labels."""

    def __init__(self, host: Host, helper: Helper, backend: str) -> None:
        self.host = host
        self.helper = helper
        self.backend = backend
        self.kraft = Kraft(host)
        self.grace_s = GRACE_S

    async def create(self, spec: InstanceSpec, launch: Launch, *, accel: str) -> Instance:
        """`kraft run --detach` the instance; labtui-qemu times it to the console marker or the exit."""
        where = f"unikraft backend (kraft mode) on host {self.host.name}"
        if spec.ports or launch.ports:
            raise BackendError(
                f"{where}: cannot publish ports on 127.0.0.1 only: kraft forwards them with "
                "hostfwd=tcp::HOST-:GUEST, on every interface; use LABTUI_UNIKRAFT_MODE=qemu"
            )
        if spec.program and spec.wait == "exit":
            raise BackendError(
                f"{where}: test kernel {spec.program} cannot end its QEMU under kraft (kraft adds no "
                "isa-debug-exit device); boot-time workers need LABTUI_UNIKRAFT_MODE=qemu"
            )
        kernel = await self.kraft.runnable_kernel(launch.kernel) if spec.program else launch.kernel
        name = machine_name(spec.labels)
        argv = run_argv(launch, name, kernel, accel=accel, args=spec.args)
        if spec.cpus:
            argv = ["taskset", "-c", spec.cpus, *argv]
        helper = ["kraft-run", "--wait", spec.wait, "--timeout", f"{spec.timeout_s:g}"]
        if spec.wait == "ready" and launch.ready:
            helper += ["--ready", launch.ready]
        try:
            result = await self.helper.run([*helper, "--", *argv], timeout=spec.timeout_s + SLACK_S)
        except BaseException:  # failed, timed out or cancelled: the machine must not outlive the create
            await asyncio.shield(self.kraft.forget(name))
            raise
        fields = result.stdout.strip().split("\t")
        if fields[0] not in ("ready", "exit"):
            kraft_said = last_line(result.stderr, skip_warnings=True)
            if "name already in use" not in kraft_said:  # that machine is another instance's
                await self.kraft.forget(name)
            reason = fields[1] if len(fields) > 1 else "no answer from labtui-qemu"
            raise BackendError(f"{where}: kraft run {kernel}: {reason} (kraft: {kraft_said})")
        pid, machine_id, console = int(fields[1]), fields[2], fields[-1]
        wall_ns, boot_ns = int(fields[3]), int(fields[4])
        exit_code = output = None
        if fields[0] == "exit":
            if spec.capture_output:
                output = (await run_on(self.host, ["cat", console], timeout=60.0)).stdout
            problems = await self.destroy_targets([(name, machine_id)], force=True)
            try:
                exit_code = decode_exit(int(fields[5]), result.stderr)
            except BackendError as exc:
                raise BackendError(f"{where}: booting {kernel}: {exc}") from exc
            if problems:
                raise BackendError(f"{where}: " + "; ".join(problems))
        created_at, boot_s = wall_ns / 1e9, boot_ns / 1e9
        return Instance(
            labels=spec.labels,
            name=lab_name(spec.labels),
            backend=self.backend,
            host=self.host.name,
            state="exited" if fields[0] == "exit" else "running",
            created_at=created_at,
            ready_at=created_at + boot_s,
            boot_s=boot_s,
            exit_code=exit_code,
            handle=handle(machine_id, pid),
            details={"pid": pid, "machine_id": machine_id, "kraft_name": name, "mode": "kraft", "accel": accel,
                     "machine": "pc", "kernel": kernel, "memory": launch.memory, "console": console,
                     "exit_code": exit_code, "ports": {}},
            output=output,
        )

    async def list(self, session: str | None) -> list[Instance]:
        """The machines `kraft ps` lists whose names carry lab labels (of session, when given)."""
        found = [instance_from_ps(row, self.backend, self.host.name) for row in await self.kraft.machines()]
        return [i for i in found if i is not None and (session is None or i.labels.session == session)]

    async def destroy(self, instances: Sequence[Instance], *, force: bool) -> list[str]:
        """Remove the machines of instances; the problems (an empty list when all are gone)."""
        targets = [(machine_name(i.labels), parse_handle(i.handle)[0]) for i in instances]
        return await self.destroy_targets(targets, force=force)

    async def destroy_targets(self, targets: Sequence[tuple[str, str]], *, force: bool) -> list[str]:
        """`kraft rm` each (name, machine id); labtui-qemu then ends what is left of its QEMU.

        A machine kraft lists under the name with another machine id is not
        touched.  force SIGKILLs the QEMU before kraft rm, skipping kraft's QMP quit.
        """
        listed = {row.get("name", ""): row.get("machine_id", row.get("machine id", ""))
                  for row in await self.kraft.machines()}
        problems = [f"refused {name}: kraft lists it as machine {listed[name]}, not {uid}"
                    for name, uid in targets if listed.get(name, uid) != uid]
        gate = asyncio.Semaphore(PARALLEL)

        async def remove(name: str, uid: str) -> str:
            # a machine kraft no longer lists may still have a QEMU: true leaves kraft out
            argv = [KRAFT, "rm", name] if name in listed else ["true"]
            async with gate:
                try:
                    status, stderr = await self.helper.kraft_rm(uid, argv, force=force, grace=self.grace_s)
                except BackendError as exc:
                    return str(exc)
            if status and "machine(s) not found" not in stderr:
                return f"kraft rm {name} exited {status}: {last_line(stderr)}"
            return ""

        outcomes = await asyncio.gather(*(remove(n, u) for n, u in targets if listed.get(n, u) == u))
        return problems + [p for p in outcomes if p]
