"""LabRun: one request run as sessions, from the store lock to the recorded end.

The order is the same whichever face asked:

1. ``prepare()`` (synchronous, before anything starts): the plan, the lock
   directory, every host and backend resolved, and each backend checked against
   the suite (a tool, exec, a probe's arguments, an image it cannot run).  Bad input raises RunRefused
   with one line, and nothing has been created or written.
2. ``await run()``: read the store for reconcile, open the store's writer,
   open the hosts (closed on the way out, whatever happens), reconcile each
   backend, run every session at once, tear down, record each session's end.

Signals (SIGINT, SIGTERM, SIGHUP) all start the same orderly teardown; a
second SIGINT or SIGTERM stops waiting and force-destroys what is left.  Faces
call ``next()``, ``auto()``, ``pause()``, ``abort()`` and ``leave()``.

A face whose event loop also draws (the console) calls ``await run_in_thread()``
instead of ``await run()``: the run gets an event loop of its own in a thread, so
a redraw never delays the engine (a create waits on several loop wake-ups).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, Literal

from labtui.backends.base import Backend, BackendError, open_backend
from labtui.core.errors import UsageError
from labtui.core.events import Event
from labtui.core.liveness import LivenessError, lock_dir
from labtui.core.stopsignals import FORCE_SIGNALS, stop_signals, take_noted_stop_signal
from labtui.engine import Plan, SessionRunner, StepGate, check_backend_runs, plan_for
from labtui.engine.quiet import QuietWindows
from labtui.hosts import Host, HostError, get_host
from labtui.lifecycle.reconcile import StoreView, reconcile_before_run
from labtui.session.estimate import History, StepClock
from labtui.session.feeder import StoreFeeder
from labtui.session.request import RunRequest
from labtui.session.store_process import StoreProcess
from labtui.store.errors import StoreError
from labtui.store.journal import Journal
from labtui.suites.model import Suite
from labtui.suites.serialize import suite_to_dict

#: After the first stop signal, the orderly teardown has this long before it is forced, as by a second signal.
FORCE_AFTER_S = 4.0
#: After the first stop signal, the run has this long to record its end before ``LabRun.on_deadline`` is called.
DEADLINE_S = 8.0

#: A notice for the face: (level, text), level one of info, warning, error.
Notify = Callable[[str, str], None]


class RunRefused(UsageError):
    """The request cannot run (bad host, backend, lock directory or store): one line, exit 2."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one session ended."""

    session_id: str
    host: str
    status: str
    message: str = ""
    #: False when the run was stopped before the session started: nothing of it is in the store.
    recorded: bool = True


