"""labtui's named probes against the real UnixBench and lmbench programs, side by side (issue 21).

From the originals' sources (built here, in a temporary directory, with cc and make):

    python tests/perf/bench_probe_calibration.py --unixbench-src /path/to/byte-unixbench \\
        --lmbench-src /path/to/lmbench [--rounds 5] [--seconds 1] [--only NAME,...] [--markdown]

byte-unixbench is github kdlucas/byte-unixbench (its ``UnixBench/`` is copied
and built with ``make``); lmbench is lmbench3 (github intel/lmbench; its
``src/lat_*.c`` are compiled with its ``lib_*.c``, which needs libtirpc-dev).
Or from originals built already:

    LABTUI_UNIXBENCH_DIR=/path/to/byte-unixbench/UnixBench \\
    LABTUI_LMBENCH_DIR=/path/to/lmbench/bin/x86_64-linux-gnu \\
        python tests/perf/bench_probe_calibration.py ...

LABTUI_UNIXBENCH_DIR is a built UnixBench tree (the directory holding ``Run``,
``pgms/`` and ``testdir/``); LABTUI_LMBENCH_DIR holds lmbench3's built
``lat_*`` programs and ``hello``.  A suite of pairs whose original is missing is
skipped (and said so).  The probes are compiled by labtui.programs.native, as a
run does, but proc is linked dynamically, as the originals are (a run links it statically).

Every round runs each pair once, probe and original back to back, the order
of the two alternating from round to round; the pairs themselves are shuffled
per round.  Each side is read in the original's unit:

* UnixBench programs print ``COUNT|n|timebase|unit``; the figure is what its
  ``Run`` computes, n / (elapsed / timebase), elapsed being the program's wall
  time measured here (Run times the command the same way), or n itself for
  timebase 0 (fstime's KBps).
* lmbench programs print their per-operation time (us) on stderr.

The ratio is probe / original in that unit (above 1: the probe's figure is
larger, which for a time means slower and for a rate faster).  Printed per pair:
the median ratio over the rounds, its spread (min-max), and both medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from labtui.hosts.local import LocalHost
from labtui.parsers.probe import parse_probe_output
from labtui.programs.native import ensure_program, probe_source


@dataclass
class Side:
    argv: list[str]
    read: Callable[[str, str, float], float]  # (stdout, stderr, elapsed) -> value in the original's unit
    cwd: str | None = None
    env: dict[str, str] | None = None


@dataclass
class Pair:
    name: str  # the original's name
    unit: str
    probe: Side
    original: Side


def ub_count(stdout: str, stderr: str, elapsed: float) -> float:
    """UnixBench's score of a COUNT line, as Run computes it: the last one counts (fstime -c prints its
    write and read passes' COUNT lines before the copy's; Run's readResults keeps the last)."""
    found = re.findall(r"^COUNT\|([\d.]+)\|(\d+)\|", stderr + stdout, re.M)
    if not found:
        raise ValueError(f"no COUNT line in {stderr[-300:]!r}")
    count, timebase = float(found[-1][0]), int(found[-1][1])
    return count / (elapsed / timebase) if timebase else count


def lm_time(pattern: str) -> Callable[[str, str, float], float]:
    """The microseconds an lmbench line matching pattern gives (the first number after it)."""

    def read(stdout: str, stderr: str, elapsed: float) -> float:
        found = re.search(pattern, stderr + stdout, re.M)
        if not found:
            raise ValueError(f"no {pattern!r} in {stderr[-300:]!r}")
        return float(found[1])

    return read


def probe_value(scale: float = 1.0) -> Callable[[str, str, float], float]:
    def read(stdout: str, stderr: str, elapsed: float) -> float:
        (reading,) = parse_probe_output(stdout)
        return reading.value * scale

    return read


