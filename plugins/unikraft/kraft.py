"""kraft mode: unikernels started and removed by KraftKit's ``kraft`` instead of by labtui.

``kraft run --detach`` starts a machine named with its lab labels, ``kraft ps
--long --all -o json`` lists machines, ``kraft rm NAME`` stops (QMP quit) and
removes one.  kraft's QEMU carries kraft's machine id (a UUID) as ``-name``,
so ``labtui-qemu kraft-rm`` pins that QEMU, runs ``kraft rm`` and then makes
sure no QEMU with that id is left, SIGKILLing one that is: kraft only logs a
failed stop and removes the machine anyway.  The formats follow kraftkit (internal/cli/kraft/run, ps,
remove; machine/qemu/v1alpha1.go); docs/backend-unikraft.md has the details.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Sequence

from labtui.backends.kit import BackendError, Host, Instance, Labels, lab_name, last_line

from .helper import run_on
from .qemu import Launch

KRAFT = "kraft"
#: kraft takes a kernel file only when it has one of Unikraft's sections
#: (kraftkit unikraft.IsFileUnikraftUnikernel); labtui's test kernels get an empty one.
UK_SECTION = ".uk_inittab"
_NAME = re.compile(r"labtui,session=([^,]+),role=([^,]+),instance=([^,]+)")
_MACHINE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_PARAM = re.compile(r"[A-Za-z0-9_]+\.[A-Za-z0-9_]+=")
_MEMORY = re.compile(r"(\d+)([KMGT]?)")


def machine_name(labels: Labels) -> str:
    """The kraft machine name that carries the lab labels."""
    return f"labtui,session={labels.session},role={labels.role},instance={labels.instance}"


def labels_from_machine(name: str) -> Labels | None:
    """The labels in a kraft machine name, or None when it is not one of labtui's."""
    match = _NAME.fullmatch(name)
    return Labels(*match.groups()) if match else None


def handle(machine_id: str, pid: int) -> str:
    """The handle of a kraft instance: its machine id (QEMU's -name) and QEMU's pid."""
    return f"kraft:{machine_id}:{pid}"


def parse_handle(value: str) -> tuple[str, int]:
    """The machine id and pid of a kraft handle; BackendError when it is not one."""
    parts = value.split(":")
    if len(parts) != 3 or parts[0] != "kraft" or not _MACHINE_ID.fullmatch(parts[1]) or not parts[2].isdigit():
        raise BackendError(f"unikraft backend: {value!r} is not a kraft instance handle (kraft:MACHINE_ID:PID)")
    return parts[1], int(parts[2])


def kraft_memory(memory: str) -> str:
    """A QEMU -m size (MiB by default, K/M/G/T suffixes binary) as a kraft --memory quantity."""
    match = _MEMORY.fullmatch(memory.strip().upper())
    if not match:
        raise BackendError(f"unikraft backend: memory {memory!r} is not a QEMU -m size such as 64M")
    return f"{match.group(1)}{match.group(2) or 'M'}i"


def kernel_args(append: str) -> list[str]:
    """The kernel arguments of an append string as kraft's --kernel-arg values (lib.param=value each)."""
    params = [p for p in re.split(r"\s+(?=[A-Za-z0-9_]+\.[A-Za-z0-9_]+=)", append.strip()) if p]
    for param in params:
        if not _PARAM.match(param):
            raise BackendError(f"unikraft backend: kraft takes kernel arguments as lib.param=value, not {param!r}")
        if "," in param:
            raise BackendError(
                f"unikraft backend: kernel argument {param!r} has a comma, which kraft --kernel-arg splits on"
            )
    return params


def run_argv(launch: Launch, name: str, kernel: str, *, accel: str, args: Sequence[str]) -> list[str]:
    """`kraft run --detach ...` for launch; kraft always boots the pc machine, with -smp 1."""
    argv = [KRAFT, "run", "--detach", "--plat", "qemu", "--arch", "x86_64", "--name", name,
            "--memory", kraft_memory(launch.memory)]
    if accel == "tcg":
        argv.append("--disable-acceleration")
    for param in kernel_args(launch.append):
        argv += ["--kernel-arg", param]
    if launch.initrd:
        argv += ["--rootfs", launch.initrd]
    argv.append(kernel)
    app = [*launch.cmd, *args]
    return argv + (["--", *app] if app else [])


