"""Which instances a cleanup selects, and what it records: labtui.lifecycle.cleanup against an in-memory backend.

The backend here lists whatever it holds and, unless asked to, ignores the
session it is given: the selection of `cleanup --session` is cleanup's own,
not something it leaves to each backend's listing.  Running-locks live in a
lock dir of the test's own, so nothing here sees or touches other work on the
machine.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Sequence
from pathlib import Path

import duckdb
import pytest

from labtui.backends.base import Availability, Backend, BackendError, Instance, InstanceSpec, Labels
from labtui.core.events import InstanceCreating, InstanceReady, SessionStarted
from labtui.core.liveness import session_lock
from labtui.hosts.local import LocalHost
from labtui.lifecycle.cleanup import CleanupPlan, Target, plan_cleanup, run_cleanup
from labtui.store import record_events


class Shelf(Backend):
    """A backend whose instances are entries in a list; destroy removes them (or fails for names in `stuck`)."""

    def __init__(self, instances: Sequence[Instance] = (), *, name: str = "shelf", host: str = "local",
                 honours_session: bool = False, fails: BaseException | None = None) -> None:
        super().__init__(LocalHost(host))
        self.name = name
        self.instances = list(instances)
        self.honours_session = honours_session
        self.fails = fails
        self.listed: list[str | None] = []
        self.destroyed: list[tuple[str, bool]] = []
        self.stuck: set[str] = set()

    async def check(self) -> Availability:
        return Availability(True, "")

    async def create(self, spec: InstanceSpec) -> Instance:
        raise NotImplementedError

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        if instance.name in self.stuck:
            raise BackendError(f"{instance.name} will not go")
        self.destroyed.append((instance.name, force))
        self.instances.remove(instance)

    async def list(self, session: str | None = None) -> list[Instance]:
        self.listed.append(session)
        if self.fails is not None:
            raise self.fails
        if self.honours_session and session is not None:
            return [i for i in self.instances if i.labels.session == session]
        return list(self.instances)

    async def memory_bytes(self, instance: Instance) -> int | None:
        return None


def inst(sid: str, iid: str, backend: str = "shelf") -> Instance:
    return Instance(Labels(sid, "background", iid), f"labtui-{sid}-{iid}", backend, "local", "running",
                    created_at=1.0)


def sid() -> str:
    return f"sel-{secrets.token_hex(4)}"


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def started(session: str, pid: int) -> SessionStarted:
    return SessionStarted(session, "test", "scaling", "shelf", "local", {}, pid)


def selected(plan: CleanupPlan) -> dict[str, str]:
    """instance name -> reason."""
    return {t.instance.name: t.reason for t in plan.targets}


def status(db: Path, session: str) -> str:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("select status from sessions where session_id = ?", [session]).fetchone()[0]
    finally:
        con.close()


def instance_rows(db: Path, session: str) -> dict[str, tuple[str, bool]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        found = con.execute("select instance_id, state, destroyed_at is not null from instances "
                            "where session_id = ?", [session]).fetchall()
    finally:
        con.close()
    return {iid: (state, gone) for iid, state, gone in found}


@pytest.fixture(autouse=True)
def own_lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))


@pytest.mark.parametrize("honours_session", [False, True], ids=["listing-ignores-session", "listing-filters"])
async def test_a_session_cleanup_selects_that_session_only_whatever_the_listing_returns(tmp_path, honours_session):
    mine, other, running = sid(), sid(), sid()
    shelf = Shelf([inst(mine, "a"), inst(mine, "b"), inst(other, "a"), inst(running, "a")],
                  honours_session=honours_session)
    with session_lock(running):
        plan = await plan_cleanup([shelf], tmp_path / "none.duckdb", session=mine, orphans=False)
    assert shelf.listed == [mine]  # the listing is asked for the session too
    assert selected(plan) == {f"labtui-{mine}-a": "selected session; unrecorded",  # no store: nothing recorded
                              f"labtui-{mine}-b": "selected session; unrecorded"}
    assert not any("still running" in note for note in plan.notes)


async def test_a_running_session_named_by_session_is_selected_with_a_note(tmp_path):
    running, other = sid(), sid()
    shelf = Shelf([inst(running, "a"), inst(other, "a")])
    with session_lock(running):
        plan = await plan_cleanup([shelf], tmp_path / "none.duckdb", session=running, orphans=True)
    assert selected(plan) == {f"labtui-{running}-a": "selected session"}  # --session wins over --orphans
    assert plan.notes == [f"session {running} is still running; its instances are destroyed anyway"]


async def test_orphans_are_the_instances_of_sessions_whose_lock_is_free(tmp_path):
    free, held, crashed = sid(), sid(), sid()
    db = tmp_path / "o.duckdb"
    record_events(db, [started(crashed, dead_pid()), InstanceCreating(crashed, "a", "local", "shelf", "background",
                                                                      f"labtui-{crashed}-a"),
                       InstanceReady(crashed, "a", created_at=1.0, ready_at=1.0, boot_s=0.0, state="running")])
    shelf = Shelf([inst(free, "a"), inst(held, "a"), inst(crashed, "a")])
    with session_lock(held):
        plan = await plan_cleanup([shelf], db, session=None, orphans=True)
    assert shelf.listed == [None]
    assert selected(plan) == {
        f"labtui-{free}-a": "session not running; unrecorded",  # a session this store never heard of
        f"labtui-{crashed}-a": "session crashed",               # recorded, its controller gone
    }
    assert f"session {crashed} marked crashed" in plan.notes
    assert status(db, crashed) == "crashed"


async def test_a_dry_run_marks_nothing_and_still_names_the_crashed(tmp_path):
    crashed = sid()
    db = tmp_path / "d.duckdb"
    record_events(db, [started(crashed, dead_pid())])
    shelf = Shelf([inst(crashed, "a")])
    plan = await plan_cleanup([shelf], db, session=None, orphans=True, dry_run=True)
    assert selected(plan) == {f"labtui-{crashed}-a": "session crashed; unrecorded"}
    assert plan.notes == [f"session {crashed} would be marked crashed"]
    assert status(db, crashed) == "running"  # a dry run only reads
    assert shelf.destroyed == []


async def test_all_selects_running_sessions_too(tmp_path):
    free, held = sid(), sid()
    shelf = Shelf([inst(free, "a"), inst(held, "a")])
    with session_lock(held):
        plan = await plan_cleanup([shelf], tmp_path / "none.duckdb", session=None, orphans=False)
    assert selected(plan) == {f"labtui-{free}-a": "all labtui instances; unrecorded",
                              f"labtui-{held}-a": "all labtui instances"}  # running: not judged by reconcile


async def test_a_backend_that_cannot_list_is_noted_and_the_others_still_cleaned(tmp_path):
    free = sid()
    good = Shelf([inst(free, "a")])
    bad = Shelf(name="broken", fails=BackendError("daemon gone"))
    plan = await plan_cleanup([bad, good], tmp_path / "none.duckdb", session=None, orphans=True)
    assert selected(plan) == {f"labtui-{free}-a": "session not running; unrecorded"}
    assert "broken: cannot list instances: daemon gone" in plan.notes


async def test_backends_on_several_hosts_are_cleaned_but_not_reconciled(tmp_path):
    """Reconciling needs every listing from one host; a row's host would otherwise be judged against the wrong one."""
    gone = sid()
    db = tmp_path / "h.duckdb"
    record_events(db, [started(gone, dead_pid()),
                       InstanceCreating(gone, "x", "local", "shelf", "background", f"labtui-{gone}-x")])
    here, there = Shelf([inst(gone, "a")]), Shelf(name="far", host="h2")
    plan = await plan_cleanup([here, there], db, session=gone, orphans=False)
    assert selected(plan) == {f"labtui-{gone}-a": "selected session"}  # no "; unrecorded": nothing was reconciled
    assert plan.reconciliation.findings == [] and plan.reconciliation.checked == 0
    report = await run_cleanup(plan, db)
    assert report.closed == 0 and instance_rows(db, gone)["x"] == ("creating", False)


