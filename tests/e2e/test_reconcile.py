"""Reconciling the store with the backends: real process instances, real stores, real crashes.

Each test crafts one way the store and the backends can disagree (instances the
store never recorded, intents without an outcome written through the real
StoreWriter, a `labtui run` killed between a create's intent and its outcome)
and checks the reconcile report of `labtui cleanup` and the store afterwards.

The reports come from `cleanup --orphans --dry-run`, which touches nothing; the
cleanups that destroy select the test's own sessions (`--session`), so labtui
instances of other work on the same machine are neither counted nor ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from backend_lab import Lab
from cli_run import labtui

from labtui.backends.base import Instance, InstanceSpec, Labels
from labtui.core.events import (
    InstanceCreating,
    InstanceDestroyed,
    InstanceDestroying,
    InstanceReady,
    SessionEnded,
    SessionStarted,
)
from labtui.core.liveness import session_lock, sessions_of
from labtui.store import record_events

#: `env` (tests/conftest.py) gives the CLI the module's runtime dir, which the in-process backend uses too.
SHARED_RUNTIME = True

BACKEND = "process"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "rec"


def dead_pid() -> int:
    """The pid of a process that has ended (so a session recorded with it reads as crashed)."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def started(sid: str, pid: int) -> SessionStarted:
    return SessionStarted(sid, "test", "scaling", "process", "local", {}, pid)


def creating(sid: str, iid: str, host: str = "local", backend: str = "process") -> InstanceCreating:
    return InstanceCreating(sid, iid, host, backend, "background", iid)


def ready(sid: str, iid: str, state: str = "running") -> InstanceReady:
    now = time.time()
    return InstanceReady(sid, iid, created_at=now, ready_at=now, boot_s=0.001, state=state)


async def spawn(lab: Lab, sid: str, iid: str) -> Instance:
    (instance,) = await lab.backend.create_many([InstanceSpec(Labels(sid, "background", iid), program="sleeper")])
    return instance


