"""Waiting in a Pilot-driven console test: poll a condition between pauses, up to a deadline."""
from __future__ import annotations

import time
from collections.abc import Callable

from textual.css.query import NoMatches
from textual.pilot import Pilot


async def wait_for(pilot: Pilot, condition: Callable[[], object], timeout: float = 60.0,
                   what: str = "condition") -> None:
    """Wait until `condition` holds, or fail naming `what`.

    A widget that is mounted but not composed yet (its children come a pause later) raises NoMatches
    when queried: that counts as not there yet, so a widget that never appears still times out."""

    def holds() -> bool:
        try:
            return bool(condition())
        except NoMatches:
            return False

    deadline = time.monotonic() + timeout
    while not holds():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)
