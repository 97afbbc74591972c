"""The step gate: between steps the engine waits here for next, auto or abort."""

from __future__ import annotations

import asyncio
import time


class Aborted(Exception):
    """A person (or a signal) asked the run to stop."""


class StepGate:
    """Auto mode lets every step through; manual mode waits for next() or abort()."""

    def __init__(self, auto: bool = True) -> None:
        self._auto = auto
        self._aborted = False
        self._wake = asyncio.Event()
        self._waiting = False
        self._waiting_changed = asyncio.Event()

    @property
    def waiting(self) -> bool:
        """True while a step has ended and the next waits for next(), auto or abort."""
        return self._waiting

    def _set_waiting(self, waiting: bool) -> None:
        self._waiting = waiting
        self._waiting_changed.set()

    async def until_waiting(self, waiting: bool) -> None:
        """Return once `waiting` is what is asked (at once if it is already), on the gate's own loop."""
        while self._waiting != waiting:
            self._waiting_changed.clear()
            await self._waiting_changed.wait()

    @property
    def auto(self) -> bool:
        return self._auto

    def set_auto(self, auto: bool) -> None:
        """Switch between auto (run on) and manual (pause after each step)."""
        self._auto = auto
        if auto:
            self._wake.set()

    def next(self) -> None:
        """Let exactly one waiting step through."""
        self._wake.set()

    def abort(self) -> None:
        """Stop the run at the next gate (or now, if it is waiting)."""
        self._aborted = True
        self._wake.set()

    @property
    def aborted(self) -> bool:
        return self._aborted

    async def passed(self) -> float:
        """Return when the next step may start, with the seconds the gate held the caller (what a person took to
        press next; 0 in auto mode); raise Aborted when the run must stop."""
        if self._aborted:
            raise Aborted("aborted")
        if self._auto:
            return 0.0
        self._set_waiting(True)
        since = time.monotonic()
        try:
            await self._wake.wait()
        finally:
            self._set_waiting(False)
            self._wake.clear()
        if self._aborted:
            raise Aborted("aborted")
        return time.monotonic() - since
