"""Benchmark the boot of a hello instance on each backend, side by side: process, Docker (runc), gVisor, Unikraft.

    python tests/perf/bench_boot_backends.py [--rounds N] [--warmup N] [--only NAME ...]

Boots the study's "hello world" instance once per contender per round, the
contenders interleaved within a round so that a change of the machine's load
touches all of them alike, and prints per contender n, the median, the spread
(min-max and the interquartile range) and the coefficient of variation of
``Instance.boot_s``, the figure the boot-scaling suites record:

- ``process``: the ``hello`` probe on the process backend (launch to exit);
- ``docker-runc``: the ``labtui/hello`` image on the docker backend, the engine's runc;
- ``docker-runsc``: the same under gVisor (``backend.runtime = runsc``);
- ``unikraft``: Unikraft's own ``app-helloworld`` built from source (``unikraft:helloworld``),
  QEMU launch to QEMU's exit, under the accelerator the backend chose (TCG here, printed).

No engine, no store: each instance is created with ``wait="exit"`` and
destroyed, through the backends' own API.  Contenders this machine cannot run
(no Docker, no runsc, no QEMU) are listed as skipped, with why.  The machine's
load average is printed first and last.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from labtui.backends.base import Backend, InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost


@dataclass
class Contender:
    """One way to boot hello: a backend, its settings and what the instance runs."""

    name: str
    backend: str
    settings: dict[str, object] = field(default_factory=dict)
    program: str | None = None
    image: str | None = None
    boots: list[float] = field(default_factory=list)
    opened: Backend | None = None
    skipped: str = ""


CONTENDERS = (
    Contender("process", "process", program="hello"),
    Contender("docker-runc", "docker", {"runtime": "runc"}, image="labtui/hello"),
    Contender("docker-runsc", "docker", {"runtime": "runsc"}, image="labtui/hello"),
    Contender("unikraft", "unikraft", image="unikraft:helloworld"),
)


async def _open(contender: Contender, host: LocalHost) -> None:
    """Open, check and prepare the contender's backend; a contender that cannot run is marked skipped."""
    try:
        backend = open_backend(contender.backend, host)
        backend.configure(contender.settings)
        available = await backend.check()
        if not available.usable:
            contender.skipped = available.reason
            return
        await backend.prepare([contender.program] if contender.program else [])
        await backend.prepare_images([contender.image] if contender.image else [])
    except Exception as exc:  # any reason this machine cannot boot it, said in the table
        contender.skipped = f"{type(exc).__name__}: {exc}"
        return
    contender.opened = backend


async def _boot(contender: Contender, session: str, index: int) -> float:
    """Boot hello once to its exit; its boot_s."""
    assert contender.opened is not None
    spec = InstanceSpec(Labels(session, "worker", f"w{index}"), program=contender.program, image=contender.image,
                        wait="exit", timeout_s=120)
    instance = await contender.opened.create(spec)
    try:
        if instance.exit_code not in (None, 0) or instance.boot_s is None:
            raise RuntimeError(f"{contender.name}: hello exited {instance.exit_code}, boot_s {instance.boot_s}")
        return instance.boot_s
    finally:
        await contender.opened.destroy(instance, force=True)


def _row(contender: Contender) -> str:
    if contender.skipped or not contender.boots:
        return f"{contender.name:<13} skipped: {contender.skipped or 'no boots'}"
    ms = sorted(b * 1000 for b in contender.boots)
    q1, _, q3 = statistics.quantiles(ms, n=4) if len(ms) > 1 else (ms[0], ms[0], ms[0])
    cov = statistics.stdev(ms) / statistics.mean(ms) * 100 if len(ms) > 1 else 0.0
    return (f"{contender.name:<13} n={len(ms):<3} median {statistics.median(ms):8.1f} ms   "
            f"min-max {ms[0]:7.1f}-{ms[-1]:<7.1f} IQR {q1:7.1f}-{q3:<7.1f} CoV {cov:4.1f}%")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="measured boots per contender (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="discarded boots per contender first (default 2)")
    parser.add_argument("--only", nargs="+", choices=[c.name for c in CONTENDERS], help="these contenders only")
    args = parser.parse_args()
    contenders = [c for c in CONTENDERS if not args.only or c.name in args.only]
    host = LocalHost()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    for contender in contenders:
        await _open(contender, host)
    session = f"bench-boot-{secrets.token_hex(3)}"
    running = [c for c in contenders if c.opened is not None]
    for contender in running:  # what each really runs under: the engine's runtime, KVM or TCG
        assert contender.opened is not None
        print(f"{contender.name} isolation: {await contender.opened.isolation()}", flush=True)
    for index in range(args.warmup + args.rounds):
        for contender in running:
            boot = await _boot(contender, session, index)
            if index >= args.warmup:
                contender.boots.append(boot)
    print(f"hello boot time, {args.rounds} rounds interleaved after {args.warmup} warm-up boots each:")
    for contender in contenders:
        print(_row(contender))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
