"""A tiny fan-out of engine events to subscribers (the CLI, the console, the store feeder)."""

from __future__ import annotations

import asyncio

from labtui.core.events import Event


class EventBus:
    """Every subscriber gets its own unbounded queue; publishing never blocks and never waits.

    What must survive a crash is recorded in the session's journal before it is
    published (RunContext.record); the bus only tells whoever is watching.
    """

    def __init__(self) -> None:
        self._queues: list[asyncio.Queue[Event | None]] = []

    def subscribe(self) -> asyncio.Queue[Event | None]:
        """A new queue of every event from now on."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._queues.append(queue)
        return queue

    def publish(self, event: Event) -> None:
        for queue in self._queues:
            queue.put_nowait(event)

    def close(self) -> None:
        """Tell every subscriber that no more events will come (a None)."""
        for queue in self._queues:
            queue.put_nowait(None)
