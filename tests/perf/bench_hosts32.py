"""Benchmark labtui with 32 SSH hosts: 32 real sshd on 127.0.0.10-41, all sharing this machine's cores.

    python tests/perf/bench_hosts32.py [--rounds N] [--only exec,persist,check,run] [--no-sftp]

Prints, in one run:
- cold `labtui exec -- true` (the whole command, interpreter start-up included) on 1 and on 32 hosts,
  and OpenSSH's own parallel fan-out (32 `ssh HOST true` started at once, same key and known_hosts,
  BatchMode) in the same rounds, alternating (floor: labtui's 32-host time beats OpenSSH's);
- `labtui exec -- true` with kept connections (persist_s: the background mux) on 32 hosts against
  1 host (floor: at most 1.5x);
- labtui's memory with 32 hosts: peak RSS of a cold `labtui exec` on 32, of the mux holding 32, and of
  the 32-host `labtui run`;
- `labtui hosts check` on all 32: how many are reachable (floor: all 32);
- `labtui run boot-scaling --profile quick --host h0 ... --host h31` into one store: how many of the
  32 sessions completed (floor: all 32), and how long it took.

--no-sftp starts the servers without the SFTP subsystem (files then go over exec channels).
"""

from __future__ import annotations

import argparse
import getpass
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's labtui, not an installed one

import duckdb
from common import report
from sshd_fixture import Sshd, host_table, start_sshd, write_key

HOSTS = 32
FIRST_ADDRESS = 10  # 127.0.0.10 .. 127.0.0.41
REPO = Path(__file__).resolve().parents[2]
MAX_PERSISTED_SLOWDOWN = 1.5


def labtui(args: list[str], config: Path, tmp: Path, timeout: float = 1800) -> tuple[subprocess.CompletedProcess, float, int]:
    """Run labtui from this checkout: (completed process, wall seconds, its peak RSS in KiB)."""
    env = {**os.environ, "LABTUI_CONFIG": str(config), "LABTUI_RUNTIME_DIR": str(tmp / "rt"), "COLUMNS": "200"}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "labtui", *args], cwd=REPO, env=env, stdout=out, stderr=err)
        killer = threading.Timer(timeout, proc.kill)
        killer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage: its peak RSS
        finally:
            killer.cancel()
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out.read().decode(errors="replace"),
                                           err.read().decode(errors="replace"))
    return done, wall, usage.ru_maxrss


def exec_argv(names: list[str]) -> list[str]:
    return ["exec", *(a for n in names for a in ("--host", n)), "--", "true"]


