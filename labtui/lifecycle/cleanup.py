"""Cleanup: decide which labtui instances to end, end them, record it.

Only instances that carry lab labels are ever considered (backends' list()
finds nothing else).  An orphan is an instance whose session is not running:
no process holds that session's running-lock (see labtui.core.liveness).  Every
cleanup also reconciles the store with the listings (labtui.lifecycle.reconcile): rows
of gone instances are closed, and what it found is logged in the store.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from labtui.backends.base import Backend, Instance
from labtui.core.liveness import session_is_running
from labtui.lifecycle.reconcile import Reconciliation, StoreView, events, read_store, reconcile
from labtui.store import StoreError, StoreWriter
from labtui.store.errors import StoreBusy
from labtui.store.feed import sync_store
from labtui.store.journal import Journal

#: How long a cleanup waits for a store another program holds (seconds): its work is on the backends.
STORE_WAIT_S = 5.0


@dataclass(frozen=True, slots=True)
class Target:
    backend: Backend
    instance: Instance
    reason: str


@dataclass
class CleanupPlan:
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    reconciliation: Reconciliation = field(default_factory=Reconciliation)


@dataclass
class CleanupReport:
    destroyed: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    #: Store rows closed because their instance was gone.
    closed: int = 0


async def plan_cleanup(
    backends: list[Backend], db: Path, *, session: str | None, orphans: bool, dry_run: bool = False
) -> CleanupPlan:
    """List what a cleanup would destroy (a session's instances, orphans, or all) and reconcile the store.

    A dry run only reads the store; otherwise crashed sessions are marked first.
    """
    plan = CleanupPlan()
    crashed = set() if dry_run else _mark_crashed(db, plan)
    view = _read(db, session, plan)
    if dry_run:
        crashed = set(view.crashed)
        plan.notes.extend(f"session {sid} would be marked crashed" for sid in sorted(crashed))
    listings = await asyncio.gather(*(b.list(session) for b in backends), return_exceptions=True)
    plan.reconciliation = _reconcile(view, backends, listings, plan)
    running: dict[str, bool] = {}
    for backend, listing in zip(backends, listings):
        if isinstance(listing, BaseException):
            plan.notes.append(f"{backend.name}: cannot list instances: {listing}")
            continue
        for instance in listing:
            sid = instance.labels.session
            if sid not in running:
                running[sid] = session_is_running(sid)
            reason = _reason(sid, running[sid], session=session, orphans=orphans, crashed=crashed)
            if reason:
                finding = plan.reconciliation.for_instance(backend.name, instance)
                if finding is not None:
                    reason = f"{reason}; {finding.kind}"
                plan.targets.append(Target(backend, instance, reason))
    if session and running.get(session, False):
        plan.notes.append(f"session {session} is still running; its instances are destroyed anyway")
    return plan


def _read(db: Path, session: str | None, plan: CleanupPlan) -> StoreView:
    try:
        return read_store(db, session=session)
    except StoreError as exc:
        plan.notes.append(f"store not reconciled: {exc}")
        return StoreView(readable=False)


def _reconcile(view: StoreView, backends: list[Backend], listings: list, plan: CleanupPlan) -> Reconciliation:
    hosts = {b.host.name for b in backends}
    if len(hosts) != 1:
        return Reconciliation()
    result = reconcile(view, {b.name: listing for b, listing in zip(backends, listings)}, hosts.pop())
    plan.notes.extend(result.notes)
    return result


def _reason(sid: str, is_running: bool, *, session: str | None, orphans: bool, crashed: set[str]) -> str:
    if session is not None:
        return "selected session" if sid == session else ""
    if orphans:
        if is_running:
            return ""
        return "session crashed" if sid in crashed else "session not running"
    return "all labtui instances"


def _mark_crashed(db: Path, plan: CleanupPlan) -> set[str]:
    """Move finished journals in and mark the sessions whose controller died as 'crashed'; their ids."""
    if not db.exists():
        return set()
    try:
        crashed = set(StoreWriter.open(db, wait=STORE_WAIT_S).crashed)
        crashed |= set(sync_store(db, wait=STORE_WAIT_S).crashed)
    except StoreError as exc:
        plan.notes.append(f"store not updated: {exc}")
        return set()
    for sid in sorted(crashed):
        plan.notes.append(f"session {sid} marked crashed")
    return crashed


async def run_cleanup(plan: CleanupPlan, db: Path) -> CleanupReport:
    """Destroy every target (force), then record the destroys in the store."""
    report = CleanupReport()
    done: list[Target] = []

    async def one(target: Target) -> None:
        try:
            await target.backend.destroy(target.instance, force=True)
        except Exception as exc:
            report.failed += 1
            report.errors.append(f"{target.instance.name}: {type(exc).__name__}: {exc}")
        else:
            report.destroyed += 1
            done.append(target)

    await asyncio.gather(*(one(t) for t in plan.targets))
    _record(db, plan.reconciliation, done, report)
    return report


def _record(db: Path, reconciliation: Reconciliation, done: list[Target], report: CleanupReport) -> None:
    """Record the destroys and closed rows in a journal of the cleanup's own, then move it into the store;
    when another program holds the store, the journal keeps them until the next labtui command."""
    closing = reconciliation.to_close()
    if not db.exists() or not (done or closing):
        return
    try:
        StoreWriter.open(db, wait=STORE_WAIT_S)  # a file that is not a labtui store gets no journal beside it
    except StoreBusy:
        pass  # held by another program: the journal keeps the rows until it lets go
    except StoreError as exc:
        report.errors.append(f"destroys not recorded in the store: {exc}")
        return
    try:
        journal = Journal.create(db, f"cleanup-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}")
        try:
            journal.append_all(list(events(reconciliation, [(t.instance, t.backend.name, t.reason) for t in done])))
        finally:
            journal.close()
        report.closed = len(closing)
        sync_store(db, wait=STORE_WAIT_S)
    except StoreError as exc:
        report.errors.append(f"destroys not yet in the store: {exc} (the next labtui command moves them in)")
