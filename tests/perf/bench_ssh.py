"""Benchmark SSHHost and `labtui exec` against real sshd processes on loopback: prints figures.

    python tests/perf/bench_ssh.py [--quick]

- run() round trip: median and p90 of 100 sequential `true` over one pooled connection;
- 32 concurrent `true` on one host (the pool opens extra connections);
- `labtui exec -- true` (the whole command, interpreter start-up included, as a user runs it)
  on 8 hosts against 1 host (floor: at most 1.5x), and against a sequential loop of
  `ssh HOST true` with the OpenSSH client, same key and known_hosts, BatchMode (floor: 4x faster),
  cold (no persist_s: every run connects) and with persist_s (the mux keeps the connections, as
  OpenSSH's ControlPersist would; the floors are judged there);
  the same two ratios for the fan-out alone (run_on_hosts in this process: connect, run, close);
- sampling: controller CPU (process time) while 8 hosts are sampled at 1 Hz through
  their long-lived sampler channels, as a share of one core (floor: under 3%).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one

from common import median_time, report
from sshd_fixture import Sshd, host_table, start_sshd, write_key

from labtui.hosts.config import HostConfig, load_lab_config
from labtui.hosts.fanout import run_on_hosts
from labtui.hosts.ssh import SSHHost

HOSTS = 8
REPO = Path(__file__).resolve().parents[2]
#: The issue's floors.
MAX_SLOWDOWN_8_OVER_1 = 1.5
MIN_SPEEDUP_OVER_SSH_LOOP = 4.0
MAX_SAMPLING_SHARE = 0.03


def main(tmp: Path, quick: bool) -> None:
    write_key(tmp / "client_key")
    servers = [start_sshd(tmp / f"s{i}", f"127.0.0.{i + 2}", tmp / "client_key.pub") for i in range(HOSTS)]
    try:
        config = tmp / "labtui.toml"
        config.write_text("".join(host_table(f"h{i}", s, tmp) for i, s in enumerate(servers)))
        (tmp / "known_hosts").write_text("".join(
            f"[{s.address}]:{s.port} " + " ".join(s.host_key.export_public_key("openssh").decode().split()[:2]) + "\n"
            for s in servers))
        os.environ["LABTUI_CONFIG"] = str(config)
        os.environ["LABTUI_RUNTIME_DIR"] = str(tmp / "rt")
        configs = list(load_lab_config(config).hosts.values())
        asyncio.run(on_hosts(configs[:1], lambda hosts: bench_run(hosts[0])))
        bench_exec(tmp, servers, rounds=3 if quick else 7)
        asyncio.run(on_hosts(configs, lambda hosts: bench_sampling(hosts, seconds=10 if quick else 30)))
    finally:
        for s in servers:
            s.stop()


async def on_hosts(configs: list[HostConfig], bench: Callable[[list[SSHHost]], Awaitable[None]]) -> None:
    hosts = [SSHHost(cfg) for cfg in configs]
    try:
        await bench(hosts)
    finally:
        await asyncio.gather(*(h.close() for h in hosts))


async def bench_run(one: SSHHost) -> None:
    await one.run(["true"])  # connect first
    rtts = []
    for _ in range(100):
        started = time.perf_counter()
        await one.run(["true"])
        rtts.append(time.perf_counter() - started)
    rtts.sort()
    report("run(['true']) round trip over SSH, median", statistics.median(rtts) * 1e3, "ms",
           "100 sequential calls on one connection")
    report("run(['true']) round trip over SSH, p90", rtts[89] * 1e3, "ms", "100 sequential calls on one connection")
    started = time.perf_counter()
    await asyncio.gather(*(one.run(["true"]) for _ in range(32)))
    report("32 concurrent run(['true']) on one host", (time.perf_counter() - started) * 1e3, "ms",
           f"{len(one._conns)} pooled connections")


def _labtui_exec(names: list[str], config: Path | None = None) -> None:
    argv = [sys.executable, "-m", "labtui", "exec", *(a for n in names for a in ("--host", n)), "--", "true"]
    env = {**os.environ, **({"LABTUI_CONFIG": str(config)} if config else {})}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=REPO, env=env)  # this checkout's labtui
    if done.returncode != 0:
        raise SystemExit(f"labtui exec failed: {done.stdout}{done.stderr}")


def _ssh_loop(tmp: Path, servers: list[Sshd]) -> None:
    for s in servers:
        subprocess.run(
            ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
             "-o", f"UserKnownHostsFile={tmp / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
             "-i", str(tmp / "client_key"), "-p", str(s.port), f"{getpass.getuser()}@{s.address}", "true"],
            check=True, capture_output=True,
        )


def bench_exec(tmp: Path, servers: list[Sshd], rounds: int) -> None:
    names = [f"h{i}" for i in range(HOSTS)]
    loop = median_time(lambda: _ssh_loop(tmp, servers), rounds)
    report("sequential `ssh HOST true` on 8 hosts", loop, "s", "OpenSSH client, BatchMode, same key and known_hosts")
    _labtui_exec(names)  # warm the page cache and every host's runtime dir
    one = median_time(lambda: _labtui_exec(names[:1]), rounds)
    eight = median_time(lambda: _labtui_exec(names), rounds)
    report("cold labtui exec -- true on 1 host", one, "s", "no persist_s: connect, authenticate, one login shell")
    report("cold labtui exec -- true on 8 hosts", eight, "s", "1 host", eight / one)
    report("cold labtui exec on 8 hosts, speed-up", loop / eight, "x", "the sequential ssh loop", loop / eight)

    persisted = tmp / "labtui-persist.toml"  # the same hosts with persist_s: the mux keeps them connected
    persisted.write_text("".join(host_table(f"h{i}", s, tmp, persist_s=300) for i, s in enumerate(servers)))
    _labtui_exec(names, persisted)  # starts the mux, which connects to every host
    time.sleep(3)
    one = median_time(lambda: _labtui_exec(names[:1], persisted), rounds)
    eight = median_time(lambda: _labtui_exec(names, persisted), rounds)
    subprocess.run([sys.executable, "-m", "labtui", "hosts", "disconnect"], cwd=REPO, capture_output=True,
                   env={**os.environ, "LABTUI_CONFIG": str(persisted)}, check=False)
    report("labtui exec -- true on 1 host", one, "s", "persist_s: the whole command, interpreter start-up included")
    report("labtui exec -- true on 8 hosts", eight, "s", "1 host (floor: at most 1.5x)", eight / one,
           ok=eight / one <= MAX_SLOWDOWN_8_OVER_1)
    report("labtui exec on 8 hosts, speed-up", loop / eight, "x", "the sequential ssh loop (floor: at least 4x)",
           loop / eight, ok=loop / eight >= MIN_SPEEDUP_OVER_SSH_LOOP)

    def fanout(hosts: list[str]) -> float:
        started = time.perf_counter()
        outcomes = asyncio.run(run_on_hosts(hosts, ["true"], timeout=30))
        if not all(o.ok for o in outcomes):
            raise SystemExit(f"fan-out failed: {[o.error for o in outcomes if not o.ok]}")
        return time.perf_counter() - started

    fan_one = statistics.median(fanout(names[:1]) for _ in range(rounds))
    fan_eight = statistics.median(fanout(names) for _ in range(rounds))
    report("fan-out alone (connect, true, close) on 8 hosts", fan_eight, "s", "1 host, in one process",
           fan_eight / fan_one)
    report("fan-out alone on 8 hosts, speed-up", loop / fan_eight, "x", "the sequential ssh loop", loop / fan_eight)


async def bench_sampling(hosts: list[SSHHost], seconds: int) -> None:
    await asyncio.gather(*(h.sample() for h in hosts))  # connect and start every sampler
    cpu0, wall0 = time.process_time(), time.perf_counter()

    async def sample_for(host: SSHHost) -> int:
        n = 0
        async for _ in host.samples(1.0):
            n += 1
            if n == seconds:
                return n
        return n

    counts = await asyncio.gather(*(sample_for(h) for h in hosts))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    share = cpu / wall
    report(f"sampling {HOSTS} hosts at 1 Hz, controller CPU", 100 * share, "% of one core",
           f"{sum(counts)} samples in {wall:.1f} s (floor: under 3%)", share / MAX_SAMPLING_SHARE,
           ok=share < MAX_SAMPLING_SHARE)
    report("controller CPU per remote sample", cpu / sum(counts) * 1e3, "ms", "process time / samples")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds and a 10 s sampling window")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="labtui-bench-ssh-") as d:
        main(Path(d), args.quick)
