"""The Instances view: every labtui instance on the host, select and destroy, clean up orphans."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Static

from labtui.cleanup import CleanupPlan, Target, run_cleanup
from labtui.hosts import HostError, get_host
from labtui.liveness import session_is_running
from labtui.ui.format import age, size
from labtui.ui.inventory import Found, inventory, usable_backends
from labtui.ui.modals import ConfirmScreen
from labtui.ui.tablesync import sync_rows

COLUMNS = ("sel", "name", "backend", "host", "role", "session", "state", "age", "memory", "flag")


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
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: any text in name, role, session, state...", id="inst-filter")
        table: DataTable = DataTable(id="inst-table", cursor_type="row", zebra_stripes=True)
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Static("press r to list instances", id="inst-status")

    @property
    def table(self) -> DataTable:
        return self.query_one("#inst-table", DataTable)

    def status(self, message: str) -> None:
        self.query_one("#inst-status", Static).update(message)

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
        self.found = {f.key: f for f in found}
        self.selected &= set(self.found)
        self.render_rows()
        orphans = sum(f.orphan for f in found)
        names = ", ".join(b.name for b in backends) or "none"
        self.status(f"{len(found)} instance(s), {orphans} orphaned · backends: {names}"
                    + ("\n" + "; ".join(notes + more) if notes or more else ""))

    def _cells(self, key: str, f: Found) -> tuple:
        i = f.instance
        flag = Text("orphan", "bold red") if f.orphan else Text("")
        return ("✔" if key in self.selected else " ", i.name, f.backend.name, i.host, i.labels.role,
                i.labels.session, i.state, age(i.created_at), size(f.memory), flag)

    def visible(self) -> dict[str, Found]:
        """The listed instances that match the filter."""
        needle = self.filter_text.lower()
        if not needle:
            return dict(self.found)
        return {
            k: f for k, f in self.found.items()
            if needle in " ".join(str(c) for c in self._cells(k, f)[1:-1]).lower() + (" orphan" if f.orphan else "")
        }

    def render_rows(self) -> None:
        rows = {k: self._cells(k, f) for k, f in self.visible().items()}
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
        self.render_rows()

    @on(Input.Submitted, "#inst-filter")
    def _filter_done(self) -> None:
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
        self.table.update_cell(key, "sel", "✔" if key in self.selected else " ")
        if self.table.cursor_row < self.table.row_count - 1:
            self.table.move_cursor(row=self.table.cursor_row + 1)

    def _confirm_destroy(self, title: str, targets: list[Target]) -> None:
        lines = [f"{t.instance.name}  {t.backend.name}@{t.instance.host}  role={t.instance.labels.role}  "
                 f"session={t.instance.labels.session}  state={t.instance.state}" for t in targets]

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
        """Destroy every instance of the session under the cursor, once that session has gone."""
        key = self.cursor_key()
        if key is None or key not in self.found:
            self.notify("no instance under the cursor", severity="warning")
            return
        sid = self.found[key].instance.labels.session
        if session_is_running(sid):
            self.notify(f"session {sid} is running: abort it instead of cleaning up", severity="warning")
            return
        targets = [Target(f.backend, f.instance, "orphan of a session that is not running")
                   for f in self.found.values() if f.instance.labels.session == sid]
        self._confirm_destroy(f"Clean up {len(targets)} orphan(s) of session {sid}?", targets)

    async def _destroy(self, targets: list[Target]) -> None:
        self.status(f"destroying {len(targets)} instance(s)...")
        recording = not getattr(self.app, "run_active", False)
        db = self.db_path if recording else Path("/nonexistent/labtui-console-not-recorded")
        report = await run_cleanup(CleanupPlan(targets=targets), db)
        message = f"destroyed {report.destroyed}, failed {report.failed}"
        if not recording:
            message += " (not recorded: a run in this console holds the store)"
        self.notify(message, severity="error" if report.failed else "information")
        for error in report.errors:
            self.notify(error, severity="error", timeout=10)
        self.selected -= {t.backend.name + ":" + t.instance.host + ":" + t.instance.name for t in targets}
        await self._refresh()
        self.status(message)
