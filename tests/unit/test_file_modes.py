"""What labtui writes for a person is private: exports and reports 0600, the directories it creates 0700."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from labtui.core.events import Result, SessionEnded, SessionStarted, StepEnded, StepStarted
from labtui.store import record_events


@pytest.fixture(autouse=True)
def _open_umask() -> Iterator[None]:
    """A permissive umask (022), so that only labtui's own modes make the files private."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _store(path: Path) -> Path:
    """A session of two steps (0 and 10 background instances), two repetitions each: enough for figures."""
    events: list = [SessionStarted("s1", "boot", "scaling", "process", "local", {}, 0, ts=1.79e9)]
    for step, background in enumerate((0, 10)):
        events.append(StepStarted("s1", 0, step, 2, background, ts=1.79e9 + step))
        events += [Result("s1", rep, step, background, "local", "w1", "boot", "boot_time", 0.01 + step / 100 + rep / 1000,
                          "s", "lower", 1.79e9 + step) for rep in range(2)]
        events.append(StepEnded("s1", 0, step, background, ts=1.79e9 + step + 0.5))
    record_events(path, [*events, SessionEnded("s1", "completed", "", ts=1.79e9 + 3)])
    return path


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_files_are_0600_in_new_directories_0700(tmp_path: Path, fmt: str) -> None:
    from labtui.report import export_session

    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    written = export_session(_store(tmp_path / "lab.duckdb"), "s1", shared / "a" / "b", fmt)
    assert written and {_mode(p) for p in written.values()} == {0o600}
    assert _mode(shared / "a") == _mode(shared / "a" / "b") == 0o700
    assert _mode(shared) == 0o755  # a directory labtui did not create keeps its mode


@pytest.mark.parametrize("fmt", ["html", "svg"])
def test_report_files_are_0600_and_an_existing_file_is_made_private(tmp_path: Path, fmt: str) -> None:
    from labtui.report import write_report

    out = tmp_path / "reports" / "s1"
    out.mkdir(parents=True)
    (out / "report.html").write_text("old")
    (out / "report.html").chmod(0o644)
    written = write_report(_store(tmp_path / "lab.duckdb"), ["s1"], out, fmt)
    assert written and {_mode(p) for p in written} == {0o600}
    assert _mode(out / "report.html") == (0o600 if fmt == "html" else 0o644)


def test_console_export_is_0600(tmp_path: Path) -> None:
    from labtui.ui.model.query_export import export

    path = export(pl.DataFrame({"a": [1]}), tmp_path / "new" / "result.csv")
    assert _mode(path) == 0o600 and _mode(tmp_path / "new") == 0o700