async def test_run_cleanup_forces_each_destroy_counts_failures_and_records_what_went(tmp_path):
    gone = sid()
    db = tmp_path / "r.duckdb"
    record_events(db, [started(gone, dead_pid()),
                       InstanceCreating(gone, "x", "local", "shelf", "background", f"labtui-{gone}-x"),  # vanished
                       InstanceCreating(gone, "a", "local", "shelf", "background", f"labtui-{gone}-a"),
                       InstanceReady(gone, "a", created_at=1.0, ready_at=1.0, boot_s=0.0, state="running")])
    shelf = Shelf([inst(gone, "a"), inst(gone, "b"), inst(gone, "c")])
    shelf.stuck = {f"labtui-{gone}-c"}
    plan = await plan_cleanup([shelf], db, session=gone, orphans=False)
    report = await run_cleanup(plan, db)
    assert sorted(shelf.destroyed) == [(f"labtui-{gone}-a", True), (f"labtui-{gone}-b", True)]
    assert (report.destroyed, report.failed, report.closed) == (2, 1, 1)
    assert report.errors == [f"labtui-{gone}-c: BackendError: labtui-{gone}-c will not go"]
    assert instance_rows(db, gone) == {
        "x": ("reconciled-create", True),
        "a": ("cleaned", True),
        "b": ("cleaned", True),   # unrecorded, of a known session: recorded now, as cleaned
    }


