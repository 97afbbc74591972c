"""Cleanup: decide which labtui instances to end, end them, record it.

Only instances that carry lab labels are ever considered (backends' list()
finds nothing else).  An orphan is an instance whose session is not running:
no process holds that session's running-lock (see labtui.liveness).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path

from labtui.backends import Backend, Instance
from labtui.events import InstanceDestroyed, Log
from labtui.liveness import session_is_running
from labtui.store import StoreError, StoreWriter


@dataclass(frozen=True, slots=True)
class Target:
    backend: Backend
    instance: Instance
    reason: str


@dataclass
class CleanupPlan:
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class CleanupReport:
    destroyed: int = 0
    failed: int = 0
    errors: list[str] = field(default_factory=list)


async def plan_cleanup(backends: list[Backend], db: Path, *, session: str | None, orphans: bool) -> CleanupPlan:
    """List what a cleanup would destroy: a session's instances, orphans, or all."""
    plan = CleanupPlan()
    crashed = _mark_crashed(db, plan)
    listings = await asyncio.gather(*(b.list(session) for b in backends), return_exceptions=True)
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
                plan.targets.append(Target(backend, instance, reason))
    if session and running.get(session, False):
        plan.notes.append(f"session {session} is still running; its instances are destroyed anyway")
    return plan


def _reason(sid: str, is_running: bool, *, session: str | None, orphans: bool, crashed: set[str]) -> str:
    if session is not None:
        return "selected session" if sid == session else ""
    if orphans:
        if is_running:
            return ""
        return "session crashed" if sid in crashed else "session not running"
    return "all labtui instances"


def _mark_crashed(db: Path, plan: CleanupPlan) -> set[str]:
    if not db.exists():
        return set()
    try:
        writer = StoreWriter.open(db)
    except StoreError as exc:
        plan.notes.append(f"store not updated: {exc}")
        return set()
    crashed = set(writer.crashed)
    writer.close()
    for sid in sorted(crashed):
        plan.notes.append(f"session {sid} marked crashed")
    return crashed


async def run_cleanup(plan: CleanupPlan, db: Path, *, record: bool = True) -> CleanupReport:
    """Destroy every target (force), then record the destroys in the store unless record is False."""
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
    if record:
        _record(db, done, report)
    return report


def _record(db: Path, done: list[Target], report: CleanupReport) -> None:
    if not db.exists() or not done:
        return
    try:
        writer = StoreWriter.open(db)
    except StoreError as exc:
        report.errors.append(f"destroys not recorded in the store: {exc}")
        return
    for target in done:
        sid = target.instance.labels.session
        writer.add(InstanceDestroyed(sid, target.instance.labels.instance, state="cleaned"))
        writer.add(Log(sid, "info", "cleanup", f"destroyed {target.instance.name} ({target.reason})"))
    writer.flush()
    writer.close()
