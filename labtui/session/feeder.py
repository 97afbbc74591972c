"""StoreFeeder: moves a run's journals into the store, from the store's own process, never in a measurement's way.

The feed itself runs in the store process (labtui.session.store_process) at a
low CPU and I/O priority; this side only says when.  A feed is due at each
step's end, at each session's start and end, and every FEED_INTERVAL_S while
new rows wait.  It starts FEED_GAP_S after the last one at the earliest (a
reader sees a run within a step, or within FEED_GAP_S of short steps: a feed
costs far more than a short step's rows), and never while a quiet window is
open (labtui.engine.quiet): one that is due then starts as the window closes.  A window that opens while
a feed is under way waits up to HOLD_WAIT_S for it to finish, and pauses the
store process for the window's length when it has not.

A store held by another program (a notebook, the DuckDB CLI, Harlequin) only
delays the feed: each attempt waits RUN_FEED_WAIT_S at most, the run goes on,
and the store catches up once it is free.  At the run's end one last feed
waits FINAL_FEED_WAIT_S; if the store is still held, the journals stay for the
next labtui command (or ``labtui store sync``) to move in.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from labtui.core.events import Event, SessionEnded, SessionStarted, StepEnded
from labtui.engine.quiet import Observer, QuietWindows
from labtui.session.store_process import StoreProcess
from labtui.store.journal import Journal, journal_dir

#: A feed is due at least this often while new rows wait (seconds).
FEED_INTERVAL_S = 2.0
#: The least time from one feed's start to the next (seconds).
FEED_GAP_S = 1.0
#: How long a feed during the run waits for a store another program holds (seconds).
RUN_FEED_WAIT_S = 0.5
#: How long the last feed waits before the run ends and leaves its rows in the journals (seconds).
FINAL_FEED_WAIT_S = 5.0
#: How long a window that opens waits for a feed under way before it pauses the store process (seconds).
HOLD_WAIT_S = 1.0
_DUE_AT_ONCE = (SessionStarted, StepEnded, SessionEnded)
_TICK = object()

Notify = Callable[[str, str], None]


class StoreFeeder:
    """Feeds one run's journals into one store; `run` until the events end, then a last feed."""

    def __init__(self, store: StoreProcess, db_path: Path, journals: Sequence[Journal], notify: Notify,
                 quiet: QuietWindows) -> None:
        self.store = store
        self.db_path = db_path
        self.journals = list(journals)
        self._notify = notify
        self._quiet = quiet
        self._fed_appends = 0
        self._trouble: str | None = None
        self._due = False
        self._feeding: asyncio.Future[list[Path] | None] | None = None
        self._last_start = 0.0
        #: Set when the run ended with rows still in its journals: the one line that says where they are.
        self.left_in_journals: str | None = None
        #: Each feed's wall time in seconds, waiting for a held store included (for benchmarks).
        self.feed_times: list[float] = []
        quiet.observe(Observer(self._hold, self._release))

    def _appended(self) -> int:
        return sum(journal.appended for journal in self.journals)

    async def run(self, events: asyncio.Queue[Event | None]) -> None:
        """Feed as events come (they only say when), until a None; then the last feed."""
        loop = asyncio.get_running_loop()
        self._last_start = loop.time() - FEED_GAP_S  # the first feed may start at once
        while True:
            event: object
            wake = self._last_start + (FEED_GAP_S if self._due else FEED_INTERVAL_S)
            try:  # never a zero timeout: asyncio.wait_for(get(), 0) times out even when items wait
                event = await asyncio.wait_for(events.get(), max(0.05, wake - loop.time()))
            except TimeoutError:
                event = _TICK
            if event is None:
                break
            self._due = self._due or isinstance(event, _DUE_AT_ONCE) or loop.time() - self._last_start >= FEED_INTERVAL_S
            self._start_when_due()
        if self._feeding is not None:
            await self._feeding
        await self._last_feed()

    def _start_when_due(self) -> None:
        """Start a feed when one is due, none is under way, no window is open, the last started FEED_GAP_S ago
        and new rows wait."""
        if not self._due or self._quiet.is_open or (self._feeding is not None and not self._feeding.done()):
            return
        if asyncio.get_running_loop().time() - self._last_start < FEED_GAP_S:
            return
        if self._appended() == self._fed_appends:
            return
        self._due = False
        self._last_start = asyncio.get_running_loop().time()
        self._feeding = asyncio.ensure_future(self._feed(RUN_FEED_WAIT_S))

    async def _hold(self) -> None:
        """A window opens: let a feed under way finish, for HOLD_WAIT_S at most, then pause the store process."""
        feeding = self._feeding
        if feeding is None or feeding.done():
            return
        done, _ = await asyncio.wait({feeding}, timeout=HOLD_WAIT_S)
        if not done:
            self.store.pause()

    def _release(self) -> None:
        """The last window closed: the store process goes on, and a feed that came due meanwhile starts."""
        self.store.resume()
        self._start_when_due()

    async def _feed(self, wait: float) -> list[Path] | None:
        """One feed; a failure of any kind is told once (until a feed works again) and never raised: the
        rows stay in the journals, and the run is never stopped or held by its store.  The journals it
        emptied, or None when it failed."""
        appended = self._appended()
        began = time.perf_counter()
        try:
            _, drained = await self.store.feed([journal.path for journal in self.journals], wait)
        except Exception as exc:  # StoreError (busy, full disk, the process gone), or a bug: the journal keeps the rows
            if self._trouble is None:
                self._notify("warning", f"{exc}: the run goes on; its rows wait in {self._where()} "
                             "and move in once the store is free")
            self._trouble = str(exc)
            return None
        finally:
            self.feed_times.append(time.perf_counter() - began)
        if self._trouble is not None:
            self._notify("info", f"the store is free again: {self.db_path} has caught up")
            self._trouble = None
        self._fed_appends = appended
        return list(drained)

    async def _last_feed(self) -> None:
        """After the run: a last feed, then each drained journal is deleted; the rest stay, and one line says so."""
        drained = await self._feed(FINAL_FEED_WAIT_S)
        for journal in self.journals:
            journal.close(delete=drained is not None and journal.path in drained)
        if drained is None:
            self.left_in_journals = (
                f"the store {self.db_path} could not take this run's rows ({self._trouble}); they are "
                f"safe in {self._where()}: the next labtui command, or `labtui store sync`, moves them in"
            )
            self._notify("warning", self.left_in_journals)

    def _where(self) -> str:
        return str(journal_dir(self.db_path))
