"""`labtui run SUITE [--host H]...`: run a suite headless, record it, print a summary table.

With several hosts the same experiment runs on each at once, one session per
host (its results carry the host's name), all recorded in the same store.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import statistics
import sys
import threading
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.text import Text

from labtui import store
from labtui.commands.common import db_path
from labtui.core.events import Event, Log, Result, SessionEnded, StepEnded, StepStarted
from labtui.core.stopsignals import raise_if_stopped
from labtui.core.units import quantity
from labtui.session import LabRun, Plan, RunRequest, SessionInfo
from labtui.session.estimate import QUIET_WAIT, StepClock
from labtui.session.estimate import clock as clock_text
from labtui.session.request import parse_tags
from labtui.session.service import DEADLINE_S
from labtui.store import StoreError
from labtui.suites import load_suite

#: A session's status as the command's exit status; an aborted one ends with LabRun.stopped_exit_status.
EXIT_CODES = {"completed": 0, "failed": 1}


class _QuietWhenClosed(Console):
    """A run's console: when the reader of its output goes away (a closed pipe or terminal) it goes
    quiet and the run goes on, recording, stops on a signal as usual and exits with its own status.
    Rich's own console would raise SystemExit(1) from whatever printed last, even from a signal handler
    amid the teardown."""

    def on_broken_pipe(self) -> None:
        self.quiet = True


def cmd_run(args) -> int:
    """Turn the arguments into a request, run it through the session service, print each session's table.

    A stop signal before the run's loop takes the signals over ends the command at the next
    raise_if_stopped, before anything is created.
    """
    raise_if_stopped()  # one that came during the imports
    console = _QuietWhenClosed(stderr=True)
    suite = load_suite(args.suite, args.overrides, args.profile)
    path = db_path(args)
    request = RunRequest(suite, path, tuple(args.hosts), args.backend, manual=args.step, tags=parse_tags(args.tags),
                         note=args.note)
    lab = LabRun(request, notify=lambda level, text: _notice(console, level, text))
    lab.on_deadline = lambda: _exit_now(lab)
    try:
        lab.prepare()
        raise_if_stopped()
        outcomes = asyncio.run(_run(lab, console))
    except StoreError as exc:
        console.print(Text.assemble(("store error: ", "red"), str(exc)))
        ids = ", ".join(s.session_id for s in lab.sessions)
        console.print(Text(f"session {ids} stopped; what was committed before is intact in {path}"))
        return 1
    render_summary = importlib.import_module(TABLE_MODULE).render_summary  # loaded after the last window

    several = len(outcomes) > 1
    # rows left in the journals were said in one line; a store held read-only still serves the table
    # from them (labtui.store.overlay), one held for writing would only make the reader wait
    in_journals = lab.feeder is not None and lab.feeder.left_in_journals is not None
    table_readable = not in_journals or store.readable_now(path)
    for outcome in outcomes:
        where = f" on {outcome.host}" if several else ""
        if not outcome.recorded:
            console.print(Text.assemble("session ", (outcome.session_id, "bold"), f"{where} stopped before it started: "
                                        "nothing was created or recorded"))
            continue
        console.print(Text.assemble("session ", (outcome.session_id, "bold"), f"{where} {outcome.status} -> {path}"))
        if table_readable:
            render_summary(_QuietWhenClosed(), path, outcome.session_id)
    for command in lab.left_running():
        console.print(Text(f"instances left running: `{command}` ends them", "red"))
    return max(lab.stopped_exit_status if o.status == "aborted" else EXIT_CODES.get(o.status, 1) for o in outcomes)


def _exit_now(lab: LabRun) -> None:
    """The run has not ended DEADLINE_S after its stop signal (a backend, a host or the store does not
    answer): say what may be left and exit at once, waiting neither for the loop nor for its threads."""
    lines = [f"{lab.signal}: the run did not end within {DEADLINE_S:g} s; exiting before its end is recorded"]
    lines += [f"instances may be left: `{command}` ends them" for command in lab.left_running(every=True)]
    with contextlib.suppress(OSError, ValueError):
        os.write(sys.stderr.fileno(), ("\n".join(lines) + "\n").encode())
    os._exit(lab.stopped_exit_status)


def _notice(console: Console, level: str, text: str) -> None:
    style = {"info": "", "warning": "yellow", "error": "red"}.get(level, "")
    console.print(Text(text, style))


async def _run(lab: LabRun, console: Console) -> list:
    """Run the request while drawing one progress line per session (and the step prompt with --step).

    The run takes the signals first, before this loop awaits anything: see LabRun.signals.
    """
    with lab.signals():
        side = [asyncio.create_task(_show_progress(lab.events(), lab, console))]
        if lab.request.manual:
            side.append(asyncio.create_task(_prompt_between_steps(lab)))
        try:
            return await lab.run()
        except BaseException:
            side[0].cancel()  # run() failed: the sessions' events may never end
            raise
        finally:
            for task in side[1:]:
                task.cancel()
            await asyncio.gather(*side, return_exceptions=True)


#: The module that draws each session's table once the run has ended (it loads DuckDB, polars and scipy).
TABLE_MODULE = "labtui.commands.printing"
#: Seconds between two redraws of the progress lines (each waits for the run's quiet window to close).
REDRAW_S = 0.25
#: Seconds between two redraws while the run waits for an idle host (a window that times nothing).
WAIT_REDRAW_S = 1.0


async def _show_progress(events: asyncio.Queue[Event | None], lab: LabRun, console: Console) -> None:
    """One progress line per session, fed by the run's events (each goes to its session's line).

    Rich's own refresh thread would draw ten times a second whatever the run measures; the lines are
    drawn here instead, REDRAW_S apart and never while a measured operation is in flight.
    """
    with Progress(
        TextColumn("{task.description}", style="bold", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}", markup=False),
        TextColumn("{task.fields[clock]}", markup=False),  # elapsed and time left
        console=console,
        auto_refresh=False,
    ) as progress:
        several = len(lab.sessions) > 1
        lines = {s.session_id: _ProgressLine(s, lab.plan, progress, console, lab.step_clock(s.session_id),
                                             several=several) for s in lab.sessions}
        redraws = asyncio.create_task(_redraw_between_windows(progress, lab))
        try:
            while (event := await events.get()) is not None:
                if line := lines.get(event.session_id):
                    line.apply(event)
        finally:
            redraws.cancel()
        progress.refresh()
    # every session has ended, nothing is measured any more: the final table's modules (DuckDB, polars, scipy)
    # load while the store's process takes the last feed, not after it
    threading.Thread(target=importlib.import_module, args=(TABLE_MODULE,), daemon=True).start()


async def _redraw_between_windows(progress: Progress, lab: LabRun) -> None:
    """Draw the progress lines every REDRAW_S, each time once no measured operation is in flight; while a wait for
    an idle host is (it times nothing) every WAIT_REDRAW_S, so that the wait and the time left are seen to move."""
    drawn = 0.0
    while True:
        await asyncio.sleep(REDRAW_S)
        await lab.quiet.until_untimed()
        if lab.quiet.timing or (lab.quiet.is_open and time.monotonic() - drawn < WAIT_REDRAW_S):
            continue  # a window opened again before this task ran; or a wait, drawn a moment ago
        progress.refresh()
        drawn = time.monotonic()


class _ProgressLine:
    """One session's progress line: steps done of all, the step it is at, its latest result, the clock."""

    def __init__(self, session: SessionInfo, plan: Plan, progress: Progress, console: Console, clock: StepClock, *,
                 several: bool) -> None:
        self.session, self.plan, self.progress, self.console, self.several = session, plan, progress, console, several
        self.clock = clock  # LabRun.step_clock: it leans on a comparable past session until it has its own steps
        label = f"{session.suite.name} @ {session.host}" if several else session.suite.name
        self.task = progress.add_task(label, total=plan.total_steps, detail="starting", clock=self.clock)
        #: The last ended step's figure, named with its background; the values of the step under way.
        self.latest = ""
        self.step_values: dict[tuple[str, str], list[float]] = {}

    def apply(self, event: Event) -> None:
        """Move the line on by one of its session's events."""
        self.clock.apply(event)
        reps = self.session.suite.repetitions
        if isinstance(event, Result):
            self.step_values.setdefault((event.metric, event.unit), []).append(event.value)
        elif isinstance(event, StepStarted):
            self.step_values = {}
            self.progress.update(self.task, detail=_detail(event.repetition, reps, event.step, event.steps,
                                                           event.background, self.latest))
        elif isinstance(event, StepEnded):
            self.latest = _step_figure(self.step_values, event.background)
            self.progress.advance(self.task)
            self.progress.update(self.task, detail=_detail(event.repetition, reps, event.step,
                                                           self.plan.steps_per_repetition, event.background,
                                                           self.latest))
        elif isinstance(event, Log) and event.level in ("warning", "error"):
            where = f" ({self.session.host})" if self.several else ""
            self.console.print(Text(f"{event.level}{where} [{event.category}]: {event.message}",
                                    "red" if event.level == "error" else "yellow"))
        elif isinstance(event, Log) and event.category == QUIET_WAIT:  # until the next step starts
            self.progress.update(self.task, detail=_Waiting(self.clock, event.message))
        elif isinstance(event, SessionEnded) and event.message:
            where = f" ({self.session.host})" if self.several else ""
            self.console.print(Text.assemble((f"{event.status}{where}: ", "red"), event.message))


