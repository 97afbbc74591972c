"""labtui's probes and attackers, compiled with cc and run briefly through the process backend."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from backend_lab import Lab

from labtui.backends.base import BackendError, InstanceSpec, Labels
from labtui.parsers import ParseError
from labtui.parsers.probe import parse_probe_output

BACKEND = "process"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "probe"

SHM = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"

# probe, args (run for ~0.1 s), the one reading expected: benchmark, metric, unit, better
PROBES = [
    ("syscall", ["getppid", "0.1"], ("syscall", "getppid_ns", "ns", "lower")),
    ("syscall", ["read", "0.1"], ("syscall", "read_ns", "ns", "lower")),
    ("syscall", ["write", "0.1"], ("syscall", "write_ns", "ns", "lower")),
    ("syscall", ["stat", "0.1"], ("syscall", "stat_ns", "ns", "lower")),
    ("syscall", ["openclose", "0.1"], ("syscall", "openclose_ns", "ns", "lower")),
    ("syscall", ["mix", "0.1"], ("syscall", "mix_ns", "ns", "lower")),
    ("proc", ["fork", "0.1"], ("proc", "fork_us", "us", "lower")),
    ("proc", ["fork", "0.1", "pin"], ("proc", "fork_pinned_us", "us", "lower")),
    ("proc", ["exec", "0.1"], ("proc", "exec_us", "us", "lower")),
    ("proc", ["exec", "0.1", "/bin/true"], ("proc", "exec_us", "us", "lower")),
    ("proc", ["shell", "0.1"], ("proc", "shell_us", "us", "lower")),
    ("proc", ["spawn", "0.1"], ("proc", "spawn_lps", "lps", "higher")),
    ("proc", ["execl", "0.1"], ("proc", "execl_lps", "lps", "higher")),
    ("proc", ["multi", "0.1", "2", SHM], ("proc", "shell2_lpm", "lpm", "higher")),
    ("ctxsw", ["context1", "0.1"], ("ctxsw", "context1_lps", "lps", "higher")),
    ("ctxsw", ["context1", "0.1", "pin"], ("ctxsw", "context1_pinned_lps", "lps", "higher")),
    ("ctxsw", ["lat_ctx", "0.1"], ("ctxsw", "ctx_2p_0k_us", "us", "lower")),
    ("ctxsw", ["lat_ctx", "0.2", "16", "4"], ("ctxsw", "ctx_4p_16k_us", "us", "lower")),
    ("pipe", ["0.1"], ("pipe", "pipe_mb_s", "MB/s", "higher")),
    ("arith", ["int", "0.1"], ("arith", "int_mops", "Mops/s", "higher")),
    ("arith", ["double", "0.1"], ("arith", "double_mops", "Mops/s", "higher")),
    ("filecreate", ["0.1", SHM], ("filecreate", "create_close_us", "us", "lower")),
    ("fileserver", ["0.1", "2", SHM], ("fileserver", "throughput_mb_s", "MB/s", "higher")),
    ("filecopy", ["256", "0.1", SHM, "256"], ("filecopy", "copy_256_kb_s", "KB/s", "higher")),
    ("filecopy", ["1024", "0.1", SHM, "256"], ("filecopy", "copy_1024_kb_s", "KB/s", "higher")),
    ("filecopy", ["4096", "0.1", SHM, "256"], ("filecopy", "copy_4096_kb_s", "KB/s", "higher")),
    ("mmap", ["map", "0.1", "1024", SHM], ("mmap", "mmap_1024k_us", "us", "lower")),
    ("mmap", ["pagefault", "0.1", "1024", SHM], ("mmap", "pagefault_us", "us", "lower")),
    ("mmap", ["anon-map", "0.1", "1024"], ("mmap", "anon_mmap_1024k_us", "us", "lower")),
    ("mmap", ["anon-pagefault", "0.1", "1024"], ("mmap", "anon_pagefault_ns", "ns", "lower")),
    ("stream", ["copy", "0.1", "8"], ("stream", "copy_mb_s", "MB/s", "higher")),
    ("stream", ["scale", "0.1", "8"], ("stream", "scale_mb_s", "MB/s", "higher")),
    ("stream", ["add", "0.1", "8"], ("stream", "add_mb_s", "MB/s", "higher")),
    ("stream", ["triad", "0.1", "8"], ("stream", "triad_mb_s", "MB/s", "higher")),
    ("hourglass", ["share", "0.1"], ("hourglass", "cpu_share", "ratio", "higher")),
    ("hourglass", ["maxgap", "0.1"], ("hourglass", "maxgap_us", "us", "lower")),
    ("sqlite", ["500", SHM], ("sqlite", "inserts_500_s", "s", "lower")),
]


async def run_probe(lab: Lab, program: str, args: list[str], cpus: str | None = None) -> str:
    labels = Labels(lab.session(), "worker", "w1")
    spec = InstanceSpec(labels, program=program, args=tuple(args), wait="exit", capture_output=True, cpus=cpus, timeout_s=30)
    instance = await lab.backend.create(spec)
    assert instance.exit_code == 0, instance
    assert instance.output is not None
    return instance.output


@pytest.mark.parametrize(("program", "args", "expected"), PROBES, ids=[f"{p}-{e[1]}" for p, _, e in PROBES])
async def test_probe_prints_one_reading(lab: Lab, program: str, args: list[str], expected: tuple) -> None:
    output = await run_probe(lab, program, args)
    assert len(output.strip().splitlines()) == 1, output
    (reading,) = parse_probe_output(output)
    assert (reading.benchmark, reading.metric, reading.unit, reading.better) == expected
    if reading.metric in ("maxgap_us", "ctx_2p_0k_us", "ctx_4p_16k_us", "pagefault_us"):  # differences of two times may be 0
        assert reading.value >= 0  # 0 when nothing preempted the spinner for longer than the gap threshold
    else:
        assert reading.value > 0
    if reading.metric == "cpu_share":
        assert reading.value <= 1.0


@pytest.mark.parametrize("mode", ["map", "pagefault"])
async def test_mmap_instances_at_once_each_map_a_file_of_their_own(lab: Lab, tmp_path: Path, mode: str) -> None:
    """Each instance is pid 1 of its own namespace: a scratch name made of the pid was one file for all,
    and one instance's O_TRUNC under another's mapping ended that one with SIGBUS (exit 135, seen in CI)."""
    session = lab.session()
    specs = [InstanceSpec(Labels(session, "worker", f"w{i}"), program="mmap", args=(mode, "1", "1024", str(tmp_path)),
                          wait="exit", capture_output=True, timeout_s=60) for i in range(4)]
    done = await lab.backend.create_many(specs)
    assert [i.exit_code for i in done] == [0] * 4, done
    assert list(tmp_path.iterdir()) == []  # each removed its own file


async def test_probe_duration_argument_bounds_the_run(lab: Lab) -> None:
    """The run lasts at least the duration given: 1.5 s, longer than the probe's 1 s default, so an argument
    that is ignored fails.  No upper bound on a wall clock (a loaded machine stretches any run); a short
    duration must simply end (run_probe's instance has a 30 s timeout, far below an ignored-forever loop)."""
    await run_probe(lab, "syscall", ["getppid", "0.05"])
    started = time.monotonic()
    await run_probe(lab, "syscall", ["getppid", "1.5"])
    assert time.monotonic() - started >= 1.5


async def test_fileserver_clients_leave_nothing_behind_and_a_bad_directory_fails(lab: Lab, tmp_path: Path) -> None:
    """Three clients each work in a directory of their own under DIR; every file and directory goes with them."""
    (reading,) = parse_probe_output(await run_probe(lab, "fileserver", ["0.2", "3", str(tmp_path)]))
    assert reading.metric == "throughput_mb_s" and reading.value > 0
    assert list(tmp_path.iterdir()) == []
    labels = Labels(lab.session(), "worker", "w2")
    spec = InstanceSpec(labels, program="fileserver", args=("0.1", "1", str(tmp_path / "missing")), wait="exit",
                        capture_output=True)
    instance = await lab.backend.create(spec)
    assert instance.exit_code == 1 and "fileserver" not in (instance.output or "")


async def test_probe_rejects_a_bad_mode(lab: Lab) -> None:
    labels = Labels(lab.session(), "worker", "w1")
    spec = InstanceSpec(labels, program="syscall", args=("nonsense",), wait="exit", capture_output=True)
    instance = await lab.backend.create(spec)
    assert instance.exit_code == 2
    with pytest.raises(ParseError, match="output was empty"):
        parse_probe_output(instance.output or "")


async def test_capture_output_needs_wait_exit(lab: Lab) -> None:
    with pytest.raises(BackendError, match="capture_output needs wait='exit'"):
        await lab.backend.create(InstanceSpec(Labels(lab.session(), "w", "w1"), program="sleeper", capture_output=True))


async def test_start_at_holds_instances_until_a_common_time(lab: Lab) -> None:
    session = lab.session()
    start_at = time.time() + 0.8
    specs = [
        InstanceSpec(Labels(session, "worker", f"w{i}"), program="hello", wait="exit", start_at=start_at, capture_output=True)
        for i in range(2)
    ]
    instances = await lab.backend.create_many(specs)
    assert time.time() >= start_at
    assert all(i.output == "hello from labtui\n" for i in instances)
    # each one ran to its exit only after the common start (not a fixed part of 0.8 s: a loaded machine may
    # take most of it to send the request), and its boot time is positive
    assert all(i.ready_at is not None and i.ready_at >= start_at for i in instances), [i.ready_at for i in instances]
    assert all(i.boot_s is not None and i.boot_s > 0 for i in instances)


@pytest.mark.parametrize(
    ("program", "args"),
    [
        ("attack-cpu", []),
        ("attack-mem", ["8"]),
        ("attack-syscall", ["openclose", SHM]),
        ("attack-syscall", ["read", SHM]),
        ("attack-syscall", ["write", SHM]),
        ("attack-syscall", ["stat", SHM]),
        ("attack-syscall", ["fork", SHM]),
        ("attack-disk", [SHM, "4", "64"]),
    ],
)
async def test_attacker_runs_until_killed_and_cleans_up(lab: Lab, program: str, args: list[str]) -> None:
    session = lab.session()
    (attacker,) = await lab.backend.create_many([InstanceSpec(Labels(session, "attacker", "a1"), program=program,
                                                              args=tuple(args))])
    pid = attacker.details["pid"]
    await asyncio.sleep(0.3)
    assert [i.handle for i in await lab.backend.list(session)] == [attacker.handle]
    utime = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[11])
    if program != "attack-syscall" or args[0] != "fork":
        assert utime + int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[12]) > 0  # it burns CPU
    await lab.backend.destroy(attacker)
    assert await lab.backend.list(session) == []
    leftovers = [p for p in Path(SHM).glob("labtui-*") if p.name.endswith(f"-{pid}") or f"-{pid}." in p.name]
    assert leftovers == []


