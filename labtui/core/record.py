"""What the engine records into: a session's journal, behind a two-call interface."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from labtui.core.events import Event


class Recorder(Protocol):
    """Where a session's events are kept before any store sees them (labtui.store.journal.Journal)."""

    def append(self, event: Event) -> None:
        """Record one event; it survives a crash of this process once this returns."""

    def append_all(self, events: Sequence[Event]) -> None:
        """Record several events at once (a batch's intents), all or none."""


class Unrecorded:
    """A recorder that keeps nothing: for an engine driven without a store (tests, benchmarks)."""

    def append(self, event: Event) -> None:
        """Keep nothing."""

    def append_all(self, events: Sequence[Event]) -> None:
        """Keep nothing."""
