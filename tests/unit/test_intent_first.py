"""A create's intent is in the session's journal before the backend is asked to create anything.

A crash inside a create leaves an instance that only its intent row can lead a cleanup or a reconcile
to (labtui.lifecycle.reconcile); journalled after the create, that instance would be nobody's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from labtui.backends.base import Backend, Instance, InstanceSpec, load_backend_class
from labtui.core.events import InstanceCreating, InstanceDestroyed, InstanceReady
from labtui.hosts.base import Host
from labtui.session import service
from labtui.session.request import RunRequest
from labtui.session.service import LabRun
from labtui.store.journal import journal_dir, read_events
from labtui.suites import load_suite

#: A small boot-scaling run: two background instances at once in each of two steps, a warm-up and a worker boot.
SMALL = ["scale.steps=2", "scale.per_step=2", "suite.repetitions=1", "worker.runs=1", "worker.warmup=1",
         "sampling.quiet_timeout_s=0"]


def journalled_intents(store: Path, session: str) -> set[str] | None:
    """The instances the session's journal holds an intent to create for, and no outcome yet (None: the session
    has no journal, as the backend's own isolation probe has not)."""
    journal = journal_dir(store) / f"{session}.sqlite"
    if not journal.exists():
        return None
    pending: set[str] = set()
    for _, event in read_events(journal, 0, 1_000_000):
        if isinstance(event, InstanceCreating):
            pending.add(event.instance_id)
        elif isinstance(event, (InstanceReady, InstanceDestroyed)):
            pending.discard(event.instance_id)
    return pending


class JournalChecking(load_backend_class("process")):  # type: ignore[misc, valid-type]
    """The real process backend, which reads the session's journal when create_many is entered and keeps,
    for each batch, its session, the instance ids asked for and those whose intent the journal already held."""

    #: The run's store, and every batch seen (both set by the test).
    store: Path = Path()
    batches: list[tuple[str, set[str], set[str] | None]] = []

    async def create_many(self, specs: Sequence[InstanceSpec]) -> list[Instance]:
        session = specs[0].labels.session
        self.batches.append((session, {s.labels.instance for s in specs}, journalled_intents(self.store, session)))
        return await super().create_many(specs)


async def test_every_create_finds_its_intents_and_only_them_in_the_journal_already(
        runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run through the session service: at each create_many, the journal holds an intent for exactly the
    instances of that batch (none is missing, and no earlier intent is left without its outcome)."""
    db = tmp_path / "lab.duckdb"
    monkeypatch.setattr(JournalChecking, "store", db)
    monkeypatch.setattr(JournalChecking, "batches", [])

    def open_checking(name: str, host: Host) -> Backend:
        assert name == "process"
        return JournalChecking(host)

    monkeypatch.setattr(service, "open_backend", open_checking)
    lab = LabRun(RunRequest(load_suite("boot-scaling", SMALL), db, backend="process"))
    (outcome,) = await lab.run()
    assert outcome.status == "completed", outcome.message
    batches = [(asked, journalled) for session, asked, journalled in JournalChecking.batches
               if session == outcome.session_id]
    assert len(batches) >= 4 and any(len(asked) == 2 for asked, _ in batches)  # a batch of background instances
    for asked, journalled in batches:
        assert journalled == asked, f"asked to create {sorted(asked)}; journalled beforehand: {journalled}"
