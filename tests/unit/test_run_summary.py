"""What `labtui run` prints besides its tables: the progress line's figure and the warnings a session logged."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, TextColumn

from labtui.commands.printing import render_summary
from labtui.commands.run import _ProgressLine
from labtui.core.events import Log, Result, SessionStarted, StepEnded, StepStarted
from labtui.session import SessionInfo, plan_for
from labtui.session.estimate import StepClock
from labtui.store import record_events
from labtui.suites import load_suite

T0 = 1_790_000_000.0


def _line() -> tuple[_ProgressLine, Progress, io.StringIO]:
    suite = load_suite("boot-scaling", ["scale.steps=2", "scale.per_step=5", "suite.repetitions=1"])
    out = io.StringIO()
    console = Console(file=out, width=200)
    progress = Progress(TextColumn("{task.fields[detail]}"), console=console)
    plan = plan_for(suite)
    return _ProgressLine(SessionInfo("s1", suite, "process", "local"), plan, progress, console, StepClock(plan),
                         several=False), progress, out


def test_the_progress_line_names_the_step_its_figure_is_of() -> None:
    """The line showed step 2's label beside the last boot of step 1; it now shows the ended step's median, named
    with that step's background, while the next step runs."""
    line, progress, _ = _line()
    line.apply(StepStarted("s1", 1, 0, 3, 0, ts=T0))
    for value in (3.0, 1.0, 2.0):
        line.apply(Result("s1", 1, 0, 0, "local", "w", "boot", "boot_time", value * 1e-3, "s", "lower"))
    line.apply(StepEnded("s1", 1, 0, 0, ts=T0 + 1))
    line.apply(StepStarted("s1", 1, 1, 3, 5, ts=T0 + 2))
    line.apply(Result("s1", 1, 1, 5, "local", "w", "boot", "boot_time", 9e-3, "s", "lower"))
    detail = progress.tasks[0].fields["detail"]
    assert "step 1/2  background 5" in detail and "bg 0: boot_time median 2.000 ms (n=3)" in detail
    assert "9.000" not in detail  # the step under way has no figure yet


def test_a_runs_warnings_are_printed_live_and_under_its_tables(tmp_path: Path) -> None:
    line, _, out = _line()
    line.apply(Log("s1", "info", "quiet-wait", "waiting up to 10 s for host local to be idle (CPU 40% free)"))
    line.apply(Log("s1", "warning", "busy-host", "host local still busy after 10 s; measuring anyway"))
    assert "warning [busy-host]: host local still busy after 10 s" in out.getvalue()
    db = tmp_path / "lab.duckdb"
    busy = "host local still busy after 10 s; measuring anyway"
    record_events(db, [
        SessionStarted("s1", "boot-scaling", "scaling", "process", "local", {}, 1, ts=T0),
        Result("s1", 1, 0, 0, "local", "w", "boot", "boot_time", 1e-3, "s", "lower", ts=T0 + 1),
        Log("s1", "warning", "busy-host", busy, ts=T0 + 2),
        Log("s1", "warning", "busy-host", busy, ts=T0 + 3),
        Log("s1", "info", "step", "not a warning", ts=T0 + 4),
    ])
    printed = io.StringIO()
    render_summary(Console(file=printed, width=200), db, "s1")
    text = printed.getvalue()
    assert "boot_time" in text and f"logged warning [busy-host] (2 times): {busy}" in text
    assert "not a warning" not in text
