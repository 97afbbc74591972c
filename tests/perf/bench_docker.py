"""Docker backend speed: 100 sleepers created and started at the default concurrency,
against a bash loop of `docker run -d` doing the same.  Target: at most half its time.

Needs a running Docker engine (CI starts one) and the `docker` CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one
from common import report

from labtui.backends.base import InstanceSpec, Labels, open_backend
from labtui.hosts.local import LocalHost

IMAGE = "labtui/sleeper"


async def labtui_seconds(count: int) -> float:
    backend = open_backend("docker", LocalHost())
    await backend.prepare(["sleeper"])
    session = f"perf-{secrets.token_hex(3)}"
    specs = [InstanceSpec(Labels(session, "background", f"b{i}"), program="sleeper") for i in range(count)]
    start = time.perf_counter()
    instances = await backend.create_many(specs)
    elapsed = time.perf_counter() - start
    await backend.destroy_many(instances, force=True)
    return elapsed


def bash_loop_seconds(count: int) -> float:
    tag = f"perf-bash-{secrets.token_hex(3)}"
    script = f'for i in $(seq 1 {count}); do docker run -d --label labtui-perf={tag} {IMAGE} >/dev/null; done'
    start = time.perf_counter()
    subprocess.run(["bash", "-c", script], check=True)
    elapsed = time.perf_counter() - start
    ids = subprocess.run(["docker", "ps", "-aq", "--filter", f"label=labtui-perf={tag}"],
                         check=True, capture_output=True, text=True).stdout.split()
    if ids:
        subprocess.run(["docker", "rm", "-f", *ids], check=True, capture_output=True)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="30 containers instead of 100")
    args = parser.parse_args()
    if not Path("/var/run/docker.sock").is_socket() or not shutil.which("docker"):
        print("docker: skipped (no engine socket or no docker CLI)")
        return 0
    count = 30 if args.quick else 100
    with tempfile.TemporaryDirectory() as runtime:
        os.environ["LABTUI_RUNTIME_DIR"] = runtime
        ours = asyncio.run(labtui_seconds(count))
    theirs = bash_loop_seconds(count)
    ratio = ours / theirs
    report(f"docker_{count}_sleepers_vs_bash_loop", ratio, "x the time of the loop",
           f"`docker run -d` loop {theirs:.2f} s vs labtui {ours:.2f} s, ceiling 0.5x", 0.5 / ratio, ratio <= 0.5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