def pairs(probes: dict[str, str], ub: Path | None, lm: Path | None, seconds: int, work: str) -> list[Pair]:
    s = str(seconds)
    out: list[Pair] = []
    if ub is not None:
        pg = ub / "pgms"
        env = {**os.environ, "UB_BINDIR": str(pg)}
        testdir = str(ub / "testdir")
        out += [
            Pair("UnixBench context1", "lps", Side([probes["ctxsw"], "context1", s], probe_value()),
                 Side([str(pg / "context1"), s], ub_count)),
            Pair("UnixBench spawn", "lps", Side([probes["proc"], "spawn", s], probe_value()),
                 Side([str(pg / "spawn"), s], ub_count)),
            Pair("UnixBench execl", "lps", Side([probes["proc"], "execl", s], probe_value()),
                 Side([str(pg / "execl"), s], ub_count, cwd=testdir, env=env)),
            Pair("UnixBench shell1", "lpm", Side([probes["proc"], "multi", s, "1", work], probe_value()),
                 Side([str(pg / "looper"), s, str(pg / "multi.sh"), "1"], ub_count, cwd=testdir, env=env)),
            Pair("UnixBench shell8", "lpm", Side([probes["proc"], "multi", s, "8", work], probe_value()),
                 Side([str(pg / "looper"), s, str(pg / "multi.sh"), "8"], ub_count, cwd=testdir, env=env)),
            Pair("UnixBench pipe", "lps", Side([probes["pipe"], s, "512"], probe_value(1e6 / 512)),
                 Side([str(pg / "pipe"), s], ub_count)),
            Pair("UnixBench syscall", "lps", Side([probes["syscall"], "mix", s], lambda o, e, t: 1e9 / probe_value()(o, e, t)),
                 Side([str(pg / "syscall"), s], ub_count)),
        ]
        for buf, blocks in (("256", "500"), ("1024", "2000"), ("4096", "8000")):
            out.append(Pair(f"UnixBench fstime -c -b {buf}", "KBps",
                            Side([probes["filecopy"], buf, s, work, blocks], probe_value()),
                            Side([str(pg / "fstime"), "-c", "-t", s, "-d", work, "-b", buf, "-m", blocks], ub_count)))
    if lm is not None:
        mmap_file = f"{work}/lmbench-XXX"  # both sides map the same file: its age and folios set both figures
        out += [
            Pair("lmbench lat_proc fork", "us", Side([probes["proc"], "fork", s], probe_value()),
                 Side([str(lm / "lat_proc"), "fork"], lm_time(r"Process fork\+exit: ([\d.]+)"))),
            Pair("lmbench lat_proc exec", "us", Side([probes["proc"], "exec", s], probe_value()),
                 Side([str(lm / "lat_proc"), "exec"], lm_time(r"Process fork\+execve: ([\d.]+)"))),
            Pair("lmbench lat_proc shell", "us", Side([probes["proc"], "shell", s], probe_value()),
                 Side([str(lm / "lat_proc"), "shell"], lm_time(r"Process fork\+/bin/sh -c: ([\d.]+)"))),
            Pair("lmbench lat_ctx -s 0 2", "us", Side([probes["ctxsw"], "lat_ctx", s, "0", "2"], probe_value()),
                 Side([str(lm / "lat_ctx"), "-s", "0", "2"], lm_time(r"^2 ([\d.]+)"))),
            Pair("lmbench lat_ctx -s 64 16", "us", Side([probes["ctxsw"], "lat_ctx", s, "64", "16"], probe_value()),
                 Side([str(lm / "lat_ctx"), "-s", "64", "16"], lm_time(r"^16 ([\d.]+)"))),
            Pair("lmbench lat_mmap 64m", "us", Side([probes["mmap"], "map", s, "65536", mmap_file], probe_value()),
                 Side([str(lm / "lat_mmap"), "64m", mmap_file], lm_time(r"^67\.108864 ([\d.]+)"))),
            Pair("lmbench lat_mmap 256m", "us", Side([probes["mmap"], "map", s, "262144", mmap_file], probe_value()),
                 Side([str(lm / "lat_mmap"), "256m", mmap_file], lm_time(r"^268\.435456 ([\d.]+)"))),
            Pair("lmbench lat_pagefault (64 MB file)", "us",
                 Side([probes["mmap"], "pagefault", s, "65536", f"{mmap_file}-64m"], probe_value()),
                 Side([str(lm / "lat_pagefault"), f"{mmap_file}-64m"], lm_time(r"Pagefaults on \S+: ([\d.]+)"))),
        ]
        for call, mode, label in (("null", "getppid", "Simple syscall"), ("read", "read", "Simple read"),
                                  ("write", "write", "Simple write"),
                                  ("stat", "stat", "Simple stat"), ("open", "openclose", "Simple open/close")):
            out.append(Pair(f"lmbench lat_syscall {call}", "us", Side([probes["syscall"], mode, s], probe_value(1e-3)),
                            Side([str(lm / "lat_syscall"), call, *(["/dev/null"] if call in ("stat", "open") else [])],
                                 lm_time(label + r": ([\d.]+)"))))
    return out


