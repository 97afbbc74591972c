"""Bad suite values and --set strings get one line naming --set (or the file), never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labtui.suites import SuiteError, load_suite
from labtui.suites.loader import MAX_STEPS

KEYS = ["scale.steps", "scale.per_step", "scale.start", "suite.repetitions", "suite.operation_timeout_s",
        "suite.name", "worker.args", "worker.runs", "worker.program", "sampling.interval_s", "sampling.settle_s",
        "nosuch.key", "scale"]
VALUES = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f).replace("inf", "inf")),
    st.text(max_size=12).map(lambda t: '"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"'),
    st.text(max_size=12),
    st.sampled_from(["nan", "inf", "-inf", "true", "[]", '["a\\u0000b"]', "{", "1e309", "0x10"]),
)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(KEYS), value=VALUES)
def test_any_set_string_loads_or_is_a_suite_error_naming_set(key: str, value: str) -> None:
    try:
        load_suite("boot-scaling", [f"{key}={value}"])
    except SuiteError as exc:
        text = str(exc)
        assert "\n" not in text.strip() or "--set" in text
        assert "--set" in text, text
        assert "Traceback" not in text


@pytest.mark.parametrize("setting,words", [
    (f"scale.steps={MAX_STEPS + 1}", "an integer from 1 to"),
    ("scale.steps=9223372036854775807", "an integer from 1 to"),
    ("suite.operation_timeout_s=nan", "a number from"),
    ("sampling.settle_s=inf", "a number from"),
    ("sampling.settle_s=-1", "a number from"),
    ('worker.args=["a\\u0000b"]', "no control characters"),
    ('suite.name="x\\u0007"', "no control characters"),
])
def test_out_of_range_and_control_characters_are_refused(setting: str, words: str) -> None:
    with pytest.raises(SuiteError, match=words) as caught:
        load_suite("boot-scaling", [setting])
    assert "--set" in str(caught.value)


def test_the_cli_says_one_line_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    proc = subprocess.run([sys.executable, "-m", "labtui", "run", "boot-scaling", "--set",
                           "scale.steps=9223372036854775807", "--db", str(db)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "--set scale.steps" in proc.stderr
    assert not db.exists()
