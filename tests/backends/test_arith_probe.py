"""The arith probe split as AIM9 splits arithmetic: add, mul, div of int, long, float and double, each
its own metric (study 000, Tables 5-3 and 5-4), beside the mixed int/double chains the concurrent-instance
suites sum."""

from __future__ import annotations

import json
import platform
import re
import subprocess
from pathlib import Path

import pytest

from labtui.cli import main
from labtui.programs.native import FLAGS, probe_source
from labtui.store import fetch_frame

OPS = ("add", "mul", "div")
TYPES = ("int", "long", "float", "double")
TESTS = [f"{op}_{kind}" for op in OPS for kind in TYPES]
#: x86-64: the instruction each test's loop must run (AT&T operands: 32-bit int, 64-bit long).
INSTRUCTION = {
    "add_int": r"add\s+%e\w+,%e\w+", "add_long": r"add\s+%r\w+,%r\w+",
    "add_float": r"addss\s", "add_double": r"addsd\s",
    "mul_int": r"imul\s+%e\w+,%e\w+", "mul_long": r"imul\s+%r\w+,%r\w+",
    "mul_float": r"mulss\s", "mul_double": r"mulsd\s",
    "div_int": r"idiv\s+%e\w+", "div_long": r"idiv\s+%r\w+",
    "div_float": r"divss\s", "div_double": r"divsd\s",
}


@pytest.fixture(scope="module")
def arith(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The probe built as ensure_program builds it on a host with cc (static)."""
    binary = tmp_path_factory.mktemp("arith") / "arith"
    subprocess.run(["cc", *FLAGS, "-static", "-o", str(binary), str(probe_source("arith"))], check=True)
    return str(binary)


def readings(binary: str, *args: str) -> list[dict]:
    done = subprocess.run([binary, *args], capture_output=True, text=True, timeout=60, check=True)
    return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.mark.parametrize("test", TESTS)
def test_each_operation_and_type_is_its_own_metric(arith: str, test: str) -> None:
    (reading,) = readings(arith, test, "0.05")
    assert reading == {"benchmark": "arith", "metric": f"{test}_mops", "value": reading["value"],
                       "unit": "Mops/s", "better": "higher"}
    assert reading["value"] > 0


def test_aim9_runs_the_twelve_tests_in_turn(arith: str) -> None:
    found = readings(arith, "aim9", "0.05")
    assert [r["metric"] for r in found] == [f"{t}_mops" for t in
                                            ["add_int", "add_long", "add_float", "add_double", "mul_int", "mul_long",
                                             "mul_float", "mul_double", "div_int", "div_long", "div_float",
                                             "div_double"]]
    # a divide takes several times an add's latency on every CPU labtui runs on
    by = {r["metric"]: r["value"] for r in found}
    assert by["div_long_mops"] < by["add_long_mops"] and by["div_double_mops"] < by["add_double_mops"] * 1.5


def test_the_mixed_chains_the_suites_sum_keep_their_names(arith: str) -> None:
    assert [r["metric"] for r in readings(arith, "int", "0.05")] == ["int_mops"]
    assert [r["metric"] for r in readings(arith, "double", "0.05")] == ["double_mops"]


def test_bad_mode_names_the_tests(arith: str) -> None:
    done = subprocess.run([arith, "sub_int", "0.05"], capture_output=True, text=True)
    assert done.returncode == 2 and "usage: arith int|double [SECONDS]" in done.stderr
    assert "OP: add mul div; TYPE: int long float double" in done.stderr


@pytest.mark.skipif(platform.machine() != "x86_64", reason="reads x86-64 instructions")
@pytest.mark.parametrize("test", TESTS)
def test_each_loop_runs_its_own_instruction(arith: str, test: str) -> None:
    """The compiler neither folded the chain nor turned a divide by a variable into a multiply."""
    dump = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--disassemble={test}", arith],
                          capture_output=True, text=True, check=True).stdout
    body = dump.split(f"<{test}>:", 1)[1]
    assert len(re.findall(INSTRUCTION[test], body)) >= 1, body
    other = {"add": ("imul", "mul", "idiv", "div"), "mul": ("idiv", "div"), "div": ("imul", "mul")}[test[:3]]
    ops = [line.split("\t")[-1].split()[0] for line in body.splitlines() if "\t" in line]
    assert ops and not [o for o in ops if o.startswith(other)], ops


def test_aim9_arithmetic_suite_records_the_twelve_metrics(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    assert main(["run", "aim9-arithmetic", "--profile", "quick", "--db", str(db),
                 "--set", 'worker.args=["aim9", "0.05"]', "--set", "sampling.quiet_timeout_s=0"]) == 0
    frame = fetch_frame(db, "SELECT DISTINCT metric FROM results WHERE benchmark = 'arith' AND metric NOT LIKE '%_sum'")
    assert sorted(frame["metric"].to_list()) == sorted(f"{t}_mops" for t in TESTS)
