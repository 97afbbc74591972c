"""labtui's probes and attackers, compiled with cc and run briefly through the process backend."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from labtui.backends import BackendError, InstanceSpec, Labels
from labtui.parsers import ParseError
from labtui.parsers.probe import parse_probe_output
from tests.backend_lab import Lab, open_lab

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
    ("proc", ["exec", "0.1"], ("proc", "exec_us", "us", "lower")),
    ("proc", ["shell", "0.1"], ("proc", "shell_us", "us", "lower")),
    ("ctxsw", ["0.1"], ("ctxsw", "ctxsw_ns", "ns", "lower")),
    ("pipe", ["0.1"], ("pipe", "pipe_mb_s", "MB/s", "higher")),
    ("arith", ["int", "0.1"], ("arith", "int_mops", "Mops/s", "higher")),
    ("arith", ["double", "0.1"], ("arith", "double_mops", "Mops/s", "higher")),
    ("filecreate", ["0.1", SHM], ("filecreate", "create_close_us", "us", "lower")),
    ("filecopy", ["256", "0.1", SHM, "256"], ("filecopy", "copy_256_kb_s", "KB/s", "higher")),
    ("filecopy", ["1024", "0.1", SHM, "256"], ("filecopy", "copy_1024_kb_s", "KB/s", "higher")),
    ("filecopy", ["4096", "0.1", SHM, "256"], ("filecopy", "copy_4096_kb_s", "KB/s", "higher")),
    ("mmap", ["map", "0.1", "1024"], ("mmap", "mmap_1024k_us", "us", "lower")),
    ("mmap", ["pagefault", "0.1", "1024"], ("mmap", "pagefault_ns", "ns", "lower")),
    ("stream", ["copy", "0.1", "8"], ("stream", "copy_mb_s", "MB/s", "higher")),
    ("stream", ["scale", "0.1", "8"], ("stream", "scale_mb_s", "MB/s", "higher")),
    ("stream", ["add", "0.1", "8"], ("stream", "add_mb_s", "MB/s", "higher")),
    ("stream", ["triad", "0.1", "8"], ("stream", "triad_mb_s", "MB/s", "higher")),
    ("hourglass", ["share", "0.1"], ("hourglass", "cpu_share", "ratio", "higher")),
    ("hourglass", ["maxgap", "0.1"], ("hourglass", "maxgap_us", "us", "lower")),
    ("sqlite", ["500", SHM], ("sqlite", "inserts_500_s", "s", "lower")),
]


@pytest.fixture
async def lab(runtime_dir: Path) -> AsyncIterator[Lab]:  # noqa: F811 - the fixture above
    async for lab in open_lab("process", "probe"):
        yield lab


async def run_probe(lab: Lab, program: str, args: list[str], cpus: str | None = None) -> str:
    labels = Labels(lab.session(), "worker", "w1")
    spec = InstanceSpec(labels, program=program, args=tuple(args), wait="exit", capture_output=True, cpus=cpus, timeout_s=30)
    instance = await lab.backend.create(spec)
    assert instance.exit_code == 0, instance
    assert instance.output is not None
    return instance.output


@pytest.mark.parametrize(("program", "args", "expected"), PROBES, ids=[f"{p}-{a[0]}" for p, a, _ in PROBES])
async def test_probe_prints_one_reading(lab: Lab, program: str, args: list[str], expected: tuple) -> None:
    output = await run_probe(lab, program, args)
    assert len(output.strip().splitlines()) == 1, output
    (reading,) = parse_probe_output(output)
    assert (reading.benchmark, reading.metric, reading.unit, reading.better) == expected
    if reading.metric == "maxgap_us":
        assert reading.value >= 0  # 0 when nothing preempted the spinner for longer than the gap threshold
    else:
        assert reading.value > 0
    if reading.metric == "cpu_share":
        assert reading.value <= 1.0


async def test_probe_duration_argument_bounds_the_run(lab: Lab) -> None:
    started = time.monotonic()
    await run_probe(lab, "syscall", ["getppid", "0.05"])
    short = time.monotonic() - started
    started = time.monotonic()
    await run_probe(lab, "syscall", ["getppid", "0.6"])
    assert time.monotonic() - started > 0.6 > short


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
    # each boot time includes the wait for the common start
    assert all(i.boot_s is not None and i.boot_s > 0.3 for i in instances)


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
    (attacker,) = await lab.backend.create_many([InstanceSpec(Labels(session, "attacker", "a1"), program=program, args=tuple(args))])
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
