"""Benchmark SSHHost against real sshd processes on loopback: prints figures, asserts nothing.

    python tests/perf/bench_ssh.py

- run() round trip: median and p90 of 100 sequential `true` over one pooled connection;
- 32 concurrent `true` on one host (the pool opens extra connections);
- sampling: controller CPU (process time) while 8 hosts are sampled at 1 Hz through
  their long-lived sampler channels, as a share of one core.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sshd_fixture import host_table, start_sshd, write_key  # noqa: E402

from labtui.hosts.config import load_lab_config  # noqa: E402
from labtui.hosts.ssh import SSHHost  # noqa: E402

HOSTS = 8
SAMPLE_SECONDS = 10


async def main(tmp: Path) -> None:
    write_key(tmp / "client_key")
    servers = [start_sshd(tmp / f"s{i}", f"127.0.0.{i + 2}", tmp / "client_key.pub") for i in range(HOSTS)]
    try:
        (tmp / "labtui.toml").write_text("".join(host_table(f"h{i}", s, tmp) for i, s in enumerate(servers)))
        (tmp / "known_hosts").write_text("".join(
            f"[{s.address}]:{s.port} " + " ".join(s.host_key.export_public_key("openssh").decode().split()[:2]) + "\n"
            for s in servers))
        lab = load_lab_config(tmp / "labtui.toml")
        hosts = [SSHHost(cfg) for cfg in lab.hosts.values()]
        try:
            await bench(hosts)
        finally:
            await asyncio.gather(*(h.close() for h in hosts))
    finally:
        for s in servers:
            s.stop()


async def bench(hosts: list[SSHHost]) -> None:
    one = hosts[0]
    await one.run(["true"])  # connect first
    rtts = []
    for _ in range(100):
        started = time.perf_counter()
        await one.run(["true"])
        rtts.append(time.perf_counter() - started)
    rtts.sort()
    print(f"run(['true']) round trip over SSH: median {statistics.median(rtts) * 1e3:.2f} ms, "
          f"p90 {rtts[89] * 1e3:.2f} ms (100 sequential calls, one connection)")

    started = time.perf_counter()
    await asyncio.gather(*(one.run(["true"]) for _ in range(32)))
    print(f"32 concurrent run(['true']) on one host: {(time.perf_counter() - started) * 1e3:.0f} ms "
          f"({len(one._conns)} connections)")

    await asyncio.gather(*(h.sample() for h in hosts))  # connect and start every sampler
    cpu0, wall0 = time.process_time(), time.perf_counter()

    async def sample_for(host: SSHHost) -> int:
        n = 0
        async for _ in host.samples(1.0):
            n += 1
            if n == SAMPLE_SECONDS:
                return n

    counts = await asyncio.gather(*(sample_for(h) for h in hosts))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    print(f"sampling {HOSTS} hosts at 1 Hz for {wall:.1f} s ({sum(counts)} samples): controller CPU "
          f"{cpu * 1e3:.0f} ms = {100 * cpu / wall:.2f}% of one core, {cpu / sum(counts) * 1e3:.2f} ms per sample")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="labtui-bench-ssh-") as d:
        asyncio.run(main(Path(d)))
