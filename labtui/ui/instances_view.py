"""The Instances view: every labtui instance on the host, select and destroy, clean up stuck and orphans.

An instance is flagged when it needs attention: "orphan" (no process runs its
session), "stuck <state>" (still in a transitional state past STUCK_AFTER_S),
or "destroy failed" (a destroy from this view failed; remembered until the
instance is gone).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from labtui.lifecycle.cleanup import CleanupPlan, Target, run_cleanup
from labtui.hosts import HostError, get_host
from labtui.lifecycle.liveness import session_is_running
from labtui.ui.format import age, size
from labtui.ui.inventory import Found, destroy_errors, flags, inventory, usable_backends
from labtui.ui.modals import ConfirmScreen
from labtui.ui.tablesync import sync_rows
from labtui.ui.rowtable import RowTable

COLUMNS = ("sel", "name", "backend", "host", "role", "session", "state", "age", "memory", "flag")
#: The rows follow the filter this long after the last typed character (10,000 rows take a while to filter).
FILTER_AFTER_S = 0.15


class InstancesView(Vertical):
    """Lists lab-labelled instances across usable backends; destroys only after confirmation."""

    DEFAULT_CSS = """
    InstancesView #inst-filter { display: none; }
    InstancesView #inst-filter.shown { display: block; }
    InstancesView #inst-table { height: 1fr; }
    InstancesView #inst-status { height: 2; color: $text-muted; }
    """
    BINDINGS = [
        Binding("r", "refresh", "refresh"),
        Binding("space", "toggle_select", "select"),
        Binding("d", "destroy", "destroy"),
        Binding("c", "cleanup", "clean session"),
    ]

    def __init__(self, db_path: Path, host: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.db_path, self.host_name = db_path, host
        self.found: dict[str, Found] = {}
        self.selected: set[str] = set()
        self.failures: dict[str, str] = {}
        self.filter_text = ""
        self.notes: list[str] = []
        self._filter_timer: Timer | None = None
        #: The clock ages and stuck checks use (replaceable for a reproducible screen).
        self.now: Callable[[], float] = time.time

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: any text in name, role, session, state...", id="inst-filter")
        table = RowTable(id="inst-table")
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Static("press r to list instances", id="inst-status")

    @property
    def table(self) -> DataTable:
        return self.query_one("#inst-table", DataTable)

    def status(self, message: str) -> None:
        """Show a line under the table as plain text (names and errors may hold '[/]')."""
        self.query_one("#inst-status", Static).update(Text(message))

    # --- listing ----------------------------------------------------------------------

    def action_refresh(self) -> None:
        self.status("listing instances...")
        self.run_worker(self._refresh(), group="inventory", exclusive=True, exit_on_error=False)

    async def _refresh(self) -> None:
        try:
            host = get_host(self.host_name)
        except HostError as exc:
            self.status(str(exc))
            return
        backends, notes = await usable_backends(host)
        found, more = await inventory(backends)
        self.show(found, [b.name for b in backends], notes + more)

    def show(self, found: list[Found], backends: list[str], notes: list[str]) -> None:
        """Show a listing: rows by keyed diff, flags, and a status line with the counts."""
        self.found = {f.key: f for f in found}
        self.selected &= set(self.found)
        self.failures = {k: v for k, v in self.failures.items() if k in self.found}
        self.render_rows()
        now = self.now()
        flagged = [self.flags(k, f, now) for k, f in self.found.items()]
        orphans = sum("orphan" in fl for fl in flagged)
        stuck = sum(any(x.startswith("stuck") for x in fl) for fl in flagged)
        self.status(f"{len(found)} instance(s): {orphans} orphaned, {stuck} stuck, {len(self.failures)} failed destroy"
                    f" · backends: {', '.join(backends) or 'none'}" + ("\n" + "; ".join(notes) if notes else ""))

    def flags(self, key: str, f: Found, now: float) -> list[str]:
        return flags(f, now, self.failures.get(key))

    def _cells(self, key: str, f: Found, now: float) -> tuple:
        i = f.instance
        flag = Text(", ".join(self.flags(key, f, now)), "bold red")
        cells = ("✔" if key in self.selected else " ", i.name, f.backend.name, i.host, i.labels.role,
                 i.labels.session, i.state, age(i.created_at, now), size(f.memory))
        return (*(Text(str(c)) for c in cells), flag)  # a str cell would be read as markup

    def visible(self) -> dict[str, Found]:  # type: ignore[override]  # shadows DOMNode.visible (a bool property) as it always has
        """The listed instances that match the filter."""
        rows = self._visible_rows(self.now())
        return {k: self.found[k] for k in rows}

    def _visible_rows(self, now: float) -> dict[str, tuple]:
        needle = self.filter_text.lower()
        rows = {}
        for k, f in self.found.items():
            cells = self._cells(k, f, now)
            if not needle or needle in " ".join(str(c) for c in cells[1:]).lower():
                rows[k] = cells
        return rows

    def render_rows(self) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
            self._filter_timer = None
        rows = self._visible_rows(self.now())
        with self.app.batch_update():
            sync_rows(self.table, rows)

    # --- filter -----------------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#inst-filter", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Changed, "#inst-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(FILTER_AFTER_S, self.render_rows)

    @on(Input.Submitted, "#inst-filter")
    def _filter_done(self) -> None:
        self.render_rows()
        self.table.focus()

    def close_filter(self) -> bool:
        """Hide the filter box (keeping its text); True when there was one to close."""
        box = self.query_one("#inst-filter", Input)
        if not box.has_class("shown"):
            return False
        if not box.value:
            box.remove_class("shown")
        self.table.focus()
        return True

    # --- selection and destroy ---------------------------------------------------------------

    def cursor_key(self) -> str | None:
        table = self.table
        if table.row_count == 0:
            return None
        return table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value

    def action_toggle_select(self) -> None:
        key = self.cursor_key()
        if key is None:
            return
        self.selected ^= {key}
        self.table.update_cell(key, "sel", Text("✔" if key in self.selected else " "))
        if self.table.cursor_row < self.table.row_count - 1:
            self.table.move_cursor(row=self.table.cursor_row + 1)

    def _confirm_destroy(self, title: str, targets: list[Target], *, reasons: bool = False) -> None:
        lines = [f"{t.instance.name}  {t.backend.name}@{t.instance.host}  role={t.instance.labels.role}  "
                 f"session={t.instance.labels.session}  state={t.instance.state}"
                 + (f"  [{t.reason}]" if reasons else "") for t in targets]

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(self._destroy(targets), group="destroy", exit_on_error=False)

        self.app.push_screen(ConfirmScreen(title, lines, yes="Destroy (y)", no="Cancel (n)"), answered)

    def action_destroy(self) -> None:
        """Destroy the selected instances (or the one under the cursor) after confirming."""
        keys = sorted(self.selected) or ([k] if (k := self.cursor_key()) else [])
        targets = [Target(self.found[k].backend, self.found[k].instance, "destroyed from the console")
                   for k in keys if k in self.found]
        if not targets:
            self.notify("nothing to destroy: list with r, select with space", severity="warning")
            return
        self._confirm_destroy(f"Destroy {len(targets)} instance(s)?", targets)

    def action_cleanup(self) -> None:
        """Destroy every stuck or orphaned instance of the session under the cursor, after confirming."""
        key = self.cursor_key()
        if key is None or key not in self.found:
            self.notify("no instance under the cursor", severity="warning")
            return
        sid = self.found[key].instance.labels.session
        now = self.now()
        targets = [Target(f.backend, f.instance, ", ".join(fl))
                   for k, f in self.found.items()
                   if f.instance.labels.session == sid and (fl := self.flags(k, f, now))]
        if not targets:
            self.notify(f"session {sid} has no stuck or orphaned instance", severity="warning", markup=False)
            return
        title = f"Clean up {len(targets)} stuck or orphaned instance(s) of session {sid}?"
        if session_is_running(sid):
            title += " The session is still running."
        self._confirm_destroy(title, targets, reasons=True)

    def cleanup_orphans(self) -> None:
        """`:cleanup orphans`: list again, then destroy every orphaned instance after confirming."""
        self.run_worker(self._cleanup_orphans(), group="inventory", exclusive=True, exit_on_error=False)

    async def _cleanup_orphans(self) -> None:
        self.status("listing instances...")
        await self._refresh()
        now = self.now()
        targets = [Target(f.backend, f.instance, "orphan")
                   for k, f in self.found.items() if "orphan" in self.flags(k, f, now)]
        if not targets:
            self.notify("no orphaned instance on this host", severity="warning")
            return
        self._confirm_destroy(f"Clean up {len(targets)} orphaned instance(s)?", targets, reasons=True)

    async def _destroy(self, targets: list[Target]) -> None:
        self.status(f"destroying {len(targets)} instance(s)...")
        report = await run_cleanup(CleanupPlan(targets=targets), self.db_path)
        message = f"destroyed {report.destroyed}, failed {report.failed}"
        self.notify(message, severity="error" if report.failed else "information")
        for error in report.errors:
            self.notify(error, severity="error", timeout=10, markup=False)
        keys = {_key(t): t.instance.name for t in targets}
        self.failures.update(destroy_errors(keys, report.errors))
        for key in set(keys) - set(destroy_errors(keys, report.errors)):
            self.failures.pop(key, None)
        self.selected -= set(keys)
        await self._refresh()
        self.status(message)


def _key(target: Target) -> str:
    return f"{target.backend.name}:{target.instance.host}:{target.instance.name}"
