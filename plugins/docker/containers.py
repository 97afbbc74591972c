"""What a container is made of: the extended spec, its Engine API create body, labels and names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from labtui.backends.kit import BackendError, InstanceSpec, Labels

LABEL_SESSION = "labtui.session"
LABEL_ROLE = "labtui.role"
LABEL_INSTANCE = "labtui.instance"
#: Container names the engine accepts.
_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")


@dataclass(frozen=True, slots=True)
class ContainerSpec(InstanceSpec):
    """An InstanceSpec with what only containers have.

    ``tmpfs`` pairs a mount point with its mount options (``("/tmp", "size=64m")``);
    ``cpu_limit`` is in CPUs (``0.5`` is half a CPU).  Ports are the
    InstanceSpec's own: each is published on 127.0.0.1 at a port the engine
    picks (recorded in ``Instance.details["ports"]``).
    """

    tmpfs: tuple[tuple[str, str], ...] = ()
    cpu_limit: float | None = None


def labels_of(labels: Labels) -> dict[str, str]:
    """The engine labels carrying the lab labels."""
    return {LABEL_SESSION: labels.session, LABEL_ROLE: labels.role, LABEL_INSTANCE: labels.instance}


def lab_labels(engine_labels: dict[str, str] | None) -> Labels | None:
    """The lab labels of a container, or None when it does not carry all three."""
    found = engine_labels or {}
    try:
        return Labels(found[LABEL_SESSION], found[LABEL_ROLE], found[LABEL_INSTANCE])
    except KeyError:
        return None


def container_name(labels: Labels) -> str | None:
    """``labtui-<session>-<instance>`` when the engine accepts it as a name, else None (engine picks)."""
    name = f"labtui-{labels.session}-{labels.instance}"
    return name if _NAME.fullmatch(name) and len(name) <= 128 else None


def create_body(spec: InstanceSpec, image: str, cmd: list[str] | None,
                entrypoint: list[str] | None = None, *, runtime: str | None = None) -> dict[str, Any]:
    """The body of ``POST /containers/create`` for spec, running cmd (None: the image's own).

    ``entrypoint`` replaces the image's (None keeps it); ``runtime`` is the engine runtime to run it
    with (``HostConfig.Runtime``; None: the engine's default).
    """
    host: dict[str, Any] = {}
    if runtime is not None:
        host["Runtime"] = runtime
    if spec.cpus:
        host["CpusetCpus"] = spec.cpus
    if spec.mem_limit_bytes is not None:
        host["Memory"] = spec.mem_limit_bytes
    if spec.cpu_weight is not None:
        host["CpuShares"] = max(2, round(spec.cpu_weight * 1024 / 100))
    if spec.cpu_cap is not None:
        host["NanoCpus"] = round(spec.cpu_cap * 1e9)
    body: dict[str, Any] = {"Image": image, "Labels": labels_of(spec.labels), "HostConfig": host}
    if entrypoint is not None:
        body["Entrypoint"] = entrypoint
    if cmd is not None:
        body["Cmd"] = cmd
    if isinstance(spec, ContainerSpec):
        if spec.cpu_limit is not None:
            host["NanoCpus"] = int(spec.cpu_limit * 1e9)
        if spec.tmpfs:
            host["Tmpfs"] = dict(spec.tmpfs)
    if spec.ports:
        body["ExposedPorts"] = {f"{p}/tcp": {} for p in spec.ports}
        host["PortBindings"] = {f"{p}/tcp": [{"HostIp": "127.0.0.1", "HostPort": ""}] for p in spec.ports}
    return body


def validate(spec: InstanceSpec) -> None:
    """Refuse a spec the docker backend cannot honour, with the reason."""
    if spec.tool is not None:
        raise BackendError(f"docker backend runs programs in images, not tools from the host ({spec.tool!r}): "
                           "put the tool in an image and name it with image and args")
    if bool(spec.program) == bool(spec.image):
        raise BackendError("docker backend needs exactly one of spec.program (a probe) or spec.image")
    if spec.wait not in ("ready", "exit"):
        raise BackendError(f"docker backend: wait must be 'ready' or 'exit', not {spec.wait!r}")
    if spec.start_at is not None and not spec.start_at > 0:
        raise BackendError(f"docker backend: start_at must be epoch seconds (> 0), not {spec.start_at}")
    if spec.mem_limit_bytes is not None and spec.mem_limit_bytes < 6 * 1024 * 1024:
        raise BackendError(f"docker backend: memory limit {spec.mem_limit_bytes} is below the engine's 6 MiB minimum")
    if isinstance(spec, ContainerSpec):
        if spec.cpu_limit is not None and spec.cpu_limit <= 0:
            raise BackendError(f"docker backend: cpu_limit must be > 0, got {spec.cpu_limit}")
        if spec.cpu_limit is not None and spec.cpu_cap is not None:
            raise BackendError("docker backend: give cpu_cap or cpu_limit, not both (both set NanoCpus)")
        for path, _ in spec.tmpfs:
            if not path.startswith("/"):
                raise BackendError(f"docker backend: tmpfs mount point {path!r} is not an absolute path")
    if spec.cpu_weight is not None and not 1 <= spec.cpu_weight <= 10000:
        raise BackendError(f"docker backend: cpu_weight must be from 1 to 10000, not {spec.cpu_weight}")
    if spec.cpu_cap is not None and not spec.cpu_cap >= 0.01:
        raise BackendError(f"docker backend: cpu_cap must be at least 0.01 CPUs, not {spec.cpu_cap}")
    for port in spec.ports:
        if not 1 <= port <= 65535:
            raise BackendError(f"docker backend: port {port} is not in 1-65535")
    for value in (spec.labels.session, spec.labels.role, spec.labels.instance):
        if not value or len(value) > 255 or "\0" in value:
            raise BackendError(f"docker backend: bad label {value!r} (1-255 characters)")


def memory_used(stats: dict[str, Any]) -> int | None:
    """Memory charged to a container from a stats answer, as `docker stats` computes it.

    Usage minus the inactive file cache (``total_inactive_file`` on cgroup v1,
    ``inactive_file`` on v2); None when the engine reports no memory (the
    container is not running).
    """
    memory = stats.get("memory_stats") or {}
    usage = memory.get("usage")
    if usage is None:
        return None
    detail = memory.get("stats") or {}
    inactive = detail.get("total_inactive_file", detail.get("inactive_file", 0))
    return int(usage - inactive) if inactive < usage else int(usage)


def cpu_used(stats: dict[str, Any]) -> int | None:
    """CPU time a container used so far (ns: ``cpu_stats.cpu_usage.total_usage``) from a stats answer.

    None when the engine took no reading (``read`` is the zero time: the container is not running, and
    its figures are zeros).
    """
    if str(stats.get("read", "")).startswith("0001-"):
        return None
    total = ((stats.get("cpu_stats") or {}).get("cpu_usage") or {}).get("total_usage")
    return None if total is None else int(total)
