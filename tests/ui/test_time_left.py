"""Time left (issue 36, item 4; issue 41, item 3): where it is shown during a real run, and the start dialog's
estimate from a past session.

One real quick run of boot-scaling on the process backend (from a copy of the suite that does not wait for an idle
host, so that a loaded machine does not slow the test) shows the time left on the CLI's progress line and leaves a
store from which the start dialog estimates the same suite and sizes before it starts, and refuses other sizes.
The console's Run view shows it during a real run stepped by hand.  The estimator itself is tested on synthetic
runs in tests/unit/test_estimate.py.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import cli_run
import pytest
from pilot_wait import wait_for

from labtui.store import fetch_frame
from labtui.ui.tabs import RUN

QUICK = ("scale.steps=3", "scale.per_step=2", "suite.repetitions=2", "sampling.quiet_timeout_s=0")
SUITES = Path(__file__).resolve().parents[2] / "suites"


def no_wait_suite(directory: Path) -> Path:
    """boot-scaling as written but for its wait for an idle host (none): a suite file the dialog can be given."""
    text = (SUITES / "boot-scaling.toml").read_text()
    path = directory / "boot-scaling.toml"
    path.write_text(text.replace("\n[sampling]\n", "\n[sampling]\nquiet_timeout_s = 0\n", 1))
    return path


# --- a real run: the CLI's progress line, then the start dialog's estimate from its store -------------------


@pytest.fixture(scope="module")
def past_run(tmp_path_factory: pytest.TempPathFactory, runtime_dir: Path) -> Iterator[tuple[Path, str, Path]]:
    """A quick real boot-scaling run (its store, its stderr as a terminal would get it, and its suite file)."""
    where = tmp_path_factory.mktemp("time-left")
    db, suite = where / "lab.duckdb", no_wait_suite(where)
    args = [a for override in QUICK[:3] for a in ("--set", override)]
    # TTY_COMPATIBLE: Rich draws its live progress line into the pipe as it would on a terminal
    env = {**os.environ, "COLUMNS": "200", "TTY_COMPATIBLE": "1"}
    proc = cli_run.labtui("run", str(suite), "--db", str(db), *args, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    yield db, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", proc.stderr), suite


def test_the_cli_progress_line_shows_elapsed_and_left(past_run: tuple[Path, str, Path]) -> None:
    _, stderr, _ = past_run
    frames = [f for f in re.split(r"[\r\n]", stderr) if "boot-scaling" in f and "elapsed" in f]
    assert any(re.search(r"left: estimating, \d+:\d\d elapsed", f) for f in frames), stderr
    lefts = [re.search(r"~\d+:\d\d left, \d+:\d\d elapsed", f) for f in frames]
    assert any(lefts), stderr
    assert re.search(r"8/8 .* \d+:\d\d elapsed\s*$", frames[-1]), frames[-1]  # the end: the elapsed time alone


async def open_dialog(app, pilot, store: Path, suite: Path | None = None):
    """The start dialog on the store, with the quick run's numbers typed in (and a suite file, when given); returns
    it and its estimate line."""
    from textual.widgets import Input, Static

    from labtui.ui.model.choices import BackendChoice
    from labtui.ui.start_dialog import StartDialog

    async def check(host: str) -> list[BackendChoice]:
        return [BackendChoice("process", True, "Linux with labtui-agent")]

    suites = [("boot-scaling  (scaling)", "boot-scaling"), ("isolation-cpu  (isolation)", "isolation-cpu")]
    dialog = StartDialog(suites, ["local"], check, suite="boot-scaling", db=store)
    await app.push_screen(dialog)
    if suite is not None:
        dialog.query_one("#suite-file", Input).value = str(suite)
    for override in QUICK[:3]:
        key, value = override.split("=")
        dialog.query_one("#" + {"scale.steps": "steps", "scale.per_step": "per-step",
                                "suite.repetitions": "repetitions"}[key], Input).value = value
    return dialog, dialog.query_one("#estimate", Static)


async def test_the_start_dialog_estimates_from_a_past_session(
    past_run: tuple[Path, str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same suite and sizes as the past session: its own duration.  Another size, or the suite as written
    (it waits for an idle host), is not estimated from it: the dialog says so and what it passed over."""
    from textual.widgets import Input

    from labtui.ui.app import LabApp

    db, _, suite = past_run
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    (sid, took) = fetch_frame(db, "SELECT session_id, epoch(ended_at) - epoch(started_at) FROM sessions").row(0)
    said = (rf"time: about (\d+):(\d\d), as session {sid} took \(boot-scaling on local with process, the same "
            r"sizes\)$")
    app = LabApp(tmp_path / "other.duckdb", idle_sampling=False)
    async with app.run_test(size=(160, 48)) as pilot:
        dialog, shown = await open_dialog(app, pilot, db, suite)
        await wait_for(pilot, lambda: re.search(said, str(shown.render())) is not None, 20,
                       f"the estimate; shown: {shown.render()}")
        minutes, seconds = re.search(said, str(shown.render())).groups()  # type: ignore[union-attr]
        assert abs(int(minutes) * 60 + int(seconds) - took) <= 1, (shown.render(), took)
        dialog.query_one("#steps", Input).value = "9"  # another size
        refused = ("time: no estimate: no completed session of boot-scaling on local with process with these sizes "
                   "in the store (1 of other sizes passed over)")
        await wait_for(pilot, lambda: str(shown.render()) == refused, 20, f"no estimate; shown: {shown.render()}")
        dialog.query_one("#steps", Input).value = QUICK[0].split("=")[1]
        dialog.query_one("#suite-file", Input).value = ""  # the built-in suite: it waits up to 10 s for an idle host
        await wait_for(pilot, lambda: str(shown.render()) == refused + "; a busy host adds up to 0:10 before each of "
                       "2 repetition(s)", 20, f"no estimate from a suite that does not wait; shown: {shown.render()}")


