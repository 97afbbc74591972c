"""The ``load`` worker measure: a service instance under a load tool run on the host.

The worker (``labtui/nginx``, ``labtui/redis``, or any server image) is created
with its ``[load] port`` published on 127.0.0.1, checked ready by a request
the tool's protocol answers (an HTTP ``HEAD /`` for wrk, a ``PING`` for
redis-benchmark), then the tool runs on the host against ``127.0.0.1:<port>``
and its output is parsed into results.  The worker is destroyed after every run.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from labtui.backends.base import BackendError, Instance
from labtui.engine.context import RunContext
from labtui.hosts.base import CommandTimeout, Host, HostError
from labtui.parsers import ParseError, Reading
from labtui.parsers.redis_benchmark import parse_redis_benchmark_csv
from labtui.parsers.wrk import parse_wrk
from labtui.suites.model import Load, Worker

#: Debian packages that provide each tool, for the error when it is missing.
TOOL_PACKAGES = {"wrk": "wrk", "redis-benchmark": "redis-tools"}
#: What the readiness check sends (printf %b escapes) and the reply it must start with.
_READY_PROBES = {"wrk": ("HEAD / HTTP/1.0\\r\\n\\r\\n", "HTTP/"), "redis-benchmark": ("PING\\r\\n", "+PONG")}
#: Connects to 127.0.0.1:$1, sends $2, succeeds when the first reply line starts with $3.
_READY_SCRIPT = (
    'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1; printf "%b" "$2" >&3; '
    'IFS= read -r -t 2 line <&3 || exit 1; case "$line" in "$3"*) exit 0;; esac; exit 1'
)
_READY_POLL_S = 0.1
#: Seconds a wrk run may take beyond its duration (connecting, the summary).
_WRK_SLACK_S = 60.0
#: What a load tool prints when the server dropped or refused its connections.
_CONNECTION_LOST = ("Connection reset by peer", "Connection refused")


class ConnectionsDropped(BackendError):
    """The load tool failed because the worker reset or refused its connections."""


def load_argv(load: Load, host_port: int) -> list[str]:
    """The tool's argv against 127.0.0.1:host_port."""
    if load.tool == "wrk":
        return ["wrk", "-c", str(load.connections), "-t", str(load.threads), "-d", f"{load.duration_s}s",
                f"http://127.0.0.1:{host_port}/"]
    argv = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(host_port), "-c", str(load.connections),
            "-P", str(load.pipeline), "-n", str(load.requests), "-q", "--csv"]
    return argv + (["-t", ",".join(load.tests)] if load.tests else [])


def parse_load(load: Load, output: str) -> list[Reading]:
    """The readings in the tool's output; ParseError when it has none."""
    return parse_wrk(output) if load.tool == "wrk" else parse_redis_benchmark_csv(output)


async def measure_load(ctx: RunContext, worker: Worker, *, role: str = "worker", cpus: str | None = None,
                       placement: str = "", run: int = 0) -> list[Reading]:
    """One run (number `run` of the measurement): create the worker serving on its port, load it from the
    host, record, destroy.

    A worker that drops the tool's connections (seen: Redis on Unikraft under QEMU's TCG, reset right after
    it answered PING, then silent) is replaced once by a fresh one, with a warning that quotes the end of
    its console; a second drop is the step's error.  Readings are recorded as results unless role is
    ``"warmup"``.
    """
    try:
        instance, readings = await _load_one_worker(ctx, worker, role, cpus)
    except ConnectionsDropped as exc:
        ctx.log("warning", "load", f"{exc}; measuring once more on a fresh worker")
        instance, readings = await _load_one_worker(ctx, worker, role, cpus)
    if role != "warmup":
        for r in readings:
            ctx.result(r.benchmark, r.metric, r.value, r.unit, r.better, instance.labels.instance, placement=placement,
                       run=run)
    return readings


async def _load_one_worker(ctx: RunContext, worker: Worker, role: str,
                           cpus: str | None) -> tuple[Instance, list[Reading]]:
    """Create one worker, load it, destroy it; ConnectionsDropped (with its console's end) when it dropped them."""
    load = ctx.suite.load
    assert load is not None
    spec = replace(ctx.spec(role, worker, "ready", cpus=cpus), ports=(load.port,))
    (instance,) = await ctx.create([spec])
    try:
        host_port = published_port(ctx, instance, load.port)
        await wait_ready(ctx.host, load, host_port)
        try:
            async with ctx.measuring():
                readings = await run_tool(ctx.host, load, host_port, instance.name)
            return instance, readings
        except BackendError as exc:
            if not any(lost in str(exc) for lost in _CONNECTION_LOST):
                raise
            raise ConnectionsDropped(f"{exc}{await _console_end(ctx, instance)}") from exc
    finally:
        await ctx.destroy([instance])


async def _console_end(ctx: RunContext, instance: Instance, chars: int = 300) -> str:
    """'; its console ended: ...' with the last lines the backend kept of the instance's output, or ''."""
    try:
        log = await ctx.backend.logs(instance)
    except (BackendError, HostError):
        return ""
    tail = " | ".join(line for line in (log or "").strip()[-chars:].splitlines() if line.strip())
    return f"; its console ended: {tail}" if tail else ""


def published_port(ctx: RunContext, instance: Instance, port: int) -> int:
    """The host port (on 127.0.0.1) the backend published the instance's port at."""
    found = (instance.details.get("ports") or {}).get(port)
    if not found:
        raise BackendError(
            f"backend {ctx.backend.name} did not publish port {port} of {instance.name} on {ctx.host.name}; "
            'measure = "load" needs a backend that publishes ports (docker, unikraft)'
        )
    return int(found)


async def wait_ready(host: Host, load: Load, host_port: int) -> None:
    """Poll until the service on 127.0.0.1:host_port answers its protocol; BackendError after ready_timeout_s."""
    request, reply = _READY_PROBES[load.tool]
    argv = ["bash", "-c", _READY_SCRIPT, "ready", str(host_port), request, reply]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + load.ready_timeout_s
    while True:
        try:
            if (await host.run(argv, timeout=5.0)).ok:
                return
        except HostError as exc:
            raise BackendError(f"checking 127.0.0.1:{host_port} on host {host.name}: {exc}") from exc
        if loop.time() >= deadline:
            raise BackendError(
                f"the worker on 127.0.0.1:{host_port} (port {load.port}) on host {host.name} did not answer "
                f"within {load.ready_timeout_s:g} s"
            )
        await asyncio.sleep(_READY_POLL_S)


async def run_tool(host: Host, load: Load, host_port: int, name: str) -> list[Reading]:
    """Run the load tool on the host and parse what it printed; BackendError when it failed."""
    argv = load_argv(load, host_port)
    timeout = load.duration_s + _WRK_SLACK_S if load.tool == "wrk" else load.timeout_s
    try:
        done = await host.run(argv, timeout=min(timeout, load.timeout_s))
    except CommandTimeout as exc:
        raise BackendError(f"{load.tool} against {name} on host {host.name}: {exc}") from exc
    except HostError as exc:
        raise BackendError(f"{exc} (Debian: apt-get install {TOOL_PACKAGES[load.tool]})") from exc
    if not done.ok:
        tail = (done.stderr or done.stdout).strip()[-300:]
        raise BackendError(f"{load.tool} against {name} on host {host.name} exited {done.returncode}: {tail}")
    try:
        return parse_load(load, done.stdout)
    except ParseError as exc:
        raise BackendError(f"{load.tool} against {name} on host {host.name}: {exc}") from None
