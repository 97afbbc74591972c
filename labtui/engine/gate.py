"""The step gate: between steps the engine waits here for next, auto or abort."""

from __future__ import annotations

import asyncio


class Aborted(Exception):
    """A person (or a signal) asked the run to stop."""


class StepGate:
    """Auto mode lets every step through; manual mode waits for next() or abort()."""

    def __init__(self, auto: bool = True) -> None:
        self._auto = auto
        self._aborted = False
        self._wake = asyncio.Event()
        self.waiting = False

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

    async def passed(self) -> None:
        """Return when the next step may start; raise Aborted when the run must stop."""
        if self._aborted:
            raise Aborted("aborted")
        if self._auto:
            return
        self.waiting = True
        try:
            await self._wake.wait()
        finally:
            self.waiting = False
            self._wake.clear()
        if self._aborted:
            raise Aborted("aborted")
