"""Benchmark the start barrier of creation suites: how far apart the instances' runs start.

    python tests/perf/bench_start_barrier.py [--quick]

`creation.where = "all"` holds every instance's benchmark to one start with labtui-runat
(the Xen study's UDP trigger, which started all domains "in 0.01s").  This runs
zone-concurrent's protocol with `labtui run` on every backend that can exec here and prints
the largest `creation/start_spread_ms` of the run (floor: under 10 ms) and the median:

- process: processes on this machine;
- docker: containers on the local engine (skipped when no engine answers);
- zones: the simulated illumos host behind a real sshd on 127.0.0.25;
- xen: guests of the simulated Domain-0 on 127.0.0.26, each a real sshd on 127.0.10.0/28,
  reached over SSH through Domain-0 (xen-concurrent).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import duckdb
from common import report
from simulators.fakehost import start_fake_host, write_lab
from simulators.guest import make_guest_image
from sshd_fixture import free_port, write_key

REPO = Path(__file__).resolve().parents[2]
#: The issue's goal for the spread of one round's starts.
GOAL_MS = 10.0


def spreads(db: Path) -> list[float]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return [v for (v,) in con.execute("select value from results where metric = 'start_spread_ms'").fetchall()]
    finally:
        con.close()


def run(name: str, suite: str, args: list[str], env: dict[str, str], db: Path) -> None:
    """labtui run SUITE ARGS, then the spread figures of its rounds (rounds with one instance left out)."""
    done = subprocess.run([sys.executable, "-m", "labtui", "run", suite, *args, "--db", str(db)], env=env,
                          capture_output=True, text=True, timeout=1800, cwd=REPO)
    if done.returncode != 0:
        print(f"{name}: labtui run {suite} failed (exit {done.returncode}): {(done.stderr or done.stdout)[-600:]}")
        return
    values = spreads(db)[1:]  # step 1 has a single instance: nothing to spread
    if not values:
        print(f"{name}: no start_spread_ms recorded")
        return
    report(f"{name} worst start spread over {len(values)} rounds of 2..{len(values) + 1} instances", max(values),
           "ms", f"the {GOAL_MS:g} ms goal", ok=max(values) < GOAL_MS)
    report(f"{name} median start spread", statistics.median(values), "ms", "the same rounds")


def docker_answers() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def main(tmp: Path, quick: bool) -> None:
    steps = 4 if quick else 8
    common = ["--set", f"scale.steps={steps}", "--set", 'worker.args=["int", "0.2"]', "--set", "sampling.interval_s=5"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "LABTUI_RUNTIME_DIR": str(tmp / "rt"), "COLUMNS": "200"}
    run("process", "zone-concurrent", ["--backend", "process", *common], env, tmp / "process.duckdb")
    if docker_answers():
        run("docker", "zone-concurrent", ["--backend", "docker", *common], env, tmp / "docker.duckdb")
    else:
        print("docker: skipped (no engine answers `docker info`)")
    write_key(tmp / "client_key")
    illumos = start_fake_host(tmp / "illumos", "zbench", "127.0.0.25", "zones", tmp / "client_key.pub")
    dom0 = start_fake_host(tmp / "dom0", "xbench", "127.0.0.26", "xen", tmp / "client_key.pub")
    try:
        illumos.knobs(install_s=0.05, boot_s=0.05)
        image = make_guest_image(tmp / "guest", tmp / "client_key.pub", free_port("127.0.10.1"))
        config = write_lab(tmp, [illumos, dom0], tmp)
        (tmp / "guest_known_hosts").write_text(image.known_hosts_line("127.0.10.*"))
        config.write_text(config.read_text() + f'\n[hosts.xbench.guests]\nkernel = "{image.kernel}"\n'
                          f'addresses = "127.0.10.0/28"\nport = {image.port}\nidentity = "{tmp / "client_key"}"\n'
                          f'known_hosts = "{tmp / "guest_known_hosts"}"\n')
        env["LABTUI_CONFIG"] = str(config)
        run("zones (simulated, over SSH)", "zone-concurrent", ["--host", "zbench", *common], env, tmp / "zones.duckdb")
        run("xen guests (simulated, over SSH)", "xen-concurrent", ["--host", "xbench", *common], env,
            tmp / "xen.duckdb")
    finally:
        dom0.tool("sh", "-c", "for n in $(xl list | tail -n +3 | cut -c1-40); do xl destroy $n; done")
        illumos.server.stop()
        dom0.server.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 instances instead of 8")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="labtui-bench-barrier-") as directory:
        main(Path(directory), options.quick)