def run(side: Side) -> float:
    started = time.monotonic()
    done = subprocess.run(side.argv, capture_output=True, text=True, cwd=side.cwd, env=side.env, timeout=600)
    elapsed = time.monotonic() - started
    if done.returncode not in (0,) and "COUNT|" not in done.stderr:
        raise RuntimeError(f"{side.argv[0]} exited {done.returncode}: {done.stderr[-300:]}")
    return side.read(done.stdout, done.stderr, elapsed)


LMBENCH_PROGRAMS = ("lat_proc", "lat_ctx", "lat_mmap", "lat_pagefault", "lat_syscall", "hello")
LMBENCH_LIBS = ("lib_timing", "lib_mem", "lib_stats", "lib_debug", "lib_sched", "getopt", "lib_tcp", "lib_udp", "lib_unix")
# scripts/build's flags on Linux with glibc (sched_setaffinity, drand48, uint and int64_t known)
LMBENCH_CFLAGS = ("-O", "-DRUSAGE", "-DHAVE_uint=1", "-DHAVE_int64_t=1", "-DHAVE_DRAND48", "-DHAVE_SCHED_SETAFFINITY=1",
                  "-I/usr/include/tirpc", "-w")


def build_unixbench(source: Path, into: Path) -> Path:
    """Copy byte-unixbench's UnixBench tree into into and build it with make; the built tree."""
    tree = source / "UnixBench" if (source / "UnixBench").is_dir() else source
    built = into / "UnixBench"
    shutil.copytree(tree, built, ignore=shutil.ignore_patterns(".git"))
    for stale in ("arithoh", "context1", "execl", "fstime", "looper", "pipe", "spawn", "syscall"):
        (built / "pgms" / stale).unlink(missing_ok=True)  # a checkout built before: build afresh
    (built / "testdir").mkdir(exist_ok=True)
    subprocess.run(["make", "-C", str(built), "all"], check=True, capture_output=True, timeout=600)
    return built


def build_lmbench(source: Path, into: Path) -> Path:
    """Build lmbench3's lat_* programs and hello from source/src into into as its Makefile does: the lib_*
    objects in lmbench.a, each program linked with it and -lm (only what a program uses is linked in)."""
    src = source / "src" if (source / "src").is_dir() else source
    into.mkdir(parents=True, exist_ok=True)

    def cc(*argv: str) -> None:
        subprocess.run(["cc", *LMBENCH_CFLAGS, *argv], check=True, capture_output=True, timeout=600)

    objects = []
    for lib in LMBENCH_LIBS:
        cc("-c", "-o", str(into / f"{lib}.o"), str(src / f"{lib}.c"))
        objects.append(str(into / f"{lib}.o"))
    subprocess.run(["ar", "rcs", str(into / "lmbench.a"), *objects], check=True, timeout=60)
    for program in LMBENCH_PROGRAMS:
        cc("-o", str(into / program), str(src / f"{program}.c"), str(into / "lmbench.a"), "-lm")
    return into


def prepare_lmbench(lm: Path, work: str) -> list[str]:
    """lat_proc execs /tmp/hello; lat_mmap and lat_pagefault need files.  Returns what to remove afterwards."""
    made = []
    if not Path("/tmp/hello").exists():
        shutil.copy(lm / "hello", "/tmp/hello")
        made.append("/tmp/hello")
    # written in 64 KB blocks, as the mmap probe writes its own file: how a file was written
    # sets the size of its page-cache folios, and so how many pages one fault maps
    for path, mb in ((f"{work}/lmbench-XXX", 256), (f"{work}/lmbench-XXX-64m", 64)):
        with open(path, "wb", buffering=0) as f:
            block = b"x" * (64 << 10)
            for _ in range(mb * 16):
                f.write(block)
        made.append(path)
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=3, help="duration of each probe and UnixBench run")
    parser.add_argument("--only", default="", help="comma-separated substrings of pair names")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--unixbench-src", type=Path, help="a byte-unixbench checkout to build and compare with")
    parser.add_argument("--lmbench-src", type=Path, help="an lmbench3 checkout to build and compare with")
    args = parser.parse_args()
    ub = Path(os.environ["LABTUI_UNIXBENCH_DIR"]) if os.environ.get("LABTUI_UNIXBENCH_DIR") else None
    lm = Path(os.environ["LABTUI_LMBENCH_DIR"]) if os.environ.get("LABTUI_LMBENCH_DIR") else None
    with tempfile.TemporaryDirectory(prefix="labtui-originals-") as originals:
        if args.unixbench_src is not None:
            ub = build_unixbench(args.unixbench_src, Path(originals))
            print(f"built UnixBench from {args.unixbench_src} in {ub}", flush=True)
        if args.lmbench_src is not None:
            lm = build_lmbench(args.lmbench_src, Path(originals) / "lmbench")
            print(f"built lmbench from {args.lmbench_src} in {lm}", flush=True)
        return compare(args, ub, lm)