# --- each named probe's definition (what it does, not how fast) ------------------------------
# The probes are compiled here as labtui.programs.native compiles them and run directly, with
# LABTUI_PROBE_COUNTS=1: they then also write one JSON line of counts to stderr.


@pytest.fixture(scope="module")
def probe_bin(tmp_path_factory: pytest.TempPathFactory):
    from labtui.programs.native import FLAGS, probe_source

    built: dict[str, str] = {}
    out = tmp_path_factory.mktemp("probes")

    def build(name: str, dynamic: bool = False) -> str:
        """The probe linked as ensure_program links it on a host with cc (dynamic: the dynamic build)."""
        key = f"{name}-dynamic" if dynamic else name
        if key not in built:
            binary = out / key
            for flags in ([list(FLAGS)] if dynamic else [[*FLAGS, "-static"], list(FLAGS)]):
                compiled = subprocess.run(["cc", *flags, "-o", str(binary), str(probe_source(name))], capture_output=True)
                if compiled.returncode == 0:
                    break
            else:
                pytest.skip("no C compiler")
            built[key] = str(binary)
        return built[key]

    return build


def run_counted(binary: str, *args: str, cwd: str | None = None) -> tuple[dict, dict]:
    """The probe's reading and its counts."""
    done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "LABTUI_PROBE_COUNTS": "1"})
    assert done.returncode == 0, done.stderr
    counts = json.loads(done.stderr.strip().splitlines()[-1])
    return json.loads(done.stdout), counts


