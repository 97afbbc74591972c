"""StoreFeeder: moves a run's journals into the store, beside the engine, never in its way.

It feeds at each step's end, at each session's start and end, and every
FEED_INTERVAL_S while new rows wait.  A store held by another program (a
notebook, the DuckDB CLI, Harlequin) only delays the feed: each attempt waits
RUN_FEED_WAIT_S at most in a worker thread, the run goes on at full speed, and
the store catches up once it is free.  At the run's end one last feed waits
FINAL_FEED_WAIT_S; if the store is still held, the journals stay for the next
labtui command (or ``labtui store sync``) to move in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from labtui.core.events import Event, SessionEnded, SessionStarted, StepEnded
from labtui.store import StoreWriter
from labtui.store.feed import Fed, feed
from labtui.store.journal import Journal, journal_dir

#: A feed is due at least this often while new rows wait (seconds).
FEED_INTERVAL_S = 2.0
#: How long a feed during the run waits for a store another program holds (seconds).
RUN_FEED_WAIT_S = 0.5
#: How long the last feed waits before the run ends and leaves its rows in the journals (seconds).
FINAL_FEED_WAIT_S = 5.0
_DUE_AT_ONCE = (SessionStarted, StepEnded, SessionEnded)
_TICK = object()

Notify = Callable[[str, str], None]


class StoreFeeder:
    """Feeds one run's journals into one store; `run` until the events end, then a last feed."""

    def __init__(self, writer: StoreWriter, journals: Sequence[Journal], notify: Notify) -> None:
        self.writer = writer
        self.journals = list(journals)
        self._notify = notify
        self._fed_appends = 0
        self._trouble: str | None = None
        #: Set when the run ended with rows still in its journals: the one line that says where they are.
        self.left_in_journals: str | None = None

    def _appended(self) -> int:
        return sum(journal.appended for journal in self.journals)

    async def run(self, events: asyncio.Queue[Event | None]) -> None:
        """Feed as events come (they only say when), until a None; then the last feed."""
        loop = asyncio.get_running_loop()
        feeding: asyncio.Future[Fed | None] | None = None
        last = loop.time()
        due = False
        while True:
            event: object
            try:  # never a zero timeout: asyncio.wait_for(get(), 0) times out even when items wait
                event = await asyncio.wait_for(events.get(), max(0.05, last + FEED_INTERVAL_S - loop.time()))
            except TimeoutError:
                event = _TICK
            if event is None:
                break
            due = due or isinstance(event, _DUE_AT_ONCE) or loop.time() - last >= FEED_INTERVAL_S
            if due and (feeding is None or feeding.done()) and self._appended() != self._fed_appends:
                feeding = asyncio.ensure_future(asyncio.to_thread(self._feed, RUN_FEED_WAIT_S))
                last, due = loop.time(), False
        if feeding is not None:
            await feeding
        await asyncio.to_thread(self._last_feed)

    def _feed(self, wait: float) -> Fed | None:
        """One feed; a failure of any kind is told once (until a feed works again) and never raised: the
        rows stay in the journals, and the run is never stopped or held by its store."""
        appended = self._appended()
        try:
            fed = feed(self.writer, [journal.path for journal in self.journals], wait=wait)
        except Exception as exc:  # StoreError (busy, full disk), or a bug: the journal keeps the rows either way
            if self._trouble is None:
                self._notify("warning", f"{exc}: the run goes on; its rows wait in {self._where()} "
                             "and move in once the store is free")
            self._trouble = str(exc)
            return None
        if self._trouble is not None:
            self._notify("info", f"the store is free again: {self.writer.path} has caught up")
            self._trouble = None
        self._fed_appends = appended
        return fed

    def _last_feed(self) -> None:
        """After the run: a last feed, then each drained journal is deleted; the rest stay, and one line says so."""
        fed = self._feed(FINAL_FEED_WAIT_S)
        drained = set(fed.drained) if fed is not None else set()
        for journal in self.journals:
            journal.close(delete=journal.path in drained)
        if fed is None:
            self.left_in_journals = (
                f"the store {self.writer.path} could not take this run's rows ({self._trouble}); they are "
                f"safe in {self._where()}: the next labtui command, or `labtui store sync`, moves them in"
            )
            self._notify("warning", self.left_in_journals)

    def _where(self) -> str:
        return str(journal_dir(self.writer.path))

