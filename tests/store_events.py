"""Events of a small recorded session, for the tests that write a store or a journal by hand."""

from __future__ import annotations

import os
from pathlib import Path

from labtui.core.events import (
    HostFacts,
    InstanceCreating,
    InstanceDestroyed,
    InstanceReady,
    Log,
    ObserverSample,
    ResourceSample,
    Result,
    SessionEnded,
    SessionStarted,
    StepEnded,
    StepStarted,
)
from labtui.store.access import connect

T0 = 1_700_000_000.0


def started(session_id: str = "s1", pid: int | None = None, ts: float = T0) -> SessionStarted:
    return SessionStarted(
        session_id=session_id, suite="boot", kind="scaling", backend="process", host="local",
        config={"steps": [0, 4]}, pid=os.getpid() if pid is None else pid, ts=ts,
    )


def result(value: float, background: int, better: str = "lower", step: int = 1,
           session_id: str = "s1", metric: str = "boot", ts: float = T0 + 1) -> Result:
    return Result(
        session_id=session_id, repetition=1, step=step, background=background, host="local",
        instance_id=f"i{background}", benchmark="bench", metric=metric, value=value, unit="s",
        better=better, ts=ts,
    )


def observed(at: float, cpu_s: float, rss_mib: int = 80, helper_cpu_s: float = 0.0, helper_rss_mib: int = 0,
             session_id: str = "s1") -> ObserverSample:
    """labtui's own usage `at` seconds into the session."""
    return ObserverSample(session_id, rss_mib << 20, cpu_s, helper_rss_mib << 20, helper_cpu_s, ts=T0 + at)


def full_session() -> list[object]:
    return [
        started(),
        HostFacts("s1", "local", "Linux", "6.1", "x86_64", "cpu", 8, 16 << 30, "process", "1",
                  "namespaces", ts=T0),
        StepStarted("s1", repetition=1, step=1, steps=2, background=0, ts=T0 + 1),
        InstanceCreating("s1", "i1", "local", "process", "probe", "probe-1", ts=T0 + 2),
        InstanceReady("s1", "i1", created_at=T0 + 2, ready_at=T0 + 3.5, boot_s=1.5,
                      state="running", ts=T0 + 3.5),
        result(1.5, 0, ts=T0 + 4),
        ResourceSample("local", 0.9, 0.8, None, 1 << 30, 0.5, ts=T0 + 4, session_id="s1",
                       instances=1),
        Log("s1", "info", "step", "step 1 done", ts=T0 + 5),
        InstanceDestroyed("s1", "i1", ts=T0 + 6),
        StepEnded("s1", repetition=1, step=1, background=0, ok=True, ts=T0 + 6),
        SessionEnded("s1", "completed", "all good", ts=T0 + 7),
    ]


def in_file(db: Path, sql: str) -> tuple:
    """The first row of `sql` on the store file itself, without what the journals hold past it
    (labtui's own readers merge those in: labtui.store.overlay)."""
    con = connect(db, read_only=True)  # retried while a feed writes it, as labtui's readers are
    try:
        return tuple(con.execute(sql).fetchall()[0])
    finally:
        con.close()