async def test_the_start_dialog_says_when_it_has_no_history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from labtui.ui.app import LabApp

    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    app = LabApp(tmp_path / "other.duckdb", idle_sampling=False)
    async with app.run_test(size=(160, 48)) as pilot:
        _, shown = await open_dialog(app, pilot, tmp_path / "none.duckdb")
        await wait_for(pilot, lambda: str(shown.render()) == "time: no estimate: no completed session of boot-scaling "
                       "on local with process with these sizes in the store; a busy host adds up to 0:10 before each "
                       "of 2 repetition(s)", 20, f"no history; shown: {shown.render()}")


async def test_the_run_view_shows_elapsed_and_left(tmp_path: Path, runtime_dir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A real run stepped by hand: 'estimating' after the first step, a time left after the second."""
    from labtui.suites import load_suite
    from labtui.ui.app import LabApp
    from labtui.ui.model.choices import StartRequest

    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    app = LabApp(tmp_path / "lab.duckdb", idle_sampling=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.view(RUN) is not None, 30, "the Run view")
        view = app.run_view
        view.start(StartRequest(load_suite("boot-scaling", QUICK), "process", "local", manual=True))
        runbox = view.query_one("#runbox")
        subtitle = lambda: str(runbox.border_subtitle)  # noqa: E731
        await wait_for(pilot, lambda: view.lab is not None and view.lab.gate.waiting, 60, "the first step")
        await wait_for(pilot, lambda: re.fullmatch(r"left: estimating, \d+:\d\d elapsed", subtitle()) is not None, 5,
                       f"'estimating'; shown: {subtitle()!r}")
        await pilot.press("n")
        await wait_for(pilot, lambda: view.model.steps_done == 2 and view.lab is not None and view.lab.gate.waiting,
                       60, "the second step")
        await wait_for(pilot, lambda: re.fullmatch(r"~\d+:\d\d left, \d+:\d\d elapsed", subtitle()) is not None, 5,
                       f"a time left; shown: {subtitle()!r}")
        await pilot.press("a")
        await wait_for(pilot, lambda: view.caught_up, 90, "the run's end")
        await wait_for(pilot, lambda: re.fullmatch(r"\d+:\d\d elapsed", subtitle()) is not None, 5,
                       f"the elapsed time alone; shown: {subtitle()!r}")
        assert view.model.status == "completed"