def test_context_switch_round_trip_is_two_switches(probe_bin) -> None:
    # pinned to one CPU, every hand-over is a switch: one round trip of context1 is two,
    # whether the woken side preempts the writer (involuntary) or the writer blocks (voluntary)
    reading, counts = run_counted(probe_bin("ctxsw"), "context1", "0.3", "pin")
    assert reading["metric"] == "context1_pinned_lps" and counts["rounds"] > 100
    switches = counts["nvcsw"] + counts["nivcsw"]
    assert 1.9 <= switches / counts["rounds"] <= 2.4, counts  # other load on the CPU adds a few preemptions
    # unpinned, as the originals: each side still sleeps at most once per round trip
    _, free = run_counted(probe_bin("ctxsw"), "context1", "0.3")
    assert free["nvcsw"] <= 2 * free["rounds"] + 20, free


def test_lat_ctx_ring_passes_the_token_through_every_process(probe_bin) -> None:
    reading, counts = run_counted(probe_bin("ctxsw"), "lat_ctx", "0.3", "0", "3", "pin")
    assert reading["metric"] == "ctx_pinned_3p_0k_us" and counts["procs"] == 3
    # a trip around a ring of 3 on one CPU switches at least 3 times (the token visits each process)
    assert (counts["nvcsw"] + counts["nivcsw"]) / counts["rounds"] >= 2.9, counts


