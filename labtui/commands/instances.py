"""`labtui instances` and `labtui cleanup`: find and end labtui's own instances."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.text import Text

from labtui.backends.base import Backend, Instance
from labtui.commands.common import backends_for, db_path, usable_backends
from labtui.commands.listing import Column, PipeConsole, print_table, write_rows
from labtui.core.errors import LabError, UsageError
from labtui.core.liveness import session_is_running
from labtui.hosts import get_host, known_hosts
from labtui.lifecycle.cleanup import CleanupPlan, CleanupReport, plan_cleanup, run_cleanup
from labtui.store import StoreError, fetch_frame, session_ids
from labtui.store.journal import pending


def cmd_instances(args) -> int:
    host = get_host(args.host)
    found = asyncio.run(_list_all(backends_for(args, host), None, every=not args.backend))
    if args.session:
        known = known_sessions(db_path(args)) | {i.labels.session for _, i in found}
        if sessions_matching(args.session, known):
            session = session_named(args.session, known, running_ok=True)
        else:  # none left of a session, or never one: an empty listing (a script waits for it), said why
            session = args.session
            print(f"labtui instances: --session {session}: no session has that id or one starting with it, in the "
                  "store, its journals or the backends' listings", file=sys.stderr)
        found = [(backend, i) for backend, i in found if i.labels.session == session]
    if args.format != "table":
        write_rows(args.format, RECORD_KEYS, [_as_record(backend, i) for backend, i in found])
        return 0
    columns: list[Column | str] = [Column("name", key=True), "backend", "host", "role", Column("session", key=True),
                                   "state", "age", "handle"]
    write_rows(args.format, columns, [(i.name, backend, i.host, i.labels.role, i.labels.session, i.state, _age(i),
                                       i.handle) for backend, i in found], title=f"labtui instances on {host.name}")
    print(f"{len(found)} instance(s)", file=sys.stderr)
    return 0


def cmd_cleanup(args) -> int:
    """Clean up on one host (--host), or on every host labtui knows of: local, the lab config's, the store's."""
    console = PipeConsole()
    names = [args.host] if args.host else cleanup_hosts(db_path(args))
    if args.session:
        args.session = _cleanup_session(args, names)
    failed = 0
    for name in names:
        if len(names) > 1:
            console.print(Text(f"== host {name}", "bold"))
        try:
            host = get_host(name)
            backends = backends_for(args, host)
            # one event loop for planning and destroying: an SSH host's connections belong to the loop that opened them
            report = asyncio.run(_plan_and_clean(args, backends, console))
        except StoreError:
            raise
        except (LabError, OSError) as exc:
            if len(names) == 1:
                raise UsageError(str(exc)) from None
            console.print(Text(f"host {name}: could not be reached: {exc}", "red"))
            failed += 1
            continue
        if report is None:
            continue
        where = f"host {name}: " if len(names) > 1 else ""
        console.print(Text(f"{where}destroyed {report.destroyed}, failed {report.failed}, "
                           f"store rows closed {report.closed}"))
        for message in report.errors:
            console.print(Text(str(message), "red"))
        failed += report.failed
    return 0 if failed == 0 else 1


def known_sessions(db: Path) -> set[str]:
    """The session ids the store and its journals know (an unreadable or missing store knows none)."""
    known = set(pending(db).statuses)
    if db.exists():
        try:
            known |= set(session_ids(db))
        except StoreError:
            pass
    return known


def sessions_matching(name: str, known: set[str]) -> list[str]:
    """[name] when it is a known id, else every known id that starts with it, sorted."""
    return [name] if name in known else sorted(sid for sid in known if sid.startswith(name))


def session_named(name: str, known: set[str], *, running_ok: bool) -> str:
    """The session `--session NAME` means among `known`: the id equal to NAME, else the one id starting with it.

    UsageError when none or several match, or (unless `running_ok`) when a prefix names a running session: a
    cleanup destroys a running session's instances only when it is named in full.
    """
    matches = sessions_matching(name, known)
    if not matches:
        raise UsageError(f"--session {name}: no session has that id or one starting with it, in the store, its "
                         "journals or the backends' listings (`labtui sessions` lists the store's)")
    if len(matches) > 1:
        raise UsageError(f"--session {name} is ambiguous; it matches: {', '.join(matches)}")
    (session,) = matches
    if session != name and not running_ok and session_is_running(session):
        raise UsageError(f"--session {name} names {session}, which is still running; to destroy its instances "
                         f"anyway, give its whole id: --session {session}")
    return session


def _cleanup_session(args, hosts: list[str]) -> str:
    """Resolve `cleanup --session` against every id known: the store's, its journals' and the sessions whose
    instances the backends on `hosts` list (a crash may leave instances of a session nothing recorded)."""
    known = known_sessions(db_path(args))
    if args.session in known:  # a whole id wins whatever the backends list: no need to ask them twice
        return args.session
    for name in hosts:
        try:
            known |= asyncio.run(_sessions_listed(args, name))
        except (LabError, OSError):
            continue  # unreachable: said when the cleanup visits it
    return session_named(args.session, known, running_ok=False)


async def _sessions_listed(args, name: str) -> set[str]:
    """The sessions whose instances the backends on host `name` list; the host's connections closed after."""
    host = get_host(name)
    try:
        return {i.labels.session for _, i in await _list_all(backends_for(args, host), None, every=not args.backend)}
    finally:
        await host.close()


