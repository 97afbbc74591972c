"""A crash of the console: exit status 1, one line on stderr, the full traceback in a crash log."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from labtui.ui.app import LabApp, run_console
from labtui.ui.crash import crash_dir, record_crash


class Broken(LabApp):
    """The console with a fault after its first frame: loading the views raises."""

    def _load_views(self) -> None:
        raise RuntimeError("boom: a view failed to load\nsecond line")


def test_a_crash_exits_1_with_one_line_and_the_traceback_in_the_state_dir(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    status = run_console(Broken(tmp_path / "lab.duckdb", idle_sampling=False), headless=True, size=(80, 24))
    err = capsys.readouterr().err
    assert status == 1
    logs = list(crash_dir().glob("console-*.log"))
    assert crash_dir() == tmp_path / "state" / "crashes" and len(logs) == 1
    assert err.splitlines() == [f"labtui: the console crashed: RuntimeError: boom: a view failed to load "
                                f"(traceback in {logs[0]})"]
    text = logs[0].read_text()
    assert text.startswith("Traceback") and "in _load_views" in text and "second line" in text
    assert stat.S_IMODE(logs[0].stat().st_mode) == 0o600


def test_a_console_that_quits_exits_0_with_nothing_on_stderr(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))

    class Quits(LabApp):
        def _load_views(self) -> None:
            self.exit(0)

    assert run_console(Quits(tmp_path / "lab.duckdb", idle_sampling=False), headless=True, size=(80, 24)) == 0
    assert capsys.readouterr().err == "" and not crash_dir().exists()


def test_an_unwritable_crash_log_is_named_in_the_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    line = record_crash(ValueError("bad"), tmp_path / "file" / "crashes")
    assert line.startswith("labtui: the console crashed: ValueError: bad (no crash log: ")
    assert str(tmp_path / "file") in line and "\n" not in line


async def test_a_crash_during_a_run_aborts_it_and_tears_it_down(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's thread would otherwise wait for `n` forever and keep the process from exiting."""
    import asyncio
    import time

    from test_console import SIZE, start_run

    from labtui.backends.base import open_backend
    from labtui.hosts import get_host
    from labtui.store import list_sessions

    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    lab = tmp_path / "lab.duckdb"

    def boom() -> None:
        raise RuntimeError("boom during a run")

    app = LabApp(lab, idle_sampling=False)
    with pytest.raises(RuntimeError, match="boom during a run"):
        async with app.run_test(size=SIZE) as pilot:
            await start_run(app, pilot, manual=True)
            session, lab_run = app.run_view.model.session_id, app.run_view.lab
            app.call_later(boom)
            await pilot.pause(0.5)
    assert app.crash is not None and "RuntimeError: boom during a run" in app.crash
    deadline = time.monotonic() + 60
    while not lab_run.outcomes and time.monotonic() < deadline:  # the run's own thread ends it
        await asyncio.sleep(0.2)
    assert [o.status for o in lab_run.outcomes] == ["aborted"]
    assert await open_backend("process", get_host("local")).list(session) == []
    status = dict(list_sessions(lab).select("session_id", "status").iter_rows())
    assert status[session] == "aborted"