@pytest.mark.skipif(shutil.which("objdump") is None or os.uname().machine != "x86_64", reason="reads x86-64 code with objdump")
def test_lat_ctx_sums_its_array_one_scalar_add_per_long_as_lmbench_builds_bread(probe_bin) -> None:
    # lmbench compiles bread at -O: one add per long.  The sum sits on a cache line of its own: inlined into
    # lat_ctx, its loop once straddled two lines and the figure came out at 0.6-0.87 of lat_ctx -s 64 16's
    code = subprocess.run(["objdump", "-d", "--no-show-raw-insn", probe_bin("ctxsw")], capture_output=True,
                          text=True, check=True).stdout
    head, body = code.split(" <sum_array>:\n", 1)
    assert int(head.rsplit("\n", 1)[-1], 16) % 64 == 0  # the function's address
    body = body.split("\n\n", 1)[0]
    assert "add" in body and not any(register in body for register in ("%xmm", "%ymm", "%zmm")), body


def test_shell_probe_execs_its_program_every_round(probe_bin, tmp_path: Path) -> None:
    log = tmp_path / "ran"
    program = tmp_path / "program"
    program.write_text(f"#!/bin/sh\necho $$ >> {log}\n")
    program.chmod(0o755)
    for mode in ("shell", "exec"):
        log.unlink(missing_ok=True)
        reading, counts = run_counted(probe_bin("proc"), mode, "0.2", str(program))
        assert reading["metric"] == f"{mode}_us"
        pids = log.read_text().split()
        assert len(pids) == counts["rounds"] > 0 and len(set(pids)) == len(pids)  # a new process each round


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_shell_probe_default_execs_sh_then_a_program(probe_bin, tmp_path: Path) -> None:
    # lat_proc shell: /bin/sh -c PROGRAM, and the shell execs PROGRAM (not a builtin): by
    # default the probe itself as lat_proc's hello; lat_proc exec: the same hello, no shell
    proc = probe_bin("proc")
    for mode, shell_calls in (("shell", 1), ("exec", 0)):
        trace = tmp_path / f"trace-{mode}"
        argv = ["strace", "-f", "-qq", "-z", "-s", "4096", "-e", "trace=execve", "-o", str(trace), proc, mode, "0.1"]
        done = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "LABTUI_PROBE_COUNTS": "1"})
        assert done.returncode == 0, done.stderr
        rounds = json.loads(done.stderr.strip().splitlines()[-1])["rounds"]
        lines = trace.read_text().splitlines()
        assert sum(f'execve("/bin/sh", ["sh", "-c", "\'{proc}\' --hello"]' in line for line in lines) == shell_calls * rounds
        assert sum(f'execve("{proc}", ["{proc}", "--hello"]' in line for line in lines) == rounds, lines[:4]


