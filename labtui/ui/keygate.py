"""One gate for every key: keys wait, in order, while the console changes what would serve them.

A key reaches a binding of whatever has the focus, or of the app, which may
act on a view.  A view or a screen that is mounted but not yet composed and
laid out cannot serve it: its widgets are not there yet (the crash of issue 42
was `4` reaching the SQL view between its mount and its compose).  So the app
closes the gate while it mounts a view or pushes a screen and opens it a
refresh later, once the new widgets are composed and drawn.  Keys that arrive
meanwhile are held and then replayed in the order they came, so typing ahead
loses nothing (`:sessions` Enter typed at launch still opens the Sessions view).

The gate knows nothing of views or bindings: whatever mounts a view or pushes a
screen through LabApp is covered, present and future.  A closing that is never
opened (a mount that failed) lapses after LAPSE_S, so no key is held for ever.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Hashable

from textual import events
from textual.dom import DOMNode
from textual.widget import Widget

#: A closing that was never opened stops holding keys after this long (seconds).
LAPSE_S = 5.0


class KeyGate:
    """Closed while any token is out; holds keys until every token is back, then hands them out in order."""

    def __init__(self) -> None:
        self._closed_by: dict[Hashable, float] = {}
        self._held: deque[events.Key] = deque()

    def close(self, token: Hashable) -> None:
        """Hold keys until `open(token)` (or LAPSE_S)."""
        self._closed_by[token] = time.monotonic()

    def open(self, token: Hashable) -> None:
        """`token` is served: the gate opens once no other token is out."""
        self._closed_by.pop(token, None)

    @property
    def closed(self) -> bool:
        """Whether a token is out (a lapsed one is dropped here)."""
        now = time.monotonic()
        for token, since in list(self._closed_by.items()):
            if now - since > LAPSE_S:
                del self._closed_by[token]
        return bool(self._closed_by)

    def hold(self, key: events.Key) -> bool:
        """Keep `key` for later when the gate is closed or keys are already waiting (their order is kept)."""
        if self._held or self.closed:
            self._held.append(key)
            return True
        return False

    @property
    def held(self) -> int:
        """Keys waiting."""
        return len(self._held)

    def next_key(self) -> events.Key | None:
        """The oldest held key once the gate is open, else None."""
        if self._held and not self.closed:
            return self._held.popleft()
        return None


async def until_settled(root: Widget, rounds: int = 20) -> None:
    """Until every widget under `root` has handled what was queued for it, its children's compose and
    mount included (new children are waited for too, until their number stops growing)."""
    seen = -1
    for _ in range(rounds):
        nodes = list(root.walk_children(with_self=True))
        if len(nodes) == seen:
            return
        seen = len(nodes)
        await asyncio.gather(*(_handled(node) for node in nodes))


def _handled(node: DOMNode) -> asyncio.Future[None]:
    """Done once `node` has handled the messages queued before this call (at once if it takes none)."""
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def mark() -> None:
        if not done.done():
            done.set_result(None)

    if not node.call_later(mark):
        mark()
    return done
