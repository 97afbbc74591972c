"""Reconcile the store's record of instances with what the backends list.

The engine records intent before every create and destroy (an instance row in
state ``creating`` or ``destroying``) and the outcome after.  A crash between
the two, a store that stopped writing, or an instance made outside labtui
leaves the record and the backends disagreeing.  Four findings:

- ``unrecorded``: a lab-labelled instance alive on a backend that the store
  never recorded (its session, or its instance id, is unknown to the store);
- ``create-unfinished``: a row still ``creating``;
- ``destroy-unfinished``: a row still ``destroying``;
- ``vanished``: a row recorded alive whose instance is gone.

Only sessions that are not running, and were controlled from this machine,
are considered; rows of a backend or host that was not listed are left alone.
A row whose instance is gone is closed with a ``reconciled-*`` state; an
instance still alive is for cleanup to destroy (labtui.lifecycle.cleanup).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from labtui.backends.base import Backend, BackendError, Instance
from labtui.core.events import Event, InstanceCreating, InstanceDestroyed, Log
from labtui.core.liveness import session_is_running
from labtui.hosts.base import HostError
from labtui.store.errors import StoreError
from labtui.store.journal import Pending, pending

UNRECORDED = "unrecorded"
CREATE_UNFINISHED = "create-unfinished"
DESTROY_UNFINISHED = "destroy-unfinished"
VANISHED = "vanished"
#: The state a row gets when its instance is gone, per finding.
CLOSED_STATE = {
    CREATE_UNFINISHED: "reconciled-create",
    DESTROY_UNFINISHED: "reconciled-destroy",
    VANISHED: "reconciled-gone",
}
#: Row states after which an instance is not expected to exist.
_ENDED_STATES = frozenset({"exited"})
#: Longest a run waits for its backend's listing before reconciling at start.
START_LIST_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class Row:
    """An instance row the store holds open (not destroyed, not exited)."""

    session_id: str
    instance_id: str
    host: str
    backend: str
    state: str


@dataclass(frozen=True, slots=True)
class StoreView:
    """What reconciling needs from the store, read in one go."""

    #: status of every session, keyed by id
    statuses: Mapping[str, str] = field(default_factory=dict)
    #: sessions controlled from this machine
    local: frozenset[str] = frozenset()
    #: 'running' sessions whose controller is gone (marked 'crashed' when the store next opens for writing)
    crashed: frozenset[str] = frozenset()
    #: every (session, instance) pair recorded
    recorded: frozenset[tuple[str, str]] = frozenset()
    rows: tuple[Row, ...] = ()
    #: False when the store exists but could not be read: then nothing is reconciled
    readable: bool = True

    def ended(self, session: str) -> bool:
        """True for a session of this store that is over (ended, or crashed) and was controlled from here."""
        status = self.statuses.get(session)
        return session in self.local and status is not None and (status != "running" or session in self.crashed)


def read_store(db: Path, *, session: str | None = None, wait: float | None = None) -> StoreView:
    """Read the store at db read-only, and what its journals hold that it may not have yet (empty view
    when there is no store); StoreError when the store cannot be read."""
    if not db.exists():
        return StoreView()
    return _with_journals(_read_store_file(db, session, wait), pending(db), session)


def _with_journals(view: StoreView, journals: Pending, session: str | None) -> StoreView:
    """The store's view, brought up to date by its journals: a crashed session whose rows never reached
    the store, or a store another program holds, still shows every session and open instance row."""
    if not journals.recorded and not journals.statuses and not journals.closed:
        return view
    def wanted(sid: str) -> bool:
        return session is None or sid == session
    statuses = {**view.statuses, **{sid: s for sid, s in journals.statuses.items() if wanted(sid)}}
    told = journals.recorded | journals.closed  # the journals' word on these rows is newer than the store's
    rows = [row for row in view.rows if (row.session_id, row.instance_id) not in told]
    rows += [Row(sid, iid, host, backend, state) for (sid, iid), (host, backend, state) in sorted(journals.open_rows.items())
             if wanted(sid)]
    return replace(
        view,
        statuses=statuses,
        local=view.local | {sid for sid in journals.statuses if wanted(sid)},
        crashed=view.crashed | {sid for sid in journals.crashed if statuses.get(sid) == "running"},
        recorded=view.recorded | {pair for pair in journals.recorded if wanted(pair[0])},
        rows=tuple(rows),
    )


def _read_store_file(db: Path, session: str | None, wait: float | None) -> StoreView:
    """The store's own rows (read-only).  DuckDB loads here, not with this module: a run reads the store
    from its feed process (labtui.session.store_process)."""
    from labtui.store import connect_readonly, controller_name, crashed_sessions

    con = connect_readonly(db, wait=wait)
    try:
        sessions = con.execute("SELECT session_id, status, controller FROM sessions").fetchall()
        where, params = ("WHERE session_id = ?", [session]) if session else ("", [])
        instances = con.execute(
            "SELECT session_id, instance_id, coalesce(host, ''), coalesce(backend, ''), coalesce(state, ''), "
            f"destroyed_at IS NULL FROM instances {where}",
            params,
        ).fetchall()
        crashed = crashed_sessions(con)
    except Exception as exc:  # duckdb.Error, or a store without the tables
        raise StoreError(f"cannot read the instances recorded in {db}: {exc}") from exc
    finally:
        con.close()
    here = controller_name()
    return StoreView(
        statuses={sid: status for sid, status, _ in sessions},
        local=frozenset(sid for sid, _, controller in sessions if controller == here),
        crashed=frozenset(crashed),
        recorded=frozenset((sid, iid) for sid, iid, *_ in instances),
        rows=tuple(
            Row(sid, iid, host, backend, state)
            for sid, iid, host, backend, state, is_open in instances
            if is_open and state not in _ENDED_STATES
        ),
    )


@dataclass(frozen=True, slots=True)
class Finding:
    """One disagreement between the store and a backend."""

    kind: str
    session_id: str
    instance_id: str
    backend: str
    host: str
    #: The instance as the backend lists it; None when it is gone.
    instance: Instance | None
    detail: str
    #: False for an instance of a session this store has no record of.
    session_known: bool = True

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.backend, self.session_id, self.instance_id)

    @property
    def closed_state(self) -> str | None:
        """The state the row gets because the instance is gone (None: nothing to close)."""
        return None if self.instance is not None else CLOSED_STATE.get(self.kind)


@dataclass
class Reconciliation:
    findings: list[Finding] = field(default_factory=list)
    #: Rows and backends that could not be checked, and why.
    notes: list[str] = field(default_factory=list)
    #: Open rows compared with the listings.
    checked: int = 0

    def for_instance(self, backend: str, instance: Instance) -> Finding | None:
        """The finding about a listed instance, if any."""
        key = (backend, instance.labels.session, instance.labels.instance)
        return next((f for f in self.findings if f.key == key and f.instance is not None), None)

    def to_close(self) -> list[Finding]:
        """Findings whose row is closed because the instance is gone."""
        return [f for f in self.findings if f.closed_state]


def reconcile(
    view: StoreView,
    listings: Mapping[str, Sequence[Instance] | BaseException],
    host: str,
    *,
    running: Callable[[str], bool] = session_is_running,
) -> Reconciliation:
    """Compare the store with the listings of backends (name -> instances, or the error listing raised) on host."""
    result = Reconciliation()
    if not view.readable:
        return result
    alive: dict[tuple[str, str, str], Instance] = {}
    for backend, listing in listings.items():
        if isinstance(listing, BaseException):
            continue  # the caller reports the listing error; rows of that backend are skipped below
        for instance in listing:
            alive[(backend, instance.labels.session, instance.labels.instance)] = instance
    is_running = _memo(running)
    for (backend, sid, iid), instance in sorted(alive.items()):
        if (sid, iid) in view.recorded or is_running(sid) or _active(view, sid):
            continue
        known = sid in view.statuses
        detail = "not recorded in its session" if known else f"session {sid} is not in this store"
        result.findings.append(Finding(UNRECORDED, sid, iid, backend, host, instance, detail, known))
    skipped: dict[str, int] = {}
    for row in view.rows:
        if not view.ended(row.session_id) or is_running(row.session_id):
            continue
        if row.host != host or row.backend not in listings or isinstance(listings[row.backend], BaseException):
            label = f"{row.backend or '?'} on {row.host or '?'}"
            skipped[label] = skipped.get(label, 0) + 1
            continue
        result.checked += 1
        finding = _row_finding(row, alive.get((row.backend, row.session_id, row.instance_id)), host)
        if finding is not None:
            result.findings.append(finding)
    for label, count in sorted(skipped.items()):
        result.notes.append(f"{count} open instance row(s) of {label} not checked: that backend was not listed here")
    return result


def _active(view: StoreView, session: str) -> bool:
    """A session this store says is running (not crashed), or that another machine controls."""
    return session in view.statuses and not view.ended(session)


def _row_finding(row: Row, instance: Instance | None, host: str) -> Finding | None:
    where = (row.session_id, row.instance_id, row.backend, host, instance)
    if row.state == "creating":
        outcome = "still exists" if instance else "not found"
        return Finding(CREATE_UNFINISHED, *where, f"create recorded without an outcome; {outcome}")
    if row.state == "destroying":
        outcome = "still exists" if instance else "gone"
        return Finding(DESTROY_UNFINISHED, *where, f"destroy recorded without an outcome; {outcome}")
    if instance is None:
        return Finding(VANISHED, *where, f"recorded {row.state or 'alive'}, session over, instance gone")
    return None


def _memo(running: Callable[[str], bool]) -> Callable[[str], bool]:
    seen: dict[str, bool] = {}

    def check(session: str) -> bool:
        if session not in seen:
            seen[session] = running(session)
        return seen[session]

    return check


def events(result: Reconciliation, destroyed: Iterable[tuple[Instance, str, str]] = ()) -> list[Event]:
    """The store updates of a reconciliation: close rows of gone instances, record destroys, log each.

    destroyed holds (instance, backend name, reason) for every instance a cleanup
    destroyed: each becomes a 'cleaned' row, except that an instance of a session
    this store does not know only gets a log line (its session lives in another store).
    """
    out: list[Event] = []
    for f in result.to_close():
        out.append(InstanceDestroyed(f.session_id, f.instance_id, state=f.closed_state or ""))
        out.append(Log(f.session_id, "warning", "reconcile",
                       f"{f.backend} instance {f.instance_id}: {f.detail}; row closed as {f.closed_state}"))
    for instance, backend, reason in destroyed:
        sid, iid = instance.labels.session, instance.labels.instance
        finding = result.for_instance(backend, instance)
        message = f"destroyed {instance.name} ({reason})"
        if finding is not None and finding.kind == UNRECORDED:
            if not finding.session_known:
                out.append(Log("", "warning", "reconcile", f"{message} on {backend}/{finding.host}"))
                continue
            out.append(InstanceCreating(sid, iid, instance.host, backend, instance.labels.role, instance.name,
                                        ts=instance.created_at or time.time()))
        out.append(InstanceDestroyed(sid, iid, state="cleaned"))
        out.append(Log(sid, "info", "cleanup", message))
    return out


async def reconcile_before_run(backend: Backend, db: Path, view: StoreView | None) -> tuple[list[Event], str]:
    """Reconcile one backend against a store view read before the run opened the store.

    Returns the store updates and a one-line summary ('' when all agrees).
    Nothing is destroyed; a backend that cannot list in time is skipped quietly
    (the run reports its own failure).
    """
    if view is None or not (view.rows or view.statuses):
        return [], ""
    try:
        listing = await asyncio.wait_for(backend.list(), START_LIST_TIMEOUT_S)
    except (BackendError, HostError, TimeoutError, OSError):
        return [], ""
    running = _memo(session_is_running)
    result = reconcile(view, {backend.name: listing}, backend.host.name, running=running)
    closed = result.to_close()
    left = [i for i in listing if not running(i.labels.session) and not _active(view, i.labels.session)]
    parts = []
    if closed:
        parts.append(f"closed {len(closed)} instance row(s) of ended sessions whose instance is gone")
    if left:
        where = "" if backend.host.name == "local" else f" --host {backend.host.name}"
        parts.append(f"{len(left)} instance(s) of sessions no longer running are still on {backend.name}: "
                     f"`labtui cleanup --orphans --backend {backend.name}{where} --db {db}` ends them")
    return events(result), ("reconcile: " + "; ".join(parts)) if parts else ""


#: How long a run's start waits to read a store another program holds before it reconciles nothing (seconds).
START_READ_WAIT_S = 1.0


def read_store_quietly(db: Path) -> StoreView | None:
    """read_store, or None when the store cannot be read soon (a run then reconciles nothing)."""
    try:
        return read_store(db, wait=START_READ_WAIT_S)
    except StoreError:
        return None