def test_proc_metric_names_what_it_measures_and_benchmark_the_build(probe_bin) -> None:
    # every backend runs the static build, so a native and a container figure meet under one
    # metric name; the build is recorded in the benchmark: "proc" static, "proc-dynamic" dynamic
    static = subprocess.run(["ldd", probe_bin("proc")], capture_output=True, text=True)
    assert "libc.so" not in static.stdout, static.stdout
    dynamic = subprocess.run(["ldd", probe_bin("proc", dynamic=True)], capture_output=True, text=True)
    assert "libc.so" in dynamic.stdout, dynamic.stdout
    for mode, metric in (("fork", "fork_us"), ("exec", "exec_us"), ("shell", "shell_us"), ("spawn", "spawn_lps"),
                         ("execl", "execl_lps")):
        assert run_counted(probe_bin("proc"), mode, "0.1")[0] | {"value": 0} == {
            "benchmark": "proc", "metric": metric, "value": 0, "unit": metric.rsplit("_", 1)[1],
            "better": "lower" if metric.endswith("_us") else "higher"}
        reading = run_counted(probe_bin("proc", dynamic=True), mode, "0.1")[0]
        assert (reading["benchmark"], reading["metric"]) == ("proc-dynamic", metric)
    # multi's figure is the shell's and the tools', whatever the probe's own linking
    for build in (False, True):
        assert run_counted(probe_bin("proc", dynamic=build), "multi", "0.1")[0]["benchmark"] == "proc"


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_multi_runs_unixbench_pipeline_in_every_copy(probe_bin, tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    # -z: successful calls only (a shell's PATH search fails first in other directories)
    done = subprocess.run(["strace", "-f", "-qq", "-z", "-e", "trace=execve", "-o", str(trace), probe_bin("proc"), "multi", "0.1",
                           "3", str(tmp_path)], capture_output=True, text=True, env={**os.environ, "LABTUI_PROBE_COUNTS": "1"})
    assert done.returncode == 0, done.stderr
    rounds = json.loads(done.stderr.strip().splitlines()[-1])["rounds"]
    execs = [line.split('execve("', 1)[1].split('"', 1)[0].rsplit("/", 1)[-1] for line in trace.read_text().splitlines()
             if 'execve("' in line]
    # per round: 3 copies, each one sort, od, sort -n, grep, tee, wc and rm
    for tool, per_copy in (("sort", 2), ("od", 1), ("grep", 1), ("tee", 1), ("wc", 1), ("rm", 1)):
        assert execs.count(tool) == 3 * per_copy * rounds, (tool, execs)
    assert [p.name for p in tmp_path.iterdir()] == ["trace"]  # its directory is gone


def test_spawn_and_fork_children_exit_as_the_originals(probe_bin) -> None:
    for mode, metric in (("spawn", "spawn_lps"), ("fork", "fork_us")):
        reading, counts = run_counted(probe_bin("proc"), mode, "0.2")
        assert reading["metric"] == metric and counts["rounds"] > 0


def test_execl_chains_execs_without_forking(probe_bin, tmp_path: Path) -> None:
    reading, counts = run_counted(probe_bin("proc"), "execl", "0.3")
    assert reading["metric"] == "execl_lps" and counts["rounds"] > 1
    if shutil.which("strace"):
        trace = tmp_path / "trace"
        subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve,clone,clone3,fork,vfork", "-o", str(trace), probe_bin("proc"),
                        "execl", "0.2"], capture_output=True, check=True)
        lines = trace.read_text().splitlines()
        assert not [line for line in lines if "clone" in line or "fork" in line]
        assert len({line.split()[0] for line in lines}) == 1  # one process, exec'd over and over