def ssh_fanout(tmp: Path, servers: list[Sshd]) -> float:
    """OpenSSH's own parallel fan-out: every `ssh HOST true` started at once, then all waited for."""
    started = time.perf_counter()
    procs = [subprocess.Popen(
        ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
         "-o", f"UserKnownHostsFile={tmp / 'known_hosts'}", "-o", "StrictHostKeyChecking=yes",
         "-o", "ConnectTimeout=60", "-i", str(tmp / "client_key"), "-p", str(s.port),
         f"{getpass.getuser()}@{s.address}", "true"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for s in servers]
    failed = [p.communicate()[1].decode(errors="replace").strip() for p in procs]
    failed = [f for p, f in zip(procs, failed) if p.returncode != 0]
    took = time.perf_counter() - started
    if failed:
        print(f"  OpenSSH fan-out: {len(failed)} of {len(servers)} failed, e.g. {failed[0]}", flush=True)
    return took


def timed_exec(names: list[str], config: Path, tmp: Path) -> float:
    done, wall, _ = labtui(exec_argv(names), config, tmp)
    if done.returncode != 0:
        raise SystemExit(f"labtui exec on {len(names)} hosts failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    return wall


def bench_exec(tmp: Path, servers: list[Sshd], config: Path, names: list[str], rounds: int) -> None:
    timed_exec(names, config, tmp)  # warm the page cache and every host's runtime dir
    ones, alls, openssh = [], [], []
    for _ in range(rounds):  # alternating, so both see the same machine
        ones.append(timed_exec(names[:1], config, tmp))
        alls.append(timed_exec(names, config, tmp))
        openssh.append(ssh_fanout(tmp, servers))
    one, all_, ssh = statistics.median(ones), statistics.median(alls), statistics.median(openssh)
    ssh_one = statistics.median(ssh_fanout(tmp, servers[:1]) for _ in range(rounds))
    report("cold labtui exec -- true on 1 host", one, "s", "no persist_s: Python start-up, connect, one login shell")
    report(f"cold labtui exec -- true on {HOSTS} hosts", all_, "s", "1 host", all_ / one)
    report("OpenSSH `ssh HOST true` on 1 host", ssh_one, "s", "the OpenSSH client")
    report(f"OpenSSH parallel fan-out, {HOSTS} `ssh HOST true` at once", ssh, "s", "1 host", ssh / ssh_one)
    report(f"cold labtui exec on {HOSTS} hosts against OpenSSH's parallel fan-out", all_ / ssh, "x",
           "OpenSSH's time, same rounds (floor: under 1)", all_ / ssh, ok=all_ < ssh)
    _, _, rss = labtui(exec_argv(names), config, tmp)
    report(f"peak RSS of labtui exec on {HOSTS} hosts (cold)", rss / 1024, "MiB", "the whole process")


def mux_pids(config: Path) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit():
                words = (entry / "cmdline").read_bytes().split(b"\0")
                if b"labtui.hosts.mux" in words and str(config).encode() in words:
                    found.append(int(entry.name))
        except OSError:
            pass
    return found


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def bench_persist(tmp: Path, servers: list[Sshd], names: list[str], rounds: int) -> None:
    persisted = tmp / "labtui-persist.toml"
    persisted.write_text("".join(host_table(f"h{i}", s, tmp, persist_s=600) for i, s in enumerate(servers)))
    try:
        timed_exec(names, persisted, tmp)  # runs itself, then starts the mux, which connects to all 32
        deadline = time.monotonic() + 300
        while not mux_pids(persisted) and time.monotonic() < deadline:
            time.sleep(0.2)
        timed_exec(names, persisted, tmp)  # served by the mux (connecting whatever it has not yet)
        ones, alls = [], []
        for _ in range(rounds):
            ones.append(timed_exec(names[:1], persisted, tmp))
            alls.append(timed_exec(names, persisted, tmp))
        one, all_ = statistics.median(ones), statistics.median(alls)
        report("labtui exec -- true on 1 host, persist_s", one, "s", "the whole command, served by the mux")
        report(f"labtui exec -- true on {HOSTS} hosts, persist_s", all_, "s",
               f"1 host (floor: at most {MAX_PERSISTED_SLOWDOWN}x)", all_ / one, ok=all_ / one <= MAX_PERSISTED_SLOWDOWN)
        for pid in mux_pids(persisted):
            report(f"RSS of the mux holding {HOSTS} hosts", rss_kib(pid) / 1024, "MiB",
                   "its connections and runners, after the rounds")
    finally:
        labtui(["hosts", "disconnect"], persisted, tmp, timeout=120)


def bench_check(tmp: Path, config: Path) -> None:
    done, wall, _ = labtui(["hosts", "check"], config, tmp)
    rows = [line for line in done.stdout.splitlines() if re.match(r"^[│|]\s*h\d+\s", line)]
    reachable = sum(1 for line in rows if re.search(r"[│|]\s*yes\s", line))
    report(f"labtui hosts check on {HOSTS} hosts", reachable, f"of {HOSTS} reachable",
           f"{wall:.1f} s, exit {done.returncode} (floor: all)", ok=reachable == HOSTS and done.returncode == 0)
    if reachable != HOSTS:
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n", flush=True)


def bench_run(tmp: Path, config: Path, names: list[str]) -> None:
    db = tmp / "hosts32.duckdb"
    args = ["run", "boot-scaling", "--profile", "quick", *(a for n in names for a in ("--host", n)), "--db", str(db)]
    done, wall, rss = labtui(args, config, tmp, timeout=3600)
    con = duckdb.connect(str(db), read_only=True)
    try:
        statuses = dict(con.execute("select status, count(*) from sessions group by all").fetchall())
        messages = [m for (m,) in con.execute(
            "select message from sessions where status <> 'completed' limit 3").fetchall()]
    finally:
        con.close()
    completed = statuses.get("completed", 0)
    report(f"labtui run boot-scaling --profile quick on {HOSTS} hosts", completed, f"of {HOSTS} sessions completed",
           f"{wall:.1f} s, exit {done.returncode}, statuses {statuses} (floor: all)",
           ok=completed == HOSTS and done.returncode == 0)
    report(f"peak RSS of labtui run on {HOSTS} hosts", rss / 1024, "MiB", "the whole process, 32 sessions")
    for message in messages:
        print(f"  not completed: {message}", flush=True)
    if done.returncode != 0:
        print(done.stderr[-3000:], flush=True)


def main(tmp: Path, rounds: int, only: set[str], sftp: bool) -> None:
    write_key(tmp / "client_key")
    servers: list[Sshd] = []
    try:
        for i in range(HOSTS):
            servers.append(start_sshd(tmp / f"s{i}", f"127.0.0.{FIRST_ADDRESS + i}", tmp / "client_key.pub", sftp=sftp))
        config = tmp / "labtui.toml"
        config.write_text("".join(host_table(f"h{i}", s, tmp) for i, s in enumerate(servers)))
        (tmp / "known_hosts").write_text("".join(
            f"[{s.address}]:{s.port} " + " ".join(s.host_key.export_public_key("openssh").decode().split()[:2]) + "\n"
            for s in servers))
        names = [f"h{i}" for i in range(HOSTS)]
        print(f"{HOSTS} sshd on 127.0.0.{FIRST_ADDRESS}-{FIRST_ADDRESS + HOSTS - 1}, {os.cpu_count()} CPUs, "
              f"{'with' if sftp else 'without'} SFTP", flush=True)
        if "exec" in only:
            bench_exec(tmp, servers, config, names, rounds)
        if "persist" in only:
            bench_persist(tmp, servers, names, rounds)
        if "check" in only:
            bench_check(tmp, config)
        if "run" in only:
            bench_run(tmp, config, names)
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each exec timing (median)")
    parser.add_argument("--only", default="exec,persist,check,run", help="comma-separated parts to run")
    parser.add_argument("--no-sftp", action="store_true", help="servers without the SFTP subsystem")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="labtui-bench-hosts32-") as d:
        main(Path(d), args.rounds, set(args.only.split(",")), not args.no_sftp)
