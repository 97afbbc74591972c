"""`l` and `e` in the Instances view: a process instance's log, commands run in a sleeper, refusals.

Pilot tests on the process backend with real instances (a `hello` that printed its line and a
sleeper), made by the test and destroyed after it.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pilot_wait import wait_for
from test_console import destroy_session

from labtui.backends.base import Instance, InstanceSpec, Labels, open_backend
from labtui.hosts import get_host
from labtui.ui.model.inventory import Found

SIZE = (120, 40)


@pytest.fixture
async def made() -> AsyncIterator[tuple[Instance, Instance]]:
    """A `hello` (ran, printed, exited) and a sleeper, of a fresh session on the process backend."""
    backend = open_backend("process", get_host("local"))
    session = "act-" + secrets.token_hex(3)
    await backend.prepare(["sleeper", "hello"])
    hello = await backend.create(InstanceSpec(Labels(session, "worker", "hello"), program="hello"))
    sleeper = await backend.create(InstanceSpec(Labels(session, "background", "ba1"), program="sleeper"))
    try:
        yield hello, sleeper
    finally:
        await destroy_session(session)


async def open_instances(app, pilot, instances: list[Instance]):
    """The Instances view showing exactly these instances (its own refresh paused), the cursor on the first."""
    from labtui.ui.instances_view import InstancesView

    await pilot.press("2")
    view = app.query_one(InstancesView)
    await wait_for(pilot, lambda: not any(w.is_running for w in view.workers), 30, "the first listing")
    view.paused = True
    backend = open_backend("process", get_host("local"))
    view.show([Found(backend, i, None, False) for i in instances], ["process"], [])
    await pilot.pause()
    view.table.move_cursor(row=0)
    return view


async def read_window(app, pilot) -> str:
    """The text window's title and text, then close it."""
    from labtui.ui.text_screen import TextScreen

    await wait_for(pilot, lambda: isinstance(app.screen, TextScreen), 30, "the text window")
    shown = f"{app.screen.title_text}\n{app.screen.text}"
    await pilot.press("escape")
    await wait_for(pilot, lambda: not isinstance(app.screen, TextScreen), 5, "the window to close")
    return shown


async def test_l_shows_what_a_process_instance_printed(native_store: Path, made: tuple[Instance, Instance]) -> None:
    from labtui.ui.app import LabApp

    hello, _ = made
    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await open_instances(app, pilot, [hello])
        await pilot.press("l")
        shown = await read_window(app, pilot)
        assert f"log of {hello.name} (process)" in shown and shown.endswith("\nhello from labtui"), shown


async def test_e_runs_commands_in_a_sleeper(native_store: Path, made: tuple[Instance, Instance]) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.modals import AskScreen

    _, sleeper = made
    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await open_instances(app, pilot, [sleeper])
        for command, title, text in (
            ("echo hi there", "$ echo hi there · exit 0 ·", "hi there"),
            ("sh -c 'echo out; echo oops >&2; exit 3'", "exit 3", "out\n--- stderr ---\noops"),
            ("sh -c 'echo $LABTUI_INSTANCE'", "exit 0", sleeper.labels.instance),  # inside the instance: its labels
        ):
            await pilot.press("e")
            await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), 5, "the command input")
            await pilot.press(*command, "enter")
            shown = await read_window(app, pilot)
            assert f"{sleeper.name}$ " in shown and title in shown and shown.endswith("\n" + text), shown

        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, AskScreen), 5, "the command input")
        await pilot.press(*"echo 'unbalanced", "enter")
        await wait_for(pilot, lambda: any("cannot split the command" in str(n.message) for n in app._notifications),
                       5, "the refusal of an unbalanced quote")
        await pilot.press("e", "escape")  # esc cancels: nothing runs, no window
        await pilot.pause(0.3)
        assert not isinstance(app.screen, AskScreen) and app.screen is app.screen_stack[0]


async def test_e_is_refused_in_one_line_where_the_backend_cannot_exec(native_store: Path) -> None:
    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import InstancesView

    unikraft = open_backend("unikraft", get_host("local"))
    guest = Instance(Labels("act-none", "background", "ba1"), "labtui-act-none-ba1", "unikraft", "local", "running")
    app = LabApp(native_store, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        view = app.query_one(InstancesView)
        await wait_for(pilot, lambda: not any(w.is_running for w in view.workers), 30, "the first listing")
        view.paused = True
        view.show([Found(unikraft, guest, None, False)], ["unikraft"], [])
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause(0.2)
        messages = [str(n.message) for n in app._notifications]
        assert "the unikraft backend cannot run commands in labtui-act-none-ba1" in messages, messages
        assert app.screen is app.screen_stack[0]  # no input was opened


async def test_a_log_is_followed_live_until_f_stops_it() -> None:
    from textual.app import App

    from labtui.ui.text_screen import FOLLOW_S, LogScreen

    lines = ["first"]

    async def read() -> str:
        return "\n".join(lines)

    app = App()
    async with app.run_test(size=(80, 24)) as pilot:
        await app.push_screen(LogScreen("log of x", await read(), read))
        screen = app.screen
        assert isinstance(screen, LogScreen) and "following" in str(screen.query_one("ScrollableContainer").border_title)
        lines.append("second")
        await wait_for(pilot, lambda: screen.text.endswith("second"), 10 * FOLLOW_S, "the new line")
        await pilot.press("f")
        lines.append("third")
        await pilot.pause(3 * FOLLOW_S)
        assert screen.text.endswith("second") and "not following" in str(
            screen.query_one("ScrollableContainer").border_title)
        await pilot.press("f")
        await wait_for(pilot, lambda: screen.text.endswith("third"), 10 * FOLLOW_S, "the line after f again")
