"""The Instances view: every labtui instance on the host, select and destroy, clean up stuck and orphans.

It lists again every REFRESH_EVERY_S while it is shown (`p` pauses that), sorts
by a column (click its header, or `o`; `O` reverses), and `d` describes and `l`
shows the log of the instance under the cursor (labtui.ui.model.describe); `e` runs a
command in it (Backend.exec) where its backend can, and says in one line where
it cannot; `s` suspends the console for an interactive session in it
(Backend.shell_argv: ``docker exec -it``, ``zlogin``, ``xl console``) and says
in one line why where its backend has none.  The cpu column is the instance's
share of one CPU between the last two listings (top's %CPU), from the CPU time
its backend reports (Backend.usage_many).

An instance is flagged when it needs attention: "orphan" (no process runs its
session), "stuck <state>" (still in a transitional state past STUCK_AFTER_S),
or "destroy failed" (a destroy from this view failed; remembered until the
instance is gone).
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Vertical
from textual.coordinate import Coordinate
from textual.timer import Timer
from textual.widgets import DataTable, Input, Static

from labtui.backends.base import EXEC, BackendError
from labtui.core.liveness import session_is_running
from labtui.core.units import age, size
from labtui.hosts import HostError, get_host
from labtui.lifecycle.cleanup import CleanupPlan, Target, run_cleanup
from labtui.ui.foreground import run_in_foreground
from labtui.ui.modals import AskScreen, ConfirmScreen
from labtui.ui.model.describe import describe, instance_log, labels_line
from labtui.ui.model.format import pct
from labtui.ui.model.inventory import CpuShares, Found, destroy_errors, flags, inventory, usable_backends
from labtui.ui.rowtable import RowTable
from labtui.ui.tablesync import sync_rows
from labtui.ui.tabs import ConsoleSettings, PaletteCommand
from labtui.ui.text_screen import LogScreen, TextScreen

#: What a row shows, the columns that matter most first: at 80 columns the instance (its label: `ba12`), state,
#: age, flag, memory and cpu stay in view (with the longest flag, "orphan, stuck creating") and the rest go off the
#: right edge, the backend's full name last (labtui-<session>-<instance>: the session and instance again, 35
#: characters).
COLUMNS = ("sel", "instance", "state", "age", "flag", "memory", "cpu", "role", "session", "backend", "host", "name")
#: The rows follow the filter this long after the last typed character (10,000 rows take a while to filter).
FILTER_AFTER_S = 0.15
#: The list is refreshed this often while the view is shown and not paused (seconds).
REFRESH_EVERY_S = 3.0
#: Columns the rows can be sorted by (`o` goes through them in this order).
SORTABLE = COLUMNS[1:]
#: One key sorts by each column, as in k9s (shift and the column's letter; the same key again reverses).
SORT_KEYS = {"I": "instance", "S": "state", "A": "age", "F": "flag", "M": "memory", "C": "cpu", "R": "role",
             "E": "session", "B": "backend", "H": "host", "N": "name"}
#: Seconds a command run with `e` may take (the backend kills it after).
EXEC_TIMEOUT_S = 60.0


class InstancesView(Vertical):
    """Lists lab-labelled instances across usable backends; destroys only after confirmation."""

    DEFAULT_CSS = """
    InstancesView #inst-filter { display: none; }
    InstancesView #inst-filter.shown { display: block; }
    InstancesView #inst-table { height: 1fr; border: round $panel-lighten-2; }
    InstancesView #inst-status { height: 2; color: $text-muted; }
    """
    BINDINGS = [
        Binding("r", "refresh", "refresh", id="instances.refresh"),
        Binding("space", "toggle_select", "select", id="instances.toggle_select"),
        Binding("d", "describe", "describe", id="instances.describe"),
        Binding("l", "log", "log", id="instances.log"),
        Binding("e", "exec", "exec", id="instances.exec"),
        Binding("s", "shell", "shell", id="instances.shell"),
        Binding("ctrl+d", "destroy", "destroy", id="instances.destroy"),
        Binding("c", "cleanup", "clean session", id="instances.cleanup"),
        Binding("o", "sort_next", "sort", id="instances.sort_next"),
        Binding("O", "sort_reverse", "reverse", show=False, id="instances.sort_reverse"),
        Binding("p", "toggle_pause", "pause", id="instances.toggle_pause"),
        *(Binding(key, f"sort_column({column!r})", f"sort by {column}", show=False, id=f"instances.sort_{column}")
          for key, column in SORT_KEYS.items()),
    ]

    def __init__(self, db_path: Path, host: str, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.db_path, self.host_name = db_path, host
        self.found: dict[str, Found] = {}
        self.selected: set[str] = set()
        self.failures: dict[str, str] = {}
        self.filter_text = ""
        self.notes: list[str] = []
        #: The backends of the last listing (None before the first).
        self.backends: list[str] | None = None
        self._filter_timer: Timer | None = None
        #: The column the rows are sorted by (None: as listed) and whether the order is reversed.
        self.sort_column: str | None = None
        self.sort_reverse = False
        #: True while `p` holds the automatic refresh.
        self.paused = False
        #: The clock ages and stuck checks use (replaceable for a reproducible screen).
        self.now: Callable[[], float] = time.time
        #: Each instance's share of a CPU between the last two listings.
        self.cpu = CpuShares()

    # --- what the console asks of every view (labtui.ui.tabs.LabView) -------------------------

    #: The filter box types (an Input: the app counts Inputs already).
    TEXT_ENTRY: ClassVar[tuple[type, ...]] = ()

    @classmethod
    def for_console(cls, console: ConsoleSettings, *, id: str) -> InstancesView:
        return cls(console.db_path, console.host_name, id=id)

    def tab_shown(self) -> None:
        if not self.found:  # listed first when first shown; the automatic refresh keeps it current after
            self.action_refresh()

    def palette(self) -> list[PaletteCommand]:
        return [
            ("Instances: refresh", "r in the Instances view", self.action_refresh),
            ("Instances: destroy selected", "ctrl+d (asks first)", self.action_destroy),
            ("Instances: describe the instance under the cursor", "d", self.action_describe),
            ("Instances: log of the instance under the cursor", "l", self.action_log),
            ("Instances: run a command in the instance under the cursor", "e", self.action_exec),
            ("Instances: open a shell in the instance under the cursor", "s", self.action_shell),
            ("Instances: sort by the next column", "o (O reverses)", self.action_sort_next),
            ("Instances: pause / resume the automatic refresh", "p", self.action_toggle_pause),
            ("Instances: clean up the session's stuck and orphaned instances", "c (asks first)", self.action_cleanup),
        ]

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: any text in name, role, session, state...", id="inst-filter")
        table = RowTable(id="inst-table")
        for column in COLUMNS:
            table.add_column(column, key=column)
        yield table
        yield Static("press r to list instances", id="inst-status")

    def on_mount(self) -> None:
        self._show_title()
        #: The automatic refresh (a test showing a fixed listing pauses it).
        self.refresh_timer = self.set_interval(REFRESH_EVERY_S, self._refresh_if_shown)

    def _show_title(self) -> None:
        sort = (f" · sorted by {self.sort_column}{' (reversed)' if self.sort_reverse else ''}"
                if self.sort_column else "")
        every = "paused (p resumes)" if self.paused else f"refresh every {REFRESH_EVERY_S:g} s (p pauses)"
        self.table.border_title = f"instances · {every}{sort}"

    @property
    def table(self) -> DataTable:
        return self.query_one("#inst-table", DataTable)

    def status(self, message: str) -> None:
        """Show a line under the table as plain text (names and errors may hold '[/]')."""
        self.query_one("#inst-status", Static).update(Text(message))

    # --- listing ----------------------------------------------------------------------

    def action_refresh(self) -> None:
        self.status("listing instances...")
        self._list_again()

    def _refresh_if_shown(self) -> None:
        """List again, unless paused, hidden, or a listing or destroy is still going."""
        if self.paused or not self.is_on_screen or self.app.screen is not self.screen:
            return
        if any(w.group in ("inventory", "destroy") and w.is_running for w in self.workers):
            return
        self._list_again()

    def action_toggle_pause(self) -> None:
        """p: hold or resume the automatic refresh (the table's border says which)."""
        self.paused = not self.paused
        self._show_title()

    @work(group="inventory", exclusive=True, exit_on_error=False)
    async def _list_again(self) -> None:
        """List in a worker that replaces a listing still going (its coroutine is made when it runs)."""
        await self._refresh()

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
        self.backends, self.notes = backends, notes
        self.cpu.update(found)
        self.render_rows()

    def _show_counts(self) -> None:
        """The status line: what the filter shows (of how many listed), orphaned, stuck and failed among them."""
        now = self.now()
        shown = self._visible_rows(now)
        flagged = [self.flags(k, self.found[k], now) for k in shown]
        orphans = sum("orphan" in fl for fl in flagged)
        stuck = sum(any(x.startswith("stuck") for x in fl) for fl in flagged)
        failed = sum(k in self.failures for k in shown)
        count = f"{len(shown)} of {len(self.found)} instance(s) shown" if self.filter_text else \
            f"{len(self.found)} instance(s)"
        self.status(f"{count}: {orphans} orphaned, {stuck} stuck, {failed} failed destroy"
                    f" · backends: {', '.join(self.backends or []) or 'none'}"
                    + ("\n" + "; ".join(self.notes) if self.notes else ""))

    def flags(self, key: str, f: Found, now: float) -> list[str]:
        return flags(f, now, self.failures.get(key))

    def _cells(self, key: str, f: Found, now: float) -> tuple:
        i = f.instance
        texts = {"sel": "✔" if key in self.selected else " ", "instance": i.labels.instance, "name": i.name,
                 "state": i.state,
                 "age": age(i.created_at, now), "role": i.labels.role, "memory": size(f.memory),
                 "cpu": pct(self.cpu.share(key)),
                 "backend": f.backend.name, "host": i.host, "session": i.labels.session}
        flag = Text(", ".join(self.flags(key, f, now)), "bold red")
        # a str cell would be read as markup
        return tuple(flag if column == "flag" else Text(str(texts[column])) for column in COLUMNS)

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
            self._sort()
        if self.backends is not None:
            self._show_counts()

    # --- sorting ----------------------------------------------------------------------------

    def _sort_value(self, key: str, column: str) -> tuple:
        """What a row sorts by in a column: ages, memory and cpu by their numbers, the rest by text."""
        f = self.found.get(key)
        if f is None:
            return (1, "")
        if column == "age":
            return (0, -(f.instance.created_at or 0.0))
        if column == "memory":
            return (0, f.memory if f.memory is not None else -1)
        if column == "cpu":
            share = self.cpu.share(key)
            return (0, share if share is not None else -1.0)
        cells = self._cells(key, f, self.now())
        return (0, str(cells[COLUMNS.index(column)]).lower())

    def _sort(self) -> None:
        column = self.sort_column
        if column is None or self.table.row_count == 0:
            return
        table = self.table
        cursor = self.cursor_key()
        # the key function gets the row's (backend, host, name) cells: the row key is made of them
        table.sort("backend", "host", "name", reverse=self.sort_reverse,
                   key=lambda cells: self._sort_value(":".join(str(c) for c in cells), column))
        if cursor is not None and cursor in table.rows:
            table.move_cursor(row=table.get_row_index(cursor), animate=False)

    def sort_by(self, column: str, reverse: bool = False) -> None:
        """Sort the rows by a column (kept across refreshes)."""
        self.sort_column, self.sort_reverse = column, reverse
        self._sort()
        self._show_title()

    def action_sort_next(self) -> None:
        """o: sort by the next column."""
        now = SORTABLE.index(self.sort_column) if self.sort_column in SORTABLE else -1
        self.sort_by(SORTABLE[(now + 1) % len(SORTABLE)])

    def action_sort_column(self, column: str) -> None:
        """Shift and a column's letter (SORT_KEYS): sort by that column; again, the other way."""
        self.sort_by(column, reverse=self.sort_column == column and not self.sort_reverse)

    def action_sort_reverse(self) -> None:
        """O: reverse the order (sorting by name when nothing is sorted yet)."""
        self.sort_by(self.sort_column or "name", not self.sort_reverse)

    @on(DataTable.HeaderSelected, "#inst-table")
    def _header_clicked(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column in SORTABLE:
            self.sort_by(column, reverse=self.sort_column == column and not self.sort_reverse)

    # --- filter -----------------------------------------------------------------------------

    def action_filter(self) -> None:
        box = self.query_one("#inst-filter", Input)
        box.add_class("shown")
        box.focus()

    def filter_by(self, text: str) -> None:
        """Show only the rows holding `text` (a session id, from the Sessions view's `i`), the filter box saying so."""
        box = self.query_one("#inst-filter", Input)
        box.value = text
        box.add_class("shown")
        self.filter_text = text
        self.render_rows()
        self.table.focus()

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

    # --- describe and log ----------------------------------------------------------------------

    def _under_cursor(self) -> Found | None:
        key = self.cursor_key()
        if key is None or key not in self.found:
            self.notify("no instance under the cursor", severity="warning")
            return None
        return self.found[key]

    def action_describe(self) -> None:
        """d: the instance under the cursor as listed, and its rows in the store, in a window."""
        found = self._under_cursor()
        if found is not None:
            self.run_worker(self._describe(found), group="describe", exit_on_error=False)

    async def _describe(self, found: Found) -> None:
        text = await asyncio.to_thread(describe, found, self.db_path)
        self.app.push_screen(TextScreen(f"describe {found.instance.name}", text))

    def action_log(self) -> None:
        """l: the log or console output of the instance under the cursor, where its backend keeps one, followed live."""
        found = self._under_cursor()
        if found is not None:
            self.run_worker(self._log(found), group="log", exit_on_error=False)

    async def _log(self, found: Found) -> None:
        async def read() -> str:
            try:
                return await instance_log(found)
            except (BackendError, OSError) as exc:
                return f"cannot read the log: {exc}"

        title = f"log of {found.instance.name} ({found.backend.name}) · {labels_line(found.instance)}"
        self.app.push_screen(LogScreen(title, await read(), read))

    # --- exec ----------------------------------------------------------------------------------

    def action_exec(self) -> None:
        """e: ask for a command and run it in the instance under the cursor, where its backend can."""
        found = self._under_cursor()
        if found is None:
            return
        backend, instance = found.backend, found.instance
        if EXEC not in backend.capabilities:
            why = f": {backend.exec_hint}" if backend.exec_hint else ""
            self.notify(f"the {backend.name} backend cannot run commands in {instance.name}{why}", severity="error",
                        markup=False, timeout=10)
            return

        def answered(command: str | None) -> None:
            if command:
                self.run_command(found, command)

        self.app.push_screen(AskScreen(f"run in {instance.name} ({backend.name})", placeholder="a command, e.g. ps -ef",
                                       hint=f"split as a shell would; killed after {EXEC_TIMEOUT_S:g} s"), answered)

    def run_command(self, found: Found, command: str) -> None:
        """Run one command line in an instance; its output is shown in a window, a failure in one line."""
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            self.notify(f"cannot split the command {command!r}: {exc}", severity="error", markup=False)
            return
        if argv:
            self.run_worker(self._exec(found, argv), group="exec", exit_on_error=False)

    async def _exec(self, found: Found, argv: list[str]) -> None:
        name, shown = found.instance.name, shlex.join(argv)
        try:
            result = await found.backend.exec(found.instance, argv, timeout=EXEC_TIMEOUT_S)
        except BackendError as exc:
            self.notify(f"{name}$ {shown}: {exc}", severity="error", markup=False, timeout=10)
            return
        self.app.push_screen(TextScreen(f"{name}$ {shown} · exit {result.returncode} · {result.duration_s:.2f} s",
                                        exec_text(result.stdout, result.stderr)))

    # --- shell ----------------------------------------------------------------------------------

    def action_shell(self) -> None:
        """s: suspend the console for an interactive session in the instance under the cursor, where its backend
        has one (Backend.shell_argv); say why in one line where it has none."""
        found = self._under_cursor()
        if found is not None:
            self.run_worker(self._shell(found), group="shell", exclusive=True, exit_on_error=False)

    async def _shell(self, found: Found) -> None:
        name = found.instance.name
        self.status(f"opening a shell in {name}...")
        try:
            argv = await found.backend.shell_argv(found.instance)
        except (BackendError, HostError) as exc:
            self.say(f"{found.backend.name}: {exc}", error=True)
            return
        try:
            with self.app.suspend():
                print(f"labtui: {shlex.join(argv)}\n(the console comes back when it ends)", flush=True)
                code = run_in_foreground(argv)
        except SuspendNotSupported:
            self.say(f"cannot open a shell in {name} here: this terminal cannot be handed over", error=True)
            return
        except OSError as exc:
            self.say(f"cannot run {argv[0]} for a shell in {name}: {exc}", error=True)
            return
        self.say(f"the shell in {name} ended (exit {code})", error=code != 0)

    def say(self, message: str, *, error: bool = False) -> None:
        """Put one line in the status line and in a notification (kept 10 s)."""
        self.status(message)
        self.notify(message, severity="error" if error else "information", markup=False, timeout=10)

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


def exec_text(stdout: str, stderr: str) -> str:
    """A command's output as shown: its stdout, then its stderr under a rule (when it wrote any)."""
    parts = [stdout.rstrip("\n")] if stdout else []
    if stderr:
        parts.append("--- stderr ---\n" + stderr.rstrip("\n"))
    return "\n".join(parts) or "(no output)"


def _key(target: Target) -> str:
    return f"{target.backend.name}:{target.instance.host}:{target.instance.name}"