def test_mmap_touches_exactly_the_pages_lat_mmap_touches(probe_bin, tmp_path: Path) -> None:
    # lat_mmap: a shared, writable mapping of the file; one byte every 16 KB over the first tenth
    kb = 4096
    done = subprocess.run([probe_bin("mmap"), "map", "0.1", str(kb), str(tmp_path)], capture_output=True, text=True,
                          env={**os.environ, "LABTUI_PROBE_COUNTS": "1", "LABTUI_PROBE_KEEP": "1"})
    assert done.returncode == 0, done.stderr
    (kept,) = tmp_path.iterdir()
    data = kept.read_bytes()
    kept.unlink()
    size = kb * 1024
    assert len(data) == size
    written = [i for i, byte in enumerate(data) if byte != ord("x")]  # the file is written with 'x' first
    assert written == list(range(0, size // 10, 16384))  # 0, 16K, ... below a tenth: 26 bytes for 4 MB
    assert set(data[i] for i in written) == {size & 0xFF}
    counts = json.loads(done.stderr.strip().splitlines()[-1])
    assert counts["touched_per_round"] == len(written) and counts["majflt"] == 0


def test_pagefault_reads_every_page_of_a_cached_file(probe_bin, tmp_path: Path) -> None:
    kb = 2048
    reading, counts = run_counted(probe_bin("mmap"), "pagefault", "0.2", str(kb), str(tmp_path))
    pages = kb * 1024 // os.sysconf("SC_PAGE_SIZE")
    assert reading["metric"] == "pagefault_us" and reading["unit"] == "us"
    assert counts["pages"] == counts["touched_per_round"] == pages
    # every round maps the file afresh, so it faults again; a fault may map cached neighbours
    # too (fault-around), so there are at most as many faults as pages, and none is major
    assert counts["rounds"] <= counts["minflt"] <= counts["rounds"] * pages + 64 and counts["majflt"] == 0
    assert list(tmp_path.iterdir()) == []


def test_a_given_file_is_mapped_as_lmbench_maps_it_and_left_in_place(probe_bin, tmp_path: Path) -> None:
    """mmap map|pagefault FILE: an existing file is used as lat_mmap / lat_pagefault use theirs, not removed."""
    given = tmp_path / "lmbench-file"
    given.write_bytes(b"y" * (3 << 20))
    mapped = subprocess.run([probe_bin("mmap"), "map", "0.1", "2048", str(given)], capture_output=True, text=True,
                            env={**os.environ, "LABTUI_PROBE_COUNTS": "1"})
    assert mapped.returncode == 0, mapped.stderr
    data = given.read_bytes()
    assert len(data) == 3 << 20  # not rewritten to KB: the probe did not make this file
    written = [i for i, byte in enumerate(data) if byte != ord("y")]
    assert written == list(range(0, (2048 << 10) // 10, 16384))  # lat_mmap's bytes, within its first KB
    reading, counts = run_counted(probe_bin("mmap"), "pagefault", "0.2", "2048", str(given))
    assert reading["metric"] == "pagefault_us" and counts["pages"] == (2048 << 10) // os.sysconf("SC_PAGE_SIZE")
    assert given.read_bytes() == data and list(tmp_path.iterdir()) == [given]
    small = subprocess.run([probe_bin("mmap"), "pagefault", "0.1", "4096", str(given)], capture_output=True, text=True)
    assert small.returncode == 2 and str(given) in small.stderr and "fewer than" in small.stderr
    assert given.exists()


def test_anonymous_pagefault_writes_every_page(probe_bin) -> None:
    reading, counts = run_counted(probe_bin("mmap"), "anon-pagefault", "0.1", "1024")
    pages = 1024 * 1024 // os.sysconf("SC_PAGE_SIZE")
    assert reading["metric"] == "anon_pagefault_ns" and counts["touched_per_round"] == pages
