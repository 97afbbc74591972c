"""The Instances view's workbench (issue 42 item 5): the cpu column beside memory, and `s` for a shell.

Real process instances, listed by the console's own refreshes (Pilot), of a session that holds its running
lock, so that a cleanup of orphans elsewhere on the machine leaves them be; the shell in a real terminal is
tests/ui/test_shell_tmux.py.
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path

from pilot_wait import wait_for
from textual.widgets import Static

from labtui.backends.base import InstanceSpec, Labels, open_backend
from labtui.core.liveness import session_lock
from labtui.hosts import get_host

SIZE = (80, 24)


async def test_cpu_column_shows_a_busy_and_an_idle_instance_and_sorts_by_it(lab: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import COLUMNS, InstancesView

    session = "cpu-" + secrets.token_hex(3)
    backend = open_backend("process", get_host("local"))
    with session_lock(session):  # from the start: a cleanup of orphans elsewhere would end them
        busy, idle = await backend.create_many([InstanceSpec(Labels(session, "worker", "busy"), program="attack-cpu"),
                                                InstanceSpec(Labels(session, "idle", "idle"), program="sleeper")])
        app = LabApp(lab)
        try:
            async with app.run_test(size=SIZE) as pilot:
                view = app.query_one(InstancesView)
                await pilot.press("2")
                view.filter_by(session)
                keys = {f.instance.labels.instance: f.key for f in await listed(pilot, view, session)}

                def cpu(name: str) -> str:
                    return str(view.table.get_row(keys[name])[COLUMNS.index("cpu")])

                assert cpu("busy") == cpu("idle") == "-"  # one reading: no share yet
                # the automatic refresh reads again; the busy one shows a share once it got some CPU
                await wait_for(pilot, lambda: (view.cpu.share(keys["busy"]) or 0) >= 0.1, 120, "a share for the busy one")
                busy_share, idle_share = view.cpu.share(keys["busy"]), view.cpu.share(keys["idle"])
                assert idle_share is not None and busy_share is not None and idle_share <= busy_share / 10
                assert cpu("busy") == f"{busy_share * 100:.0f}%" and re.fullmatch(r"[01]%", cpu("idle"))
                # in view at 80 columns: everything up to the cpu column
                widths = [column.get_render_width(view.table) for column in view.table.ordered_columns]
                assert sum(widths[:COLUMNS.index("cpu") + 1]) <= view.table.scrollable_content_region.width

                view.paused = True  # the order below is of one listing
                await pilot.press("C")
                assert view.sort_column == "cpu" and order(view) == ["idle", "busy"]
                await pilot.press("C")
                assert view.sort_reverse and order(view) == ["busy", "idle"]
        finally:
            await backend.destroy_many([busy, idle], force=True)


async def test_shell_key_says_why_a_process_instance_has_no_shell(lab: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import InstancesView

    session = "sh-" + secrets.token_hex(3)
    backend = open_backend("process", get_host("local"))
    with session_lock(session):  # from the start: a cleanup of orphans elsewhere would end them
        (sleeper,) = await backend.create_many([InstanceSpec(Labels(session, "idle", "s0"), program="sleeper")])
        app = LabApp(lab)
        try:
            async with app.run_test(size=SIZE) as pilot:
                view = app.query_one(InstancesView)
                await pilot.press("2")
                view.filter_by(session)
                await listed(pilot, view, session)
                view.paused = True  # a refresh would write the counts over the status line
                await pilot.press("s")
                reason = (f"process: no shell in {sleeper.name}: a process instance is a process tree on host local "
                          "with no terminal of its own; e runs one command in it")
                await wait_for(pilot, lambda: [str(n.message) for n in app._notifications] == [reason], 30,
                               "the reason in a notification")
                assert " ".join(str(view.query_one("#inst-status", Static).content).split()) == reason
                assert app.screen is view.screen  # nothing opened, nothing suspended
        finally:
            await backend.destroy_many([sleeper], force=True)


async def listed(pilot, view, session: str) -> list:
    """The view's listing once it shows rows, all of the session (the filter holds its id)."""
    await wait_for(pilot, lambda: view.table.row_count and all(
        f.instance.labels.session == session for f in view.visible().values()), 60, "the session's instances listed")
    return list(view.visible().values())


def order(view) -> list[str]:
    """The instance labels of the rows, top to bottom."""
    from labtui.ui.instances_view import COLUMNS

    return [str(view.table.get_row_at(i)[COLUMNS.index("instance")]) for i in range(view.table.row_count)]