async def test_run_cleanup_of_targets_without_a_store_writes_no_file(tmp_path):
    shelf = Shelf([inst(sid(), "a")])
    db = tmp_path / "absent.duckdb"
    report = await run_cleanup(CleanupPlan(targets=[Target(shelf, shelf.instances[0], "picked")]), db)
    assert report.destroyed == 1 and not db.exists() and report.errors == [] and report.closed == 0


async def test_destroys_alone_are_recorded_and_nothing_closed_counts_zero(tmp_path):
    """A cleanup that destroys but finds no row to close still records the destroys."""
    gone = sid()
    db = tmp_path / "only.duckdb"
    record_events(db, [started(gone, dead_pid()),
                       InstanceCreating(gone, "a", "local", "shelf", "background", f"labtui-{gone}-a"),
                       InstanceReady(gone, "a", created_at=1.0, ready_at=1.0, boot_s=0.0, state="running")])
    shelf = Shelf([inst(gone, "a")])
    plan = await plan_cleanup([shelf], db, session=gone, orphans=False)
    assert plan.reconciliation.to_close() == []
    report = await run_cleanup(plan, db)
    assert (report.destroyed, report.closed, report.errors) == (1, 0, [])
    assert instance_rows(db, gone) == {"a": ("cleaned", True)}


async def test_rows_alone_are_closed_when_nothing_is_destroyed(tmp_path):
    gone = sid()
    db = tmp_path / "rows.duckdb"
    record_events(db, [started(gone, dead_pid()),
                       InstanceCreating(gone, "x", "local", "shelf", "background", f"labtui-{gone}-x")])
    plan = await plan_cleanup([Shelf()], db, session=gone, orphans=False)
    assert plan.targets == []
    assert not any("still running" in note for note in plan.notes)  # nothing listed says nothing about running
    report = await run_cleanup(plan, db)
    assert (report.destroyed, report.closed) == (0, 1)
    assert instance_rows(db, gone) == {"x": ("reconciled-create", True)}


async def test_a_store_that_cannot_be_opened_is_noted_and_the_cleanup_still_destroys(tmp_path):
    free = sid()
    db = tmp_path / "broken.duckdb"
    db.write_bytes(b"not a duckdb file at all\n" * 100)
    shelf = Shelf([inst(free, "a")])
    plan = await plan_cleanup([shelf], db, session=None, orphans=True)
    assert selected(plan) == {f"labtui-{free}-a": "session not running"}  # nothing reconciled: no "; unrecorded"
    assert any(n.startswith("store not updated: ") for n in plan.notes), plan.notes
    assert any(n.startswith("store not reconciled: ") for n in plan.notes), plan.notes
    report = await run_cleanup(plan, db)
    assert report.destroyed == 1 and shelf.instances == []
    assert len(report.errors) == 1 and report.errors[0].startswith("destroys not recorded in the store: ")
    assert report.closed == 0


async def test_rows_of_another_host_or_an_unlisted_backend_are_left_with_a_note(tmp_path):
    gone = sid()
    db = tmp_path / "far.duckdb"
    record_events(db, [started(gone, dead_pid()),
                       InstanceCreating(gone, "far", "elsewhere", "shelf", "background", "far"),
                       InstanceCreating(gone, "other", "local", "docker", "background", "other"),
                       InstanceCreating(gone, "here", "local", "shelf", "background", "here")])
    plan = await plan_cleanup([Shelf()], db, session=gone, orphans=False)
    assert {(f.kind, f.instance_id) for f in plan.reconciliation.findings} == {("create-unfinished", "here")}
    assert plan.reconciliation.checked == 1
    assert "1 open instance row(s) of docker on local not checked: that backend was not listed here" in plan.notes
    assert "1 open instance row(s) of shelf on elsewhere not checked: that backend was not listed here" in plan.notes
    await run_cleanup(plan, db)
    assert instance_rows(db, gone) == {"far": ("creating", False), "other": ("creating", False),
                                       "here": ("reconciled-create", True)}


async def test_rows_of_a_backend_whose_listing_failed_are_not_judged(tmp_path):
    gone = sid()
    db = tmp_path / "failed.duckdb"
    record_events(db, [started(gone, dead_pid()),
                       InstanceCreating(gone, "x", "local", "broken", "background", "x")])
    bad = Shelf(name="broken", fails=BackendError("daemon gone"))
    plan = await plan_cleanup([bad], db, session=gone, orphans=False)
    assert plan.reconciliation.findings == [] and plan.reconciliation.checked == 0
    assert "1 open instance row(s) of broken on local not checked: that backend was not listed here" in plan.notes
    await run_cleanup(plan, db)
    assert instance_rows(db, gone) == {"x": ("creating", False)}  # not closed as gone: it may well be there