def _never_raising(notify: Notify) -> Notify:
    """`notify` made harmless: a notice that cannot be shown (the terminal closed, stderr's reader
    gone) is dropped, and never stops a teardown that is under way."""

    def tell(level: str, text: str) -> None:
        try:
            notify(level, text)
        except (OSError, ValueError):  # EIO or EPIPE on a closed terminal; a closed file
            pass

    return tell


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a face shows of one session of a run: its id, suite, backend and host."""

    session_id: str
    suite: Suite
    backend: str
    host: str


#: What ``LabRun.stepping`` says: "auto" (steps follow each other), "manual" (the run pauses after this step),
#: "waiting" (a step has ended and the run waits for next, auto or abort), "aborting".
Stepping = Literal["auto", "manual", "waiting", "aborting"]


@dataclass(frozen=True, slots=True)
class LiveInstance:
    """An instance a run created and has not destroyed: its session, name and lab role."""

    session_id: str
    name: str
    role: str

    def __str__(self) -> str:
        return f"{self.name} ({self.role})"


class LabRun:
    """Runs a request: one session per host, all recorded in one store.

    A face sees the run through this class alone: ``sessions`` (after ``prepare``), ``events()``
    (every session's events, merged), ``stepping``, ``waiting_at_step`` and ``until_step_waiting``,
    ``live_instances()``, the controls (next, auto, pause, abort, leave, force) and ``left_running``.
    """

    #: Called, from a thread of its own, when the run has not ended DEADLINE_S after its stop signal
    #: (a backend, a host or the store that does not answer); the CLI exits then.
    on_deadline: Callable[[], None] | None = None
    #: The timers a stop signal started (see _start_deadlines).
    _timers: tuple[threading.Timer, ...] = ()

    def __init__(self, request: RunRequest, *, notify: Notify | None = None) -> None:
        self.request = request
        self.plan: Plan = _plan(request)
        self.gate = StepGate(auto=not request.manual)
        #: Whether a session measures now: the feed, the sampler and the faces' redraws wait while it does.
        self.quiet = QuietWindows()
        self.runners: list[SessionRunner] = []
        self.outcomes: list[Outcome] = []
        self._notify = _never_raising(notify or (lambda level, text: None))
        self._tasks: list[asyncio.Task[str]] = []
        self._stopping = False
        self._forced = False
        #: The name of the signal that stopped the run (None: it was not stopped by a signal).
        self.signal: str | None = None
        self._view: StoreView | None = None
        #: Moves the run's journals into the store, once the run has started.
        self.feeder: StoreFeeder | None = None
        #: The loop the run runs on, once it runs (control calls from elsewhere are handed to it).
        self._loop: asyncio.AbstractEventLoop | None = None
        #: Each session's latest comparable completed session in the store, read as the run starts (none: no entry).
        self.pasts: dict[str, History] = {}
        #: The queues events() handed out, each with the loop it is read on.
        self._listeners: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[Event | None]]] = []

    # --- before anything starts -------------------------------------------------

    def prepare(self) -> list[SessionRunner]:
        """Resolve hosts and backends, check that each backend can run the suite, and check the lock directory;
        RunRefused on bad input, before any session, store or instance is created."""
        if self.runners:
            return self.runners
        try:
            lock_dir()
        except LivenessError as exc:
            raise RunRefused(str(exc)) from None
        for name in self.request.host_names:
            host = _host(name)
            backend = _backend(self.request.backend_name, host, asdict(self.request.suite.backend_settings))
            try:
                check_backend_runs(self.request.suite, backend)
            except BackendError as exc:
                raise RunRefused(str(exc)) from None
            self.runners.append(SessionRunner(self.request.suite, backend, host, gate=self.gate, quiet=self.quiet,
                                              tags=dict(self.request.tags), note=self.request.note))
        return self.runners

    @property
    def sessions(self) -> list[SessionInfo]:
        """The run's sessions, one per host (empty before ``prepare``)."""
        return [SessionInfo(r.session_id, r.ctx.suite, r.ctx.backend.name, r.ctx.host.name) for r in self.runners]

    def events(self) -> asyncio.Queue[Event | None]:
        """Every session's events, merged, delivered on the caller's loop; None once every session has ended.

        Call it before ``run()`` (or ``run_in_thread()``) so that no event is missed.
        """
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._listeners.append((asyncio.get_running_loop(), queue))
        return queue

    def _publish(self, event: Event | None) -> None:
        for loop, queue in self._listeners:
            if loop is self._loop:
                queue.put_nowait(event)
            elif not loop.is_closed():
                loop.call_soon_threadsafe(queue.put_nowait, event)

    @property
    def waiting_at_step(self) -> bool:
        """True while a step has ended and the run waits for next, auto or abort (a manual run)."""
        return self.gate.waiting

    @property
    def stepping(self) -> Stepping:
        """How the run goes from step to step now: on by itself, waiting for next, paused after this step, or
        stopping."""
        if self.gate.aborted:
            return "aborting"
        if self.gate.auto:
            return "auto"
        return "waiting" if self.gate.waiting else "manual"

    def live_instances(self) -> list[LiveInstance]:
        """Every instance the run's sessions have created and not yet destroyed, in creation order."""
        return [LiveInstance(r.session_id, i.name, i.labels.role) for r in self.runners for i in r.ctx.live]

    async def until_step_waiting(self, waiting: bool = True) -> None:
        """Return once the run waits at a step (or, with waiting=False, once it goes on); on the run's loop."""
        await self.gate.until_waiting(waiting)

    # --- the run -------------------------------------------------------------------

    async def run(self) -> list[Outcome]:
        """Run every session to its end; return how each ended.

        RunRefused when the store cannot be opened (nothing has started then).
        Each session records into its own journal; a StoreFeeder has the store's
        own process move the journals in between measurements, so the engine
        never waits on the store and this process never loads it.
        """
        runners = self.prepare()
        self._loop = asyncio.get_running_loop()
        try:
            store = await StoreProcess.start()
        except StoreError as exc:
            self._end_unstarted(runners)
            raise RunRefused(str(exc)) from None
        try:
            statuses = await self._run_with_store(runners, store)
        finally:
            await store.close()
        if not self._tasks:
            statuses = ["aborted"] * len(runners)
        lost = next((r.ctx.lost for r in runners if r.ctx.lost is not None), None)
        if lost is not None:  # its journal could not record the run (a full disk)
            raise StoreError(str(lost))
        self.outcomes = [self._outcome(r, s) for r, s in zip(runners, statuses)]
        return self.outcomes

    def _end_unstarted(self, runners: list[SessionRunner]) -> None:
        """The run cannot start: end every session's events (and the faces' queues) unstarted."""
        for runner in runners:
            runner.bus.close()
        self._publish(None)

    async def _run_with_store(self, runners: list[SessionRunner], store: StoreProcess) -> list[str | BaseException]:
        """Open the store through its process, then run every session, each recording into its own journal."""
        db = self.request.db
        try:
            self._view = await store.view(db)  # moves finished journals in, too
            await self._read_pasts(store, runners)
            notice = await store.open(db, OPEN_WAIT_S)
            journals = [Journal.create(db, r.session_id) for r in runners]
        except (StoreError, OSError) as exc:
            self._end_unstarted(runners)
            raise RunRefused(str(exc)) from None
        if notice:
            self._notify("warning", notice)
        for runner, journal in zip(runners, journals):
            runner.ctx.journal, runner.ctx.helper_pids = journal, (store.pid,)
        self.feeder = StoreFeeder(store, db, journals, self._notify, self.quiet)
        merged: asyncio.Queue[Event | None] = asyncio.Queue()

        def deliver(event: Event) -> None:
            merged.put_nowait(event)
            self._publish(event)

        forwards = [asyncio.create_task(_forward(r.bus.subscribe(), deliver)) for r in runners]
        feeding = asyncio.create_task(self.feeder.run(merged))  # feeds until the events end, then once more
        statuses: list[str | BaseException] = []
        with self._signals(self._on_signal):  # until every session's end is recorded
            async with contextlib.AsyncExitStack() as hosts:
                for runner in runners:
                    hosts.push_async_callback(runner.ctx.host.close)
                try:
                    await self._reconcile(runners, journals[0])
                    if not self._stopping:
                        self._tasks = [asyncio.create_task(r.run()) for r in runners]
                    statuses = await asyncio.gather(*self._tasks, return_exceptions=True)
                finally:
                    for runner in runners:
                        if not self._tasks:
                            runner.bus.close()  # never started: let the forwards end
                    await asyncio.gather(*forwards)
                    merged.put_nowait(None)
                    self._publish(None)
                    await feeding
        return statuses

    async def _read_pasts(self, store: StoreProcess, runners: list[SessionRunner]) -> None:
        """Each session's latest comparable completed session in the store (for its time left); a store that
        cannot be read gives none."""
        for runner in runners:
            ctx = runner.ctx
            try:
                rows = await store.history(self.request.db, ctx.suite.name, ctx.host.name, ctx.backend.name,
                                           suite_to_dict(ctx.suite))
            except StoreError:
                continue
            if (past := History.from_rows(rows, self.plan)) is not None:
                self.pasts[runner.session_id] = past

    def step_clock(self, session_id: str) -> StepClock:
        """The elapsed time and time left of one of the run's sessions, as every face shows them: fed its events,
        it leans on the session's comparable past session (`pasts`) until it has measured a repetition."""
        return StepClock(self.plan, past=lambda: self.pasts.get(session_id))

    async def run_in_thread(self, ended: Callable[[], None] | None = None) -> list[Outcome]:
        """``run()`` on an event loop of its own in a thread; the caller's loop stays free to draw.

        Signals are caught on the caller's loop and handed to the run's; notices come back on the
        caller's loop; next, auto, pause, abort, leave and force may be called from the caller's thread.
        ``ended`` is called in the run's thread once every session's end is recorded and the store
        closed: it still runs when the caller's loop is stuck (a console whose terminal closed).
        """
        caller = asyncio.get_running_loop()
        notify = self._notify

        def notify_caller(level: str, text: str) -> None:
            caller.call_soon_threadsafe(notify, level, text)

        self._notify = notify_caller
        def run_then_end() -> list[Outcome]:
            outcomes = asyncio.run(self.run())
            if ended is not None:
                ended()
            return outcomes

        with self._signals(lambda signum: self._call(self._on_signal, signum)):
            return await asyncio.to_thread(run_then_end)

    def _call(self, action: Callable[..., Any], *args: Any) -> None:
        """Do action on the run's loop: at once when on it (or when it is not running), else handed over."""
        loop = self._loop
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if loop is None or loop is here or loop.is_closed():
            action(*args)
        else:
            loop.call_soon_threadsafe(action, *args)

    async def _reconcile(self, runners: list[SessionRunner], journal: Journal) -> None:
        """Close what earlier sessions left open; the closing rows go through this run's first journal."""
        checks = await asyncio.gather(*(reconcile_before_run(r.ctx.backend, self.request.db, self._view)
                                        for r in runners))
        for updates, summary in checks:
            if updates:
                journal.append_all(updates)
            if summary:
                self._notify("warning", summary)

    def _outcome(self, runner: SessionRunner, status: str | BaseException) -> Outcome:
        host = runner.ctx.host.name
        if isinstance(status, BaseException):
            return Outcome(runner.session_id, host, "failed", f"{type(status).__name__}: {status}")
        return Outcome(runner.session_id, host, status, runner.abort_reason if status == "aborted" else "",
                       recorded=bool(self._tasks))

    # --- what faces ask for ---------------------------------------------------------

    def next(self) -> None:
        """Let the waiting step(s) go on."""
        self._call(self.gate.next)

    def auto(self) -> None:
        """Run on without pausing."""
        self._call(self.gate.set_auto, True)

    def pause(self) -> None:
        """Pause after the current step."""
        self._call(self.gate.set_auto, False)

    def abort(self, reason: str) -> None:
        """Stop every session now, tear down, and record reason as each session's end."""
        self._call(self._stop, reason, False)

    def leave(self, reason: str) -> None:
        """Stop every session now without tearing down: its instances stay running (a console quit)."""
        self._call(self._stop, reason, True)

    def _stop(self, reason: str, leave: bool) -> None:
        if self._stopping:
            return
        self._stopping = True
        for runner in self.runners:
            live = runner.ctx.live
            if leave:
                runner.keep_instances = True
                names = ", ".join(i.name for i in live) or "none"
                runner.ctx.log("warning", "abort", f"{reason}: leaving {len(live)} instance(s) running: {names}")
            else:
                runner.ctx.log("warning", "abort", f"{reason}: tearing down {len(live)} instance(s)")
            runner.abort(reason)
        for task in self._tasks:  # after its first step, which the loop ran before no other callback of ours:
            task.get_loop().call_soon(task.cancel)  # a task cancelled before it started never closes its bus
        self._notify("warning", f"{reason}: {'leaving the instances running' if leave else 'tearing down'}")

    def force(self) -> None:
        """Stop waiting for an orderly teardown: force-destroy what is left of every session."""
        self._call(self._force)

    def _force(self, why: str = "second interrupt") -> None:
        if self._forced:
            return
        self._forced = True
        self._notify("error", f"{why}: force-destroying what is left")
        for runner in self.runners:
            runner.force()

    @property
    def stopped_exit_status(self) -> int:
        """The status a process ends with when this run was stopped: 128 + the stop signal's number, as a shell
        reports a command a signal ended (130 SIGINT, 143 SIGTERM, 129 SIGHUP); 130 for an abort asked for
        otherwise (the step prompt's q, the console's x)."""
        return 128 + signal.Signals[self.signal].value if self.signal else 130

    @property
    def stopping(self) -> bool:
        return self._stopping

    @property
    def sessions_ended(self) -> bool:
        """True once every session has ended (its end recorded in its journal), while the run may still be
        taking its last feed into the store: nothing is left to tear down."""
        return bool(self._tasks) and all(task.done() for task in self._tasks)

    def left_running(self, *, every: bool = False) -> list[str]:
        """The exact cleanup command for every session that still has live instances (every: for every session)."""
        return [f"labtui cleanup --session {r.session_id}" + (f" --host {r.ctx.host.name}" if r.ctx.host.name != "local" else "")
                + f" --backend {r.ctx.backend.name} --db {self.request.db}"
                for r in self.runners if every or r.ctx.live]

    # --- signals --------------------------------------------------------------------------

    @contextlib.contextmanager
    def signals(self) -> Iterator[None]:
        """INT, TERM and HUP stop the run (a second INT or TERM forces) from here on, on the running loop.

        A face that calls ``run()`` takes the signals with this first, before it creates anything,
        so that no signal meets the default handlers (or asyncio's SIGINT handler, which would cancel
        the face's task) while ``run()`` reads and opens the store: a signal that lands before the
        sessions start only keeps them from starting.  So does one the command noted just before
        (labtui.core.stopsignals).
        """
        with self._signals(self._on_signal):
            noted = take_noted_stop_signal()
            if noted is not None:
                self._on_signal(noted)
            yield

    @contextlib.contextmanager
    def _signals(self, handler: Callable[[int], None]):
        """INT, TERM and HUP (unless started ignored: labtui.core.stopsignals.stop_signals) call handler (abort;
        a second INT or TERM forces) in the block.

        Blocks may nest (a face's ``signals()`` around ``run()``'s own): the inner end removes the
        handlers, and then the outer one has nothing left to remove.
        """
        loop = asyncio.get_running_loop()
        installed = []
        for signum in stop_signals():
            try:
                loop.add_signal_handler(signum, handler, signum)
            except (ValueError, RuntimeError, NotImplementedError):  # not the main thread: the face handles it
                continue
            installed.append(signum)
        try:
            yield
        finally:
            for timer in self._timers:  # the run ended in time
                timer.cancel()
            for signum in installed:
                loop.remove_signal_handler(signum)
                if self.signal is not None:  # stopped by a signal and recorded: a repeat only asks again
                    signal.signal(signum, signal.SIG_IGN)

    def _on_signal(self, signum: int) -> None:
        name = signal.Signals(signum).name
        if not self._stopping:
            self.signal = name
            self.abort(f"aborted by {name}")
            self._start_deadlines()
        elif signum in FORCE_SIGNALS:
            self._force()

    def _start_deadlines(self) -> None:
        """Force the teardown FORCE_AFTER_S after the stop signal; call on_deadline DEADLINE_S after it.

        Timer threads, not the loop's timers: the loop may be what does not answer (a call that blocks it).
        """
        late = f"no end {FORCE_AFTER_S:g} s after the signal"
        timers = [threading.Timer(FORCE_AFTER_S, self._call, (self._force, late))]
        if self.on_deadline is not None:
            timers.append(threading.Timer(DEADLINE_S, self.on_deadline))
        for timer in timers:
            timer.daemon = True
            timer.start()
        self._timers = tuple(timers)


def _plan(request: RunRequest) -> Plan:
    try:
        return plan_for(request.suite)
    except ValueError as exc:
        raise RunRefused(f"{request.suite.source}: {exc}") from None


def _host(name: str) -> Host:
    try:
        return get_host(name)
    except HostError as exc:
        raise RunRefused(str(exc)) from None


def _backend(name: str, host: Host, settings: dict[str, Any]) -> Backend:
    """Backend name on host, given the suite's ``[backend]`` settings; RunRefused when either is refused."""
    try:
        backend = open_backend(name, host)
        backend.configure(settings)
        return backend
    except BackendError as exc:
        raise RunRefused(str(exc)) from None


#: How long a run waits at its start for a store another program holds before it goes on without it (seconds).
OPEN_WAIT_S = 1.0


async def _forward(source: asyncio.Queue[Event | None], deliver: Callable[[Event], None]) -> None:
    """Hand one session's events on (to the feeder and the faces) until its end."""
    while (event := await source.get()) is not None:
        deliver(event)
