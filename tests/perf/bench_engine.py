"""Engine-side costs: process backend launch/teardown, the sampler, CLI start-up.

- process backend: 1000 sleepers launched and torn down in at most 15 s in total;
- the sampler's own cost: under 1% of one core at 1 Hz locally;
- `labtui --help` under 300 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one
from common import median_time, report

from labtui.backends.base import InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost


async def sleepers_round_trip(count: int) -> tuple[float, float]:
    backend = open_backend("process", LocalHost())
    await backend.prepare(["sleeper"])
    session = f"perf-{os.getpid()}"
    specs = [InstanceSpec(Labels(session, "background", f"b{i}"), program="sleeper") for i in range(count)]
    start = time.perf_counter()
    instances = await backend.create_many(specs)
    created = time.perf_counter()
    await backend.destroy_many(list(reversed(instances)))
    done = time.perf_counter()
    assert await backend.list(session) == [], "instances left behind"
    return created - start, done - created


async def sampler_cpu_share(seconds: float) -> float:
    host = LocalHost()
    before_cpu, before_wall = _cpu_seconds(), time.perf_counter()
    count = 0
    async for _ in host.samples(1.0):
        count += 1
        if count >= seconds:
            break
    return (_cpu_seconds() - before_cpu) / (time.perf_counter() - before_wall)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def help_time() -> float:
    cmd = [sys.executable, "-m", "labtui", "--help"]
    subprocess.run(cmd, check=True, capture_output=True)
    return median_time(lambda: subprocess.run(cmd, check=True, capture_output=True), 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a shorter sampler window")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as runtime:
        os.environ["LABTUI_RUNTIME_DIR"] = runtime
        create_s, destroy_s = asyncio.run(sleepers_round_trip(1000))
        total = create_s + destroy_s
        report("process_1000_sleepers", total, "s", f"ceiling 15 s (create {create_s:.2f} s, destroy {destroy_s:.2f} s)",
               15 / total, total <= 15)
        share = asyncio.run(sampler_cpu_share(10 if args.quick else 60))
        report("sampler_cpu_1hz", share * 100, "% of one core", "ceiling 1%", 0.01 / max(share, 1e-9), share < 0.01)
    elapsed = help_time()
    report("cli_help_startup", elapsed * 1000, "ms", "ceiling 300 ms", 0.3 / elapsed, elapsed < 0.3)


if __name__ == "__main__":
    main()
