"""A tiny fan-out of engine events to subscribers (store writer, CLI, console)."""

from __future__ import annotations

import asyncio

from labtui.core.events import Checkpoint, Event


class EventBus:
    """Every subscriber gets its own unbounded queue; publishing never blocks.

    One subscriber may be *durable* (the store writer): it answers
    checkpoints, so the engine can wait until an intent is committed.
    """

    def __init__(self) -> None:
        self._queues: list[asyncio.Queue[Event | None]] = []
        self._durable: asyncio.Queue[Event | None] | None = None

    def subscribe(self, *, durable: bool = False) -> asyncio.Queue[Event | None]:
        """A new queue of every event from now on; durable ones also get checkpoints."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._queues.append(queue)
        if durable:
            if self._durable is not None:
                raise ValueError("an event bus has at most one durable subscriber")
            self._durable = queue
        return queue

    async def checkpoint(self) -> None:
        """Return once the durable subscriber committed every event published so far."""
        if self._durable is None:
            return
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._durable.put_nowait(Checkpoint(done))  # type: ignore[arg-type]
        await done

    def publish(self, event: Event) -> None:
        for queue in self._queues:
            queue.put_nowait(event)

    def close(self) -> None:
        """Tell every subscriber that no more events will come (a None)."""
        for queue in self._queues:
            queue.put_nowait(None)