def compare(args: argparse.Namespace, ub: Path | None, lm: Path | None) -> int:
    """Run the pairs whose originals are in ub and lm and print the table."""
    if ub is not None and not (ub / "pgms" / "context1").exists():
        print(f"no built UnixBench in {ub} (pgms/context1 missing): skipping UnixBench")
        ub = None
    if lm is not None and not (lm / "lat_proc").exists():
        print(f"no built lmbench in {lm} (lat_proc missing): skipping lmbench")
        lm = None
    if ub is None and lm is None:
        print("give --unixbench-src/--lmbench-src, or set LABTUI_UNIXBENCH_DIR/LABTUI_LMBENCH_DIR to built originals; "
              "nothing to compare")
        return 0
    with tempfile.TemporaryDirectory(prefix="labtui-calibration-") as runtime, tempfile.TemporaryDirectory(
        prefix="labtui-calibration-work-", dir=os.environ.get("TMPDIR", "/tmp")
    ) as work:
        os.environ["LABTUI_RUNTIME_DIR"] = runtime
        host = LocalHost()

        async def build() -> dict[str, str]:
            return {n: await ensure_program(host, probe_source(n), n, dynamic=n == "proc")
                    for n in ("ctxsw", "proc", "pipe", "syscall", "filecopy", "mmap")}

        probes = asyncio.run(build())
        todo = pairs(probes, ub, lm, args.seconds, work)
        if args.only:
            wanted = [w.strip() for w in args.only.split(",") if w.strip()]
            todo = [p for p in todo if any(w in p.name for w in wanted)]
        made = prepare_lmbench(lm, work) if lm is not None else []
        values: dict[str, tuple[list[float], list[float]]] = {p.name: ([], []) for p in todo}
        loads: list[float] = []  # the 1-minute load average before each pair
        try:
            for r in range(args.rounds):
                order = list(todo)
                random.shuffle(order)
                for pair in order:
                    sides = [("probe", pair.probe), ("original", pair.original)]
                    if r % 2:
                        sides.reverse()
                    loads.append(os.getloadavg()[0])
                    got = {who: run(side) for who, side in sides}
                    values[pair.name][0].append(got["probe"])
                    values[pair.name][1].append(got["original"])
                    print(f"round {r + 1} {pair.name}: probe {got['probe']:.4g} original {got['original']:.4g} {pair.unit}",
                          flush=True)
        finally:
            for path in made:
                Path(path).unlink(missing_ok=True)
    print()
    print(f"load average (1 min) before each pair: median {statistics.median(loads):.1f}, "
          f"range {min(loads):.1f}-{max(loads):.1f}, on {os.cpu_count()} CPUs")
    if args.markdown:
        print("| original | unit | probe (median) | original (median) | ratio probe/original, median | spread (min-max) | n |")
        print("|---|---|---|---|---|---|---|")
    for pair in todo:
        probe_values, original_values = values[pair.name]
        ratios = [p / o for p, o in zip(probe_values, original_values) if o]
        med = statistics.median(ratios)
        flag = "" if 0.85 <= med <= 1.15 else "  outside 0.85-1.15"
        if args.markdown:
            print(f"| {pair.name} | {pair.unit} | {statistics.median(probe_values):.4g} | "
                  f"{statistics.median(original_values):.4g} | "
                  f"{med:.2f} | {min(ratios):.2f}-{max(ratios):.2f} | {len(ratios)} |")
        else:
            print(f"{pair.name}: ratio {med:.2f} (spread {min(ratios):.2f}-{max(ratios):.2f}, {len(ratios)} rounds); "
                  f"probe {statistics.median(probe_values):.4g} original {statistics.median(original_values):.4g} "
                  f"{pair.unit}{flag}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
