"""Quiet windows: while a measured operation is in flight, labtui keeps still.

A window is open around each operation whose time or readings a session
records (docs/performance.md lists them per experiment kind): a worker's
create-to-exit, a concurrent round, a load tool's run, a creation, a wait for
an idle host.  While one is open, labtui's own work that would compete with it
for the host's CPUs, memory bandwidth or disk waits: the store's feed (held by
its observer), the host sampler, the faces' redraws.  The engine records
nothing inside a window: the journal's intent comes before it opens and the
outcome after it closes.

One `QuietWindows` serves every session of a run: a feed is held while any
session measures.

A wait for an idle host times nothing: it reads the host's CPU every 0.25 s
for up to `sampling.quiet_timeout_s`.  Its window (`window(idle_wait=True)`)
holds the feed and the sampler like any other, but the faces may still redraw
their progress text, at most once a second (`timing` is False while it is the
only kind open), so that a wait of up to ten seconds is seen as one and not
as a hang.  Such a redraw is a line of text, about a millisecond of CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Observer:
    """labtui's own work that keeps still in a window: `hold` before the first window opens (it may wait until
    that work has stopped), `release` after the last one closes."""

    hold: Callable[[], Awaitable[None]]
    release: Callable[[], None]


class QuietWindows:
    """Whether a measured operation is in flight, and the observers that keep still while one is."""

    def __init__(self) -> None:
        self._open = 0
        self._timing = 0  # open windows other than waits for an idle host
        self._observers: list[Observer] = []
        self._opening = asyncio.Lock()
        self._closed = asyncio.Event()
        self._closed.set()
        self._untimed = asyncio.Event()
        self._untimed.set()
        #: Windows opened so far (a figure for tests and benchmarks).
        self.opened = 0

    def observe(self, observer: Observer) -> None:
        """Have observer hold before each first window and release after each last one."""
        self._observers.append(observer)

    @property
    def is_open(self) -> bool:
        """True while a measured operation is in flight (readable from any thread)."""
        return self._open > 0

    @property
    def timing(self) -> bool:
        """True while a window other than a wait for an idle host is open: the faces do not redraw at all."""
        return self._timing > 0

    async def until_closed(self) -> None:
        """Return at once when no window is open, else when the last one closes."""
        await self._closed.wait()

    async def until_untimed(self) -> None:
        """Return at once when no window but waits for an idle host is open, else when the last other one closes."""
        await self._untimed.wait()

    @contextlib.asynccontextmanager
    async def window(self, *, idle_wait: bool = False) -> AsyncIterator[None]:
        """Hold the observers (when this is the first window), run the block, release them (when it is the last).
        `idle_wait`: the block waits for an idle host and times nothing (the faces may redraw their text)."""
        async with self._opening:
            if self._open == 0:
                held: list[Observer] = []
                try:
                    for observer in self._observers:
                        await observer.hold()
                        held.append(observer)
                except BaseException:  # cancelled while an observer stopped: the others go on
                    for observer in held:
                        observer.release()
                    raise
            self._open += 1
            self.opened += 1
            self._closed.clear()
            if not idle_wait:
                self._timing += 1
                self._untimed.clear()
        try:
            yield
        finally:
            if not idle_wait:
                self._timing -= 1
                if self._timing == 0:
                    self._untimed.set()
            self._open -= 1
            if self._open == 0:
                self._closed.set()
                for observer in self._observers:
                    observer.release()
