"""The Run view: choose a suite, step through a session, watch hosts, counts, chart and log.

The session runs on an event loop of its own in a thread (LabRun.run_in_thread),
so drawing never delays the engine's loop; a Textual worker awaits it.  Its
events land in a queue (put by the engine's thread, only ever read here with
get_nowait) that is drained every DRAIN_S into an in-memory RunModel.  Text panes
are redrawn at most once per drain, never per event, and only when their text
changed.  The slowdown table (an in-memory DuckDB query) is recomputed in a
thread, only when results arrived, and while a session's steps run at most once
per RUN_CHART_EVERY_S; new host samples alone redraw the chart at most once per
CHART_EVERY_S.  Drawing takes the GIL and a core from the engine's thread, so
what a person cannot see faster is not drawn faster (bench_faces.py).  The
run's time left and elapsed time (labtui.session.estimate) are shown under the
run pane, redrawn at every drain.  A drain that falls in a quiet window (a
measured operation in flight) is skipped: the next one catches up.  A wait for
an idle host before a repetition times nothing: its drains go on, without the
chart, and the run pane's status says that the run waits and for how long.
The session service, the engine and the hosts are imported when a run starts.

The view's first frame holds its three text panes, filled with what is known at
once: the host's name with its readings to come, "no run yet", no instances.  It
needs only Textual and this package's light modules.  Once that frame is on the
terminal, LabApp calls `after_first_frame`: the chart and slowdown table
(labtui.ui.panes, whose chart says "no results yet" until a run has results) and
the events log are mounted below the panes, and the host sampler starts,
importing labtui.hosts in a thread.  The progress bar is mounted with the first
run; polars and the plot library are imported with a run's first results.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker

from labtui.core.errors import LabError
from labtui.core.events import Event, InstanceCreating, InstanceDestroyed, InstanceReady
from labtui.ui.modals import AbortQuestion, AskScreen
from labtui.ui.model.live import HostState, RunModel
from labtui.ui.model.pane_text import counts_table, hosts_text, log_line, next_step_text, run_text
from labtui.ui.tabs import ConsoleSettings, PaletteCommand

if TYPE_CHECKING:
    import polars as pl
    from textual.widgets import ProgressBar, RichLog

    from labtui.session import LabRun
    from labtui.session.estimate import StepClock
    from labtui.ui.model.choices import StartRequest

DRAIN_S = 0.5
#: Events folded per drain at most, so a burst never stalls a keypress.
DRAIN_MAX = 5000
#: New samples alone redraw the chart at most this often (new results: RUN_CHART_EVERY_S): a redraw
#: of both plots costs tens of ms of CPU.
CHART_EVERY_S = 5.0
#: While a session's steps run, new results redraw the chart and slowdown table at most this often;
#: once it waits for `n` (manual stepping, or paused) or has ended they are drawn at once.  Redrawing
#: both plots is what a console run costs over a CLI run (bench_faces.py: steps 1.10x without it).
RUN_CHART_EVERY_S = 5.0
DEFAULT_SUITE = "boot-scaling"


class RunView(Vertical):
    """Start, step, pause and abort a session and watch it live."""

    DEFAULT_CSS = """
    RunView #top { height: 10; max-height: 40%; }
    RunView .pane { border: round $primary; padding: 0 1; width: 1fr; height: 100%; }
    RunView #runbox { width: 1fr; }
    RunView #live { height: 1fr; layout: horizontal; }
    RunView #live > .chart { width: 3fr; height: 100%; max-height: 100%; }
    RunView #live > DataTable { width: 2fr; height: 100%; }
    RunView #log { height: 8; max-height: 20%; border: round $secondary; }
    """
    BINDINGS = [
        Binding("s", "start", "start"),
        Binding("n", "next_step", "next"),
        Binding("N", "next_steps", "next N", show=False),
        Binding("a", "auto", "auto"),
        Binding("p", "pause", "pause"),
        Binding("x", "abort", "abort"),
    ]

    class Finished(Message):
        """A session run from the console has ended."""

        def __init__(self, session_id: str, status: str) -> None:
            super().__init__()
            self.session_id, self.status = session_id, status

    def __init__(self, db_path: Path, backend: str, host: str, *, idle_sampling: bool = True,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        #: Steps still to let through one after another after N (0: wait at every step, as n does).
        self.steps_to_go = 0
        #: The view takes the focus itself until its table is mounted, so that its keys work from the first frame.
        self.can_focus = True
        self.db_path, self.backend_name, self.host_name = db_path, backend, host
        self.idle_sampling = idle_sampling
        self.suite_name, self.manual = DEFAULT_SUITE, False
        self.model = RunModel()
        self.lab: LabRun | None = None
        self.run_worker_handle: Worker | None = None
        self._queue: asyncio.Queue[Event | None] | None = None
        self._idle: Worker | None = None
        self._drawn = -1
        #: (results, samples) the chart last drew: none yet, and the empty chart says so until a run starts.
        self._charted = (0, 0)
        self._chart_at = 0.0
        self._charting: Worker | None = None
        self._texts: dict[str | None, Text] = {}
        self._counted: Counter[tuple[str, str, str]] | None = None
        self._slow: pl.DataFrame | None = None
        #: Lines logged before the events log is mounted (after the first frame), written to it then.
        self._early_log: list[Text] = []
        self.clock: StepClock | None = None  # the elapsed time and time left of the last run started here

    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield Static(id="hosts", classes="pane")
            with Vertical(id="runbox", classes="pane"):
                yield Static(id="runinfo")
            yield Static(id="counts", classes="pane")

    def on_mount(self) -> None:
        self.query_one("#hosts").border_title = "hosts"
        self.query_one("#runbox").border_title = "run"
        self.query_one("#counts").border_title = "instances"
        # the console's host is known at once; its readings come with the sampler's first sample
        self.model.hosts.setdefault(self.host_name, HostState(self.host_name))
        self.set_interval(DRAIN_S, self.drain)
        self.redraw()

    async def after_first_frame(self) -> None:
        """Mount the chart, the slowdown table and the events log below the panes; start sampling the host."""
        from textual.widgets import RichLog

        from labtui.ui.panes import SlowdownPanel

        log = RichLog(id="log", max_lines=2000, wrap=False)
        log.border_title = "events"
        await self.mount(SlowdownPanel(lazy_chart=True, id="live"), log)
        if self.has_focus:  # at once, not a refresh later: a `:` typed meanwhile must keep the focus it takes
            self.app.set_focus(self.query_one("#live DataTable"))
        self.can_focus = False
        for line in self._early_log:
            log.write(line)
        self._early_log.clear()
        self.start_idle_sampler()

    def _log(self) -> RichLog | None:
        """The events log, None until it is mounted."""
        from textual.widgets import RichLog

        for log in self.query_children("#log").results(RichLog):
            return log
        return None

    # --- state -------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.lab is not None

    @property
    def caught_up(self) -> bool:
        """No session runs and every event of the last one is in the model (the bus's end was drained)."""
        return self.lab is None and self._queue is None

    @property
    def session_id(self) -> str | None:
        """The running session's id (the console runs one host at a time), None when no run is active."""
        return self.lab.sessions[0].session_id if self.lab and self.lab.sessions else None

    def gate_state(self) -> str:
        if self.lab is None:
            return "manual" if self.manual else "auto"
        stepping = self.lab.stepping
        if stepping == "waiting":
            return f"manual: waiting, press n: {next_step_text(self.lab.plan, self.model)}"
        return stepping

    # --- sampling hosts while idle -----------------------------------------------

    def start_idle_sampler(self) -> None:
        """Sample the host while no session runs (LabApp starts it once the first frame is drawn)."""
        if not self.idle_sampling:
            return
        self._idle = self.run_worker(self._sample_idle(), group="idle", exclusive=True, exit_on_error=False)

    def _stop_idle_sampler(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None

    async def _sample_idle(self) -> None:
        """Sample the host while no session runs (a running session samples it itself)."""
        await asyncio.to_thread(importlib.import_module, "labtui.hosts")  # imported off the drawing thread
        from labtui.hosts import HostError, get_host

        try:
            host = get_host(self.host_name)
        except HostError as exc:
            self.log_text(f"host {self.host_name}: {exc}")
            return
        async for sample in host.samples(1.0):
            self.model.add_sample(sample)

    # --- draining events -----------------------------------------------------------

    def follow(self, queue: asyncio.Queue[Event | None]) -> None:
        """Show the events of a queue (a bus subscription) from the next drain on; None ends it."""
        self._queue = queue

    def drain(self) -> None:
        """Fold queued events into the model, log them, redraw once if anything changed; skipped while the run
        measures (a quiet window is open: labtui.engine.quiet), so that a redraw never shares the host with it."""
        if self.lab is not None and self.lab.quiet.timing:
            return
        self._release_a_step()
        if self._queue is not None:
            created = ready = destroyed = 0
            for _ in range(DRAIN_MAX):
                try:
                    event = self._queue.get_nowait()
                except asyncio.QueueEmpty:
                    break
                if event is None:
                    self._queue = None
                    break
                self.model.apply(event)
                if self.clock is not None:
                    self.clock.apply(event)
                created += isinstance(event, InstanceCreating)
                ready += isinstance(event, InstanceReady)
                destroyed += isinstance(event, InstanceDestroyed)
                if (line := log_line(event, self.model.position)) is not None:
                    self._write_log(line)
            for n, what in ((created, "creating"), (ready, "ready"), (destroyed, "destroyed")):
                if n:
                    self.log_text(f"{n} instance(s) {what}", style="dim")
        if self.shown():
            self._show_time()  # the elapsed time moves on between events
            if self.model.version != self._drawn or self._waiting() is not None:  # a wait's seconds move on too
                self.redraw()
            else:
                self._chart_if_due()  # results that came while the last chart was being computed

    def shown(self) -> bool:
        """True when the view is on screen (its tab is active): hidden panes are not redrawn."""
        return all(node.display for node in self.ancestors_with_self)

    # --- what the console asks of every view (labtui.ui.tabs.LabView) -------------------------

    #: The Run view takes no typed text.
    TEXT_ENTRY: ClassVar[tuple[type, ...]] = ()

    @classmethod
    def for_console(cls, console: ConsoleSettings, *, id: str) -> RunView:
        return cls(console.db_path, console.backend_name, console.host_name, idle_sampling=console.idle_sampling, id=id)

    def tab_shown(self) -> None:
        self.app.call_after_refresh(self.redraw)  # it skips redraws while hidden

    def palette(self) -> list[PaletteCommand]:
        return [
            ("Run: start a run (suite, backend, host, overrides, stepping)", "s in the Run view", self.action_start),
            ("Run: next step", "n", self.action_next_step),
            ("Run: next N steps, then wait", "N", self.action_next_steps),
            ("Run: auto stepping", "a", self.action_auto),
            ("Run: pause (manual stepping)", "p", self.action_pause),
            ("Run: abort and tear down", "x (asks first)", self.action_abort),
        ]

    def redraw(self) -> None:
        """Repaint the text panes, and start a chart/table redraw when results or samples moved."""
        self._drawn = self.model.version
        hosts = self.query_one("#hosts", Static)
        # the hosts pane's size is the layout's, not its text's: no layout pass for a new sample
        self._show(hosts, hosts_text(self.model.hosts, width=hosts.size.width - 2), layout=False)
        self._show(self.query_one("#runinfo", Static), run_text(self.model, self.gate_state(), self._waiting()))
        if (counts := self.model.counts()) != self._counted:
            self._counted = counts
            self.query_one("#counts", Static).update(counts_table(self.model), layout=False)
        if self.model.total_steps:  # no bar before the first run
            self._progress().update(total=self.model.total_steps, progress=self.model.steps_done)
        self._chart_if_due()

    def _waiting(self) -> str | None:
        """`waiting for an idle host before rep 2/5: 0:04 of at most 0:10` while the run waits for one, else None."""
        return self.clock.waiting_text() if self.clock is not None and self.lab is not None else None

    def _progress(self) -> ProgressBar:
        """The run's progress bar, mounted under the run pane the first time a run has steps."""
        from textual.widgets import ProgressBar

        for bar in self.query("#progress").results(ProgressBar):
            return bar
        bar = ProgressBar(id="progress", show_eta=False)
        self.query_one("#runbox").mount(bar)
        return bar

    def _show_time(self) -> None:
        """The run's elapsed time and time left, under the run pane (only when it changed)."""
        text = self.clock.text() if self.clock is not None else ""
        runbox = self.query_one("#runbox")
        if runbox.border_subtitle != text:
            runbox.border_subtitle = text

    def _show(self, pane: Static, text: Text, *, layout: bool = True) -> None:
        """Update a text pane only when its text changed: every update repaints it (and reflows the screen)."""
        if self._texts.get(pane.id) != text:
            self._texts[pane.id] = text
            pane.update(text, layout=layout)

    def _chart_if_due(self) -> None:
        """Redraw the chart and table when results came (at most every RUN_CHART_EVERY_S during a run), or
        samples came and CHART_EVERY_S passed."""
        charted = (len(self.model.results), len(self.model.availability))
        if charted == self._charted or self._charting is not None or not self.query_children("#live"):
            return
        if self.lab is not None and self.lab.quiet.is_open:  # a wait for an idle host: text only, no plot
            return
        new_results = charted[0] != self._charted[0] or self._slow is None
        stepping = self.lab is not None and not self.lab.waiting_at_step
        every = (RUN_CHART_EVERY_S if stepping else 0.0) if new_results else CHART_EVERY_S
        if time.monotonic() - self._chart_at < every:
            return
        self._charted, self._chart_at = charted, time.monotonic()
        results = self.model.results_frame() if new_results else None
        self._charting = self.run_worker(self._chart(results, self.model.availability_frame()), group="chart",
                                         exit_on_error=False)

    async def _chart(self, results: pl.DataFrame | None, samples: pl.DataFrame) -> None:
        """Show a new slowdown frame (computed in a thread: the engine shares this loop) and availability."""
        await asyncio.to_thread(importlib.import_module, "labtui.ui.model.series")  # polars: off the drawing thread
        from labtui.ui.model.series import availability, trusted_slowdown

        try:
            if results is not None:
                self._slow = await asyncio.to_thread(trusted_slowdown, results)
            if self._slow is not None:
                from labtui.ui.panes import SlowdownPanel

                self.query_one("#live", SlowdownPanel).show(self._slow, availability(samples))
        finally:
            self._charting = None

    def log_text(self, message: str, style: str = "") -> None:
        self._write_log(Text(message, style))

    def _write_log(self, line: Text) -> None:
        log = self._log()
        if log is None:
            self._early_log.append(line)
        else:
            log.write(line)

    # --- actions ----------------------------------------------------------------------

    def action_start(self) -> None:
        """Open the start-run dialog; a confirmed request starts the session."""
        if self.active:
            self.notify("a run is already active", severity="warning")
            return
        from labtui.hosts import known_hosts
        from labtui.suites import list_suites
        from labtui.ui.model.choices import backend_choices
        from labtui.ui.start_dialog import StartDialog

        suites = [(f"{s.name}  ({s.kind or 'invalid'})", s.name) for s in list_suites()]
        dialog = StartDialog(suites, known_hosts(), backend_choices, suite=self.suite_name,
                             backend=self.backend_name, host=self.host_name, manual=self.manual, db=self.db_path)
        self.app.push_screen(dialog, self._started)

    def _started(self, request: StartRequest | None) -> None:
        if request is not None:
            self.start(request)

    def start(self, request: StartRequest) -> None:
        """Run a checked request as a session recorded in the store, through the session service."""
        if self.active:
            self.notify("a run is already active", severity="warning")
            return
        from labtui.session import LabRun, RunRequest

        suite = request.suite
        lab = LabRun(RunRequest(suite, self.db_path, (request.host,), request.backend, manual=request.manual),
                     notify=self._notice)
        try:
            lab.prepare()
        except LabError as exc:  # refused, or a host/backend/store error: one line, nothing started
            self.notify(str(exc), title="cannot start", severity="error", timeout=10, markup=False)
            self.log_text(f"cannot start: {exc}", "red")
            return
        self.suite_name = suite.name
        self.backend_name, self.host_name, self.manual = request.backend, request.host, request.manual
        self._queue = lab.events()
        self.lab = lab
        session = lab.sessions[0]
        self.model.reset(suite.name, session.backend, session.host, lab.plan.repetitions,
                         lab.plan.steps_per_repetition)
        # the first chart of the run comes with the rest, RUN_CHART_EVERY_S in (or at the first wait for `n`)
        self._charted, self._chart_at, self._slow = (-1, -1), time.monotonic(), None
        self._stop_idle_sampler()
        if request.overrides:
            self.log_text("overrides: " + " ".join(request.overrides), "dim")
        self.clock = lab.step_clock(session.session_id)
        self.run_worker_handle = self.run_worker(self._session(lab), group="run", exclusive=True, exit_on_error=False)

    def _notice(self, level: str, text: str) -> None:
        self.log_text(text, {"warning": "yellow", "error": "red"}.get(level, ""))

    async def _session(self, lab: LabRun) -> None:
        """Run the session through the service; restore idle sampling after, and quit after a signal."""
        session_id, status = lab.sessions[0].session_id, "failed"
        try:
            outcome = (await lab.run_in_thread(ended=lambda: _end_if_hung_up(lab)))[0]  # redraws never delay it
            status = outcome.status
            if outcome.message and status != "completed":
                self.log_text(f"{status}: {outcome.message}", "red")
        except LabError as exc:
            self.log_text(f"the run could not go on: {exc}", "red")
            self.notify(str(exc), title="run stopped", severity="error", timeout=10, markup=False)
            self.model.status, self.model.message = "failed", str(exc)
        except asyncio.CancelledError:
            # the console is closing with the run going (an exit not through q, which asks first): end the run,
            # or its thread would wait at a step for ever and keep the process from exiting
            lab.abort("the console closed")
            raise
        finally:
            self.lab = None
            for command in lab.left_running():
                self.log_text(f"instances left running: `{command}` ends them", "red")
            self.start_idle_sampler()
            self.post_message(self.Finished(session_id, status))
        if lab.signal is not None:  # a kill: the session is recorded, the console ends
            self.app.exit(lab.stopped_exit_status)

    def _gate(self) -> LabRun | None:
        if self.lab is None:
            self.notify("no run is active; press s to start one", severity="warning")
        return self.lab

    def action_next_step(self) -> None:
        if lab := self._gate():
            lab.next()
            self.log_text("next step", "bold")

    def action_next_steps(self) -> None:
        """N: ask how many steps to run, then let that many through one after another and wait again."""
        if self._gate() is None:
            return

        def answered(text: str | None) -> None:
            if text is None or self.lab is None:
                return
            if not text.isdigit() or int(text) < 1:
                self.notify(f"not a number of steps: {text!r} (a whole number, 1 or more)", severity="error",
                            markup=False)
                return
            self.steps_to_go = int(text)
            self.log_text(f"next {self.steps_to_go} step(s), then wait", "bold")
            self._release_a_step()

        self.app.push_screen(AskScreen("run how many more steps, then wait?", placeholder="e.g. 10",
                                       hint="n runs one; a runs on to the end; p pauses"), answered)

    def _release_a_step(self) -> None:
        """Let one more of the steps asked for by N through, once the run waits at a step (called by drain)."""
        if self.steps_to_go and self.lab is not None and self.lab.waiting_at_step:
            self.steps_to_go -= 1
            self.lab.next()

    def action_auto(self) -> None:
        if lab := self._gate():
            lab.auto()
            self.log_text("auto stepping", "bold")

    def action_pause(self) -> None:
        self.steps_to_go = 0
        if lab := self._gate():
            lab.pause()
            self.log_text("manual stepping: the run pauses after this step", "bold")

    def action_abort(self, reason: str = "aborted from the console") -> None:
        """Ask, then abort: the run stops at the next gate and tears down its instances."""
        lab = self._gate()
        if lab is None:
            return
        live = [str(instance) for instance in lab.live_instances()]
        lines = [f"session {lab.sessions[0].session_id}: stop after the current step, then destroy:", *live]
        if not live:
            lines.append("(no live instances right now)")

        def answered(yes: bool | None) -> None:
            if yes and self.lab is lab:
                self.abort_run(reason)

        self.app.push_screen(AbortQuestion("Abort the run?", lines), answered)

    def quit_run(self, leave: bool) -> Worker | None:
        """Record the console's quit answer in the session, then tear down or leave the instances.

        Returns the run's worker, to wait for the session's end.
        """
        if self.lab is None:
            return None
        if leave:
            self.lab.leave("console quit")
        else:
            self.abort_run("console quit")
        return self.run_worker_handle

    def abort_run(self, reason: str) -> None:
        """Abort without asking (the caller asked) and note why in the session's log."""
        if self.lab is not None:
            self.lab.abort(reason)
            self.log_text(f"aborting ({reason}): the run stops and tears down", "bold red")
            self.redraw()


def _end_if_hung_up(lab: LabRun) -> None:
    """After a run stopped by SIGHUP, end the process (called in the run's thread, its end recorded).

    The terminal is gone: Textual's writes to the dead tty block the console's loop for ever (it spun
    and never ended), so the process cannot leave through the app's exit.
    """
    if lab.signal == signal.SIGHUP.name:
        os._exit(lab.stopped_exit_status)