def parse_ps(stdout: str) -> list[dict[str, str]]:
    """The machines in `kraft ps -o json` output (a JSON array, or null when there are none)."""
    try:
        rows = json.loads(stdout or "null")
    except json.JSONDecodeError as exc:
        raise BackendError(f"kraft ps -o json printed no JSON: {exc}: {stdout[:200]!r}") from None
    if rows is None:
        return []
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise BackendError(f"kraft ps -o json: expected an array of objects, got {stdout[:200]!r}")
    return rows


class Kraft:
    """The kraft commands the backend runs on its host."""

    def __init__(self, host: Host) -> None:
        self.host = host

    async def version(self) -> str:
        """kraft's version line; BackendError when kraft is not there."""
        result = await run_on(self.host, [KRAFT, "version"], timeout=30.0)
        if not result.ok:
            raise BackendError(f"kraft version failed on host {self.host.name}: {last_line(result.stderr)}")
        return result.stdout.strip().splitlines()[0] if result.stdout.strip() else "kraft"

    async def machines(self) -> list[dict[str, str]]:
        """Every machine kraft knows, running or not (`kraft ps --long --all -o json`)."""
        result = await run_on(self.host, [KRAFT, "ps", "--long", "--all", "-o", "json"], timeout=60.0)
        if not result.ok:
            raise BackendError(f"kraft ps on host {self.host.name} exited {result.returncode}: "
                               f"{last_line(result.stderr)}")
        return parse_ps(result.stdout)

    async def forget(self, name: str) -> None:
        """`kraft rm NAME` after a failed start, best effort (labtui-qemu already ended its QEMU)."""
        await run_on(self.host, [KRAFT, "rm", name], timeout=60.0)

    async def runnable_kernel(self, kernel: str) -> str:
        """A copy of a labtui test kernel that kraft accepts (an empty .uk_inittab section), cached beside it."""
        target = f"{kernel}.kraft"
        if (await run_on(self.host, ["test", "-f", target], timeout=30.0)).ok:
            return target
        partial = f"{target}.{secrets.token_hex(4)}.partial"
        made = await run_on(self.host, ["objcopy", "--add-section", f"{UK_SECTION}=/dev/null", kernel, partial],
                            timeout=60.0)
        if not made.ok:
            raise BackendError(f"objcopy on host {self.host.name} (binutils) could not mark {kernel} for kraft: "
                               f"{last_line(made.stderr)}")
        moved = await run_on(self.host, ["mv", "-f", partial, target], timeout=30.0)
        if not moved.ok:
            raise BackendError(f"unikraft backend on host {self.host.name}: mv {partial}: {last_line(moved.stderr)}")
        return target


def instance_from_ps(row: dict[str, str], backend: str, host: str) -> Instance | None:
    """An Instance from one `kraft ps --long -o json` row, None when it carries no lab labels."""
    labels = labels_from_machine(row.get("name", ""))
    # kraftkit before 0.7 wrote "machine id", later versions "machine_id"
    machine_id = row.get("machine_id", row.get("machine id", ""))
    if labels is None or not _MACHINE_ID.fullmatch(machine_id):
        return None
    pid = int(row["pid"]) if row.get("pid", "").isdigit() else 0
    status = row.get("status", "unknown")
    return Instance(
        labels=labels,
        name=lab_name(labels),
        backend=backend,
        host=host,
        state="running" if status == "running" else status,
        handle=handle(machine_id, pid),
        details={"pid": pid, "machine_id": machine_id, "kraft_name": row["name"], "mode": "kraft",
                 "kernel": row.get("kernel", ""), "memory": row.get("mem", ""), "kraft_status": status},
    )