def cleanup_hosts(db: Path) -> list[str]:
    """Every host a cleanup without --host visits: local, the lab config's hosts, and the store's hosts
    that have open instance rows or running sessions (a config may have lost a host the store remembers)."""
    names = ["local", *known_hosts()]
    if db.exists():
        try:
            frame = fetch_frame(db, "SELECT host FROM instances WHERE destroyed_at IS NULL UNION "
                                    "SELECT host FROM sessions WHERE status = 'running'")
        except StoreError:
            frame = None
        if frame is not None:
            names += sorted(h for h in frame["host"].to_list() if h)
    names += sorted(pending(db).hosts)  # a crashed session whose rows never reached the store
    return list(dict.fromkeys(names))


async def _plan_and_clean(args, backends: list[Backend], console: Console) -> CleanupReport | None:
    """Plan, print the plan and the reconcile report, then (unless a dry run or nothing to do) act.

    None when nothing was destroyed or recorded.
    """
    if not args.backend:
        backends = await usable_backends(backends)
    plan = await plan_cleanup(backends, db_path(args), session=args.session, orphans=args.orphans,
                              dry_run=args.dry_run)
    _print_plan(console, plan)
    _print_reconciliation(console, plan, dry_run=args.dry_run)
    if args.dry_run:
        console.print("dry run: nothing destroyed, the store unchanged", markup=False)
        return None
    if not plan.targets and not plan.reconciliation.to_close():
        console.print("nothing to clean up")
        return None
    return await run_cleanup(plan, db_path(args))


def _print_plan(console: Console, plan: CleanupPlan) -> None:
    rows = [(t.instance.name, t.backend.name, t.instance.labels.role, t.instance.labels.session, t.instance.state,
             t.reason) for t in plan.targets]
    if rows:  # an empty table says nothing "nothing to clean up" does not
        print_table(console, [Column("name", key=True), "backend", "role", Column("session", key=True), "state",
                              "why"], rows, title="to destroy")
    for note in plan.notes:
        console.print(Text(str(note), "yellow"), highlight=False)


def _print_reconciliation(console: Console, plan: CleanupPlan, *, dry_run: bool) -> None:
    """The reconcile report: one line per disagreement between the store and the backends."""
    result = plan.reconciliation
    targets = {(t.backend.name, t.instance.labels.session, t.instance.labels.instance) for t in plan.targets}
    if not result.findings:
        console.print(f"reconcile: the store and the backends agree ({result.checked} open instance row(s) checked)",
                      markup=False)
        return
    rows = []
    for f in result.findings:
        if f.closed_state:
            action = f"{'would close' if dry_run else 'close'} row as {f.closed_state}"
        elif f.key in targets:
            action = "would destroy" if dry_run else "destroy"
        else:
            action = "left alone"
        rows.append((f.kind, f.session_id, f.instance_id, f.backend, f.detail, action))
    print_table(console, ["finding", Column("session", key=True), Column("instance", key=True), "backend", "detail",
                          "action"], rows, title="reconcile: store against backends")
    counts: dict[str, int] = {}
    for f in result.findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))
    console.print(f"reconcile: {summary} ({result.checked} open instance row(s) checked)", highlight=False, markup=False)


async def _list_all(backends: list[Backend], session: str | None, *, every: bool) -> list[tuple[str, Instance]]:
    """The instances of the backends (of those usable here when `every` backend was asked for)."""
    if every:
        backends = await usable_backends(backends)
    results = await asyncio.gather(*(b.list(session) for b in backends), return_exceptions=True)
    found: list[tuple[str, Instance]] = []
    for backend, result in zip(backends, results):
        if isinstance(result, BaseException):
            Console(stderr=True).print(Text(f"{backend.name}: {result}", "yellow"), highlight=False)
            continue
        found.extend((backend.name, i) for i in result)
    return found


#: The keys of an instance's JSON object and CSV row, in order.
RECORD_KEYS = ("name", "backend", "host", "session", "role", "instance", "state", "created_at", "handle")


def _as_record(backend: str, instance: Instance) -> tuple:
    """An instance as `labtui instances --format json|csv` prints it: the values of RECORD_KEYS."""
    i = instance
    return i.name, backend, i.host, i.labels.session, i.labels.role, i.labels.instance, i.state, i.created_at, i.handle


def _age(instance: Instance) -> str:
    if not instance.created_at:
        return "-"
    seconds = int(time.time() - instance.created_at)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"