def rows(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def snapshot(db: Path) -> tuple[list[tuple], ...]:
    """Every row of the tables cleanup may change, to prove a dry run changed nothing."""
    return tuple(rows(db, f"select columns(*)::varchar from {t} order by all") for t in ("sessions", "instances", "events"))


def states(db: Path, sid: str) -> dict[str, tuple[str, bool]]:
    """instance id -> (state, destroyed_at is set) for one session."""
    found = rows(db, "select instance_id, state, destroyed_at is not null from instances where session_id = ?", [sid])
    return {iid: (state, gone) for iid, state, gone in found}


def alive(env: dict[str, str], sid: str) -> set[str]:
    out = labtui("instances", "--backend", "process", "--session", sid, "--format", "json", env=env)
    assert out.returncode == 0, out.stderr
    return {record["instance"] for record in json.loads(out.stdout)}


def report_line(stdout: str, session: str, instance_id: str) -> str:
    """The reconcile report's line about one instance of one session."""
    lines = [line for line in stdout.splitlines() if f" {session} " in line and f" {instance_id} " in line]
    assert len(lines) == 1, stdout
    return lines[0]


def cleanup(*args: str, db: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """A cleanup of this machine's process instances (--host local: a bare cleanup also visits the hosts of
    the store's open rows, and the test's row on host 'elsewhere' names no reachable host)."""
    out = labtui("cleanup", *args, "--backend", "process", "--host", "local", "--db", str(db), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    return out


async def test_instances_the_store_never_recorded_are_reported_then_destroyed(lab, env, tmp_path):
    db = tmp_path / "a.duckdb"
    known, ghost = lab.session(), lab.session()
    record_events(db, [started(known, dead_pid()), creating(known, "bg1"), ready(known, "bg1"),
                       InstanceDestroying(known, "bg1"), InstanceDestroyed(known, "bg1")])
    await spawn(lab, known, "bg9")  # the session is in the store, this instance is not
    await spawn(lab, ghost, "bg1")  # a session this store never heard of
    stranger = await asyncio.create_subprocess_exec("sleep", "300")  # no lab labels: never touched
    try:
        before = snapshot(db)
        dry = cleanup("--orphans", "--dry-run", db=db, env=env)
        line = report_line(dry.stdout, known, "bg9")
        assert "unrecorded" in line and "not recorded in its session" in line and "would destroy" in line
        line = report_line(dry.stdout, ghost, "bg1")
        assert "unrecorded" in line and f"session {ghost} is not in this store" in line and "would destroy" in line
        assert snapshot(db) == before  # the dry run wrote nothing
        assert alive(env, known) == {"bg9"} and alive(env, ghost) == {"bg1"}

        out = cleanup("--session", known, db=db, env=env)
        assert "unrecorded" in report_line(out.stdout, known, "bg9")
        cleanup("--session", ghost, db=db, env=env)
        assert alive(env, known) == set() and alive(env, ghost) == set()
        assert Path(f"/proc/{stranger.pid}/stat").read_text().split()[2] != "Z"  # alive, not a zombie
        # the known session's unrecorded instance now has a complete row; the unknown session gets no row
        (row,) = rows(db, "select host, backend, role, state, destroyed_at is not null from instances "
                          "where session_id = ? and instance_id = 'bg9'", [known])
        assert row == ("local", "process", "background", "cleaned", True)
        assert rows(db, "select count(*) from instances where session_id = ?", [ghost]) == [(0,)]
        (ghost_log,) = rows(db, "select session_id, level, category, message from events where message like ?",
                            [f"%labtui-{ghost}-bg1%"])
        assert ghost_log[:3] == (None, "warning", "reconcile") and "unrecorded" in ghost_log[3]
        assert states(db, known)["bg1"] == ("destroyed", True)  # a finished row is left as it was
    finally:
        stranger.kill()
        await stranger.wait()


async def test_intents_without_outcome_are_closed_or_cleaned(lab, env, tmp_path):
    db = tmp_path / "b.duckdb"
    sid, live_sid = lab.session(), lab.session()
    events = [
        started(sid, dead_pid()),
        creating(sid, "c-gone"),                                                   # create never finished, nothing there
        creating(sid, "c-alive"),                                                  # create never finished, instance there
        creating(sid, "d-gone"), ready(sid, "d-gone"), InstanceDestroying(sid, "d-gone"),
        creating(sid, "d-alive"), ready(sid, "d-alive"), InstanceDestroying(sid, "d-alive"),
        creating(sid, "r-gone"), ready(sid, "r-gone"),                             # recorded alive, vanished
        creating(sid, "r-alive"), ready(sid, "r-alive"),                           # a plain orphan
        creating(sid, "done"), ready(sid, "done"), InstanceDestroying(sid, "done"), InstanceDestroyed(sid, "done"),
        creating(sid, "hello"), ready(sid, "hello", state="exited"),               # ran to its exit: nothing to do
        creating(sid, "far", host="elsewhere"),                                    # another host: not listed here
        started(live_sid, os.getpid()), creating(live_sid, "c-run"),              # a session still running
    ]
    record_events(db, events)
    for iid in ("c-alive", "d-alive", "r-alive"):
        await spawn(lab, sid, iid)
    await spawn(lab, live_sid, "bg1")
    with session_lock(live_sid):
        before = snapshot(db)
        dry = cleanup("--orphans", "--dry-run", db=db, env=env)
        assert snapshot(db) == before
        expect = {
            "c-gone": ("create-unfinished", "would close row as reconciled-create"),
            "c-alive": ("create-unfinished", "would destroy"),
            "d-gone": ("destroy-unfinished", "would close row as reconciled-destroy"),
            "d-alive": ("destroy-unfinished", "would destroy"),
            "r-gone": ("vanished", "would close row as reconciled-gone"),
        }
        for iid, (kind, action) in expect.items():
            line = report_line(dry.stdout, sid, iid)
            assert kind in line and action in line, line
        findings = dry.stdout.split("reconcile: store against backends")[1]
        for iid in ("r-alive", "done", "hello", "far"):  # a plain orphan, finished rows, a row of another host
            assert not [x for x in findings.splitlines() if f" {sid} " in x and f" {iid} " in x], findings
        assert live_sid not in dry.stdout  # a running session: neither an orphan nor judged
        assert f"session {sid} would be marked crashed" in dry.stdout
        assert "1 open instance row(s) of process on elsewhere not checked" in dry.stdout

        out = cleanup("--session", sid, db=db, env=env)
        assert "store rows closed 3" in out.stdout
        assert alive(env, sid) == set()
        assert alive(env, live_sid) == {"bg1"}
        assert states(db, sid) == {
            "c-gone": ("reconciled-create", True),
            "c-alive": ("cleaned", True),
            "d-gone": ("reconciled-destroy", True),
            "d-alive": ("cleaned", True),
            "r-gone": ("reconciled-gone", True),
            "r-alive": ("cleaned", True),
            "done": ("destroyed", True),
            "hello": ("exited", False),
            "far": ("creating", False),
        }
        assert states(db, live_sid) == {"c-run": ("creating", False)}
        assert rows(db, "select status from sessions where session_id = ?", [sid]) == [("crashed",)]
        logged = rows(db, "select message from events where session_id = ? and category = 'reconcile'", [sid])
        assert sorted(m.split(":")[0] for (m,) in logged) == [
            "process instance c-gone", "process instance d-gone", "process instance r-gone"]
        # a second cleanup finds the store and the backend in agreement
        again = cleanup("--session", sid, db=db, env=env)
        assert "the store and the backends agree" in again.stdout and "nothing to clean up" in again.stdout


async def test_cleanup_of_one_session_reconciles_only_that_session(lab, env, tmp_path):
    db = tmp_path / "c.duckdb"
    one, other = lab.session(), lab.session()
    record_events(db, [started(one, dead_pid()), creating(one, "x"), started(other, dead_pid()), creating(other, "y")])
    cleanup("--session", one, db=db, env=env)
    assert states(db, one) == {"x": ("reconciled-create", True)}
    assert states(db, other) == {"y": ("creating", False)}  # not listed for this cleanup, so not judged


def test_kill_9_between_create_intent_and_outcome(env, tmp_path):
    """A worker that never exits keeps its create (wait for exit) in flight; labtui is killed right then."""
    suite = tmp_path / "stuck.toml"
    suite.write_text('[suite]\nname = "stuck"\nkind = "scaling"\nrepetitions = 1\n'
                     '[scale]\nsteps = 1\nper_step = 1\n'
                     '[worker]\nprogram = "sleeper"\nmeasure = "boot"\nwarmup = 0\n'
                     '[background]\nprogram = "sleeper"\n[sampling]\nquiet_timeout_s = 0\n')
    db = tmp_path / "k.duckdb"
    proc = subprocess.Popen([sys.executable, "-m", "labtui", "run", str(suite), "--db", str(db)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sid = _wait(lambda: next(iter(sessions_of(proc.pid)), None), proc, "the lock")
        _wait(lambda: alive(env, sid) or None, proc, "the worker instance")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    (worker,) = alive(env, sid)
    synced = labtui("store", "sync", "--db", str(db), env=env)  # the killed run's journal moves in
    assert synced.returncode == 0 and synced.stdout.startswith("1 journal(s)"), synced.stdout + synced.stderr
    assert rows(db, "select state from instances where session_id = ? and instance_id = ?", [sid, worker]) == [
        ("creating",)]  # the intent was journalled before the create; its outcome never came
    dry = cleanup("--orphans", "--dry-run", db=db, env=env)
    assert "would destroy" in report_line(dry.stdout, sid, worker)
    out = cleanup("--session", sid, db=db, env=env)
    line = report_line(out.stdout, sid, worker)
    assert "create-unfinished" in line and "still exists" in line and "destroy" in line
    assert alive(env, sid) == set()
    assert states(db, sid)[worker] == ("cleaned", True)
    assert rows(db, "select status from sessions where session_id = ?", [sid]) == [("crashed",)]


async def test_a_run_reconciles_its_backend_when_it_starts(lab, env, tmp_path):
    db = tmp_path / "r.duckdb"
    old = lab.session()
    record_events(db, [started(old, dead_pid()), creating(old, "d-gone"), ready(old, "d-gone"),
                       InstanceDestroying(old, "d-gone"), creating(old, "orphan"), ready(old, "orphan"),
                       SessionEnded(old, "failed", "test")])
    await spawn(lab, old, "orphan")
    out = labtui("run", "boot-scaling", "--db", str(db), "--set", "scale.steps=1", "--set", "scale.per_step=1",
                 "--set", "suite.repetitions=1", "--set", "sampling.quiet_timeout_s=0", env=env)
    assert out.returncode == 0, out.stderr
    assert "reconcile: closed 1 instance row(s)" in out.stderr
    left = re.search(r"(\d+) instance\(s\) of sessions no longer running are still on process", out.stderr)
    assert left and int(left[1]) >= 1, out.stderr  # the orphan (and any other work's on this machine)
    assert states(db, old)["d-gone"] == ("reconciled-destroy", True)
    assert states(db, old)["orphan"] == ("running", False)  # a run reports orphans; only cleanup destroys
    assert alive(env, old) == {"orphan"}


def _wait(probe: Callable[[], object], proc: subprocess.Popen, what: str, timeout: float = 60) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"labtui run ended before {what}"
        found = probe()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


# --- the running-lock outranks the store: reconcile() itself, no backend or CLI ---------------------------------

def listed(sid: str, iid: str) -> Instance:
    return Instance(Labels(sid, "background", iid), f"labtui-{sid}-{iid}", "process", "local", "running")


@pytest.mark.parametrize("pid_alive", [True, False], ids=["pid-alive", "pid-gone"])
@pytest.mark.parametrize("lock_held", [True, False], ids=["lock-held", "lock-free"])
def test_reconcile_judges_a_session_only_when_its_lock_is_free(tmp_path, monkeypatch, pid_alive, lock_held):
    """A session whose running-lock some process holds is never judged; one whose lock is free is over.

    The recorded controller pid plays no part (a pid is reused): the store's
    crash marking and reconcile both ask the running-lock, the one answer.
    """
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))
    from labtui.lifecycle.reconcile import read_store, reconcile

    db = tmp_path / "lock.duckdb"
    sid = f"lock-{secrets.token_hex(4)}"
    record_events(db, [started(sid, os.getpid() if pid_alive else dead_pid()),
                       creating(sid, "c"), creating(sid, "cg"), creating(sid, "r"), ready(sid, "r"),
                       creating(sid, "d"), ready(sid, "d"), InstanceDestroying(sid, "d"),
                       creating(sid, "dg"), ready(sid, "dg"), InstanceDestroying(sid, "dg")])
    # "c" and "d" are still there, "cg", "dg" and "r" are gone, "u" was never recorded
    listings = {"process": [listed(sid, "c"), listed(sid, "d"), listed(sid, "u")]}
    with session_lock(sid) if lock_held else contextlib.nullcontext():
        view = read_store(db)
        result = reconcile(view, listings, "local")
    assert view.ended(sid) is (not lock_held)  # the store alone: over exactly when no process holds its lock
    found = {(f.kind, f.instance_id, f.detail) for f in result.findings}
    if lock_held:
        assert found == set() and result.checked == 0 and result.to_close() == []
    else:
        assert found == {
            ("create-unfinished", "c", "create recorded without an outcome; still exists"),
            ("create-unfinished", "cg", "create recorded without an outcome; not found"),
            ("destroy-unfinished", "d", "destroy recorded without an outcome; still exists"),
            ("destroy-unfinished", "dg", "destroy recorded without an outcome; gone"),
            ("vanished", "r", "recorded running, session over, instance gone"),
            ("unrecorded", "u", "not recorded in its session"),
        }
        assert result.checked == 5
        assert sorted(f.instance_id for f in result.to_close()) == ["cg", "dg", "r"]


def test_reconcile_leaves_an_ended_session_alone_while_its_lock_is_held(tmp_path, monkeypatch):
    """The store says 'ended' (its SessionEnded is written before the run lets go of its lock): not judged yet."""
    monkeypatch.setenv("LABTUI_LOCK_DIR", str(tmp_path / "locks"))
    from labtui.lifecycle.reconcile import read_store, reconcile

    db = tmp_path / "ended.duckdb"
    sid = f"ended-{secrets.token_hex(4)}"
    record_events(db, [started(sid, os.getpid()), creating(sid, "c"), SessionEnded(sid, "completed")])
    view = read_store(db)
    assert view.ended(sid)
    listings = {"process": [listed(sid, "u")]}
    with session_lock(sid):
        assert reconcile(view, listings, "local").findings == []
    assert {(f.kind, f.instance_id) for f in reconcile(view, listings, "local").findings} == {
        ("create-unfinished", "c"), ("unrecorded", "u")}