class _Waiting:
    """The detail while the run waits for an idle host: the engine's line and how long it has waited, drawn anew at
    each redraw (the wait moves on between events): `rep 2/3  waiting up to 10 s for host local to be idle (CPU 4%
    free) before measuring: 0:04 so far`."""

    def __init__(self, clock: StepClock, message: str) -> None:
        self.clock, self.message = clock, message

    def __str__(self) -> str:
        waited = self.clock.waiting()
        upcoming = self.clock.waiting_repetition()
        return f"rep {upcoming}/{self.clock.plan.repetitions}  {self.message}" + \
            ("" if waited is None else f": {clock_text(waited)} so far")


def _step_figure(values: dict[tuple[str, str], list[float]], background: int) -> str:
    """The ended step's first metric as its median over the step's values, named with the step's background (the
    line shows it while the next step runs): `bg 10: boot_time median 3.2 ms (n=5)`."""
    if not values:
        return ""
    (metric, unit), found = next(iter(values.items()))
    return f"bg {background}: {metric} median {quantity(statistics.median(found), unit)} (n={len(found)})"


def _detail(rep: int, reps: int, step: int, steps: int, background: int, latest: str) -> str:
    return f"rep {rep}/{reps}  step {step}/{steps - 1}  background {background}  {latest}"


async def _prompt_between_steps(lab: LabRun) -> None:
    """With --step: after each step, Enter goes on, a switches to auto, q (or end of input) aborts."""
    while True:
        await lab.until_step_waiting(True)
        sys.stderr.write("step done: Enter = next, a = auto, q = abort > ")
        sys.stderr.flush()
        line = await asyncio.to_thread(sys.stdin.readline)
        answer = line.strip().lower()
        if answer == "q" or not line:
            lab.abort("aborted at the step prompt")
            return
        if answer == "a":
            lab.auto()
        else:
            lab.next()
        await lab.until_step_waiting(False)  # the step goes on: wait for it before asking again
