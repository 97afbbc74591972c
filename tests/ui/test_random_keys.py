"""The console survives any key at any moment: a seeded random stream of keys through Pilot.

Each seed presses its first keys right after the app starts, before the views
are imported; while they are pressed the views' import thread is held with
`textual.widgets._text_area` half-imported in `sys.modules` (the module object
exists, its `TextArea` does not yet), the state in which `LabApp._typing` once
read it and crashed.  Then keys go to every view, a quick boot-scaling run is
started on the process backend and aborted in the middle with more keys
pressed during it, and a last stretch follows.  A quit by chance (the
palette's Quit; during the run, with `t` or `l` in the quit question) starts a
new console for the remaining keys.  A failure names its seed and the last keys pressed.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import random
import string
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from pilot_wait import wait_for
from test_console import SIZE, destroy_session, quick_suite

from labtui.ui.tabs import RUN, TABS, Tab

SEEDS = (1, 2, 3, 4, 5)
#: The keys a user might press anywhere; all letters but q, which quits when no run is active (each seed
#: would spend most of its time starting the console again; tests/ui/test_console.py quits with q from every view).
KEYS = (*(c for c in string.ascii_lowercase if c != "q"), *string.digits, "tab", "enter", "escape", "up", "down", "left", "right",
        "pagedown", "ctrl+p", "question_mark", "slash")
#: What a terminal sends as the character of the keys that are not one character long.
CHARS = {"tab": "\t", "enter": "\r", "escape": "\x1b", "question_mark": "?", "slash": "/"}
#: Keys that can open the start dialog (s in the Run view, enter on the palette's "start a run").
OPENS_DIALOG = frozenset({"s", "enter"})
PACE_S = 0.01
TEXT_AREA = "textual.widgets._text_area"
#: Keys pressed while the views' import is held, then per stretch (each view, during the run, after it).
BEFORE_VIEWS, PER_VIEW, DURING_RUN, AFTER_RUN = 40, 20, 50, 30


@pytest.fixture
def lab(lab: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tier's store path and dirs (tests/ui/conftest.py), the working directory (reports, screenshots)
    in tmp too, and no display to open."""
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.chdir(tmp_path)
    return lab


@pytest.fixture
def ours(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The sessions this test starts; the Instances view lists only their instances.

    Random `d` `y` and `c` `y` really destroy what they select: listing the
    instances of other tests running on this machine would let them destroy
    those.  Only the process backend is asked (the others' listings are
    host-wide too).
    """
    import labtui.ui.instances_view
    import labtui.ui.model.inventory

    sessions: set[str] = set()
    listing = labtui.ui.instances_view.inventory

    async def inventory_of_ours(backends):
        found, notes = await listing(backends)
        return [f for f in found if f.instance.labels.session in sessions], notes

    monkeypatch.setattr(labtui.ui.model.inventory, "backend_names", lambda: ["process"])
    monkeypatch.setattr(labtui.ui.instances_view, "inventory", inventory_of_ours)
    yield sessions


@pytest.fixture
def import_held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Hold the views' import thread, with the TextArea module half-imported, until the event is set."""
    from labtui.ui.app import LabApp

    release = threading.Event()
    load = LabApp._import_views

    def held(self: LabApp) -> None:
        import textual.widgets

        real = sys.modules.get(TEXT_AREA)
        spec = importlib.machinery.PathFinder.find_spec(TEXT_AREA, list(textual.widgets.__path__))
        assert spec is not None and spec.loader is not None
        half = importlib.util.module_from_spec(spec)  # as the import machinery has it before running the module
        spec._initializing = True  # type: ignore[attr-defined]
        sys.modules[TEXT_AREA] = half
        try:
            release.wait(120)
        finally:
            if real is None:
                sys.modules.pop(TEXT_AREA, None)
            else:
                sys.modules[TEXT_AREA] = real
        load(self)

    monkeypatch.setattr(LabApp, "_import_views", held)
    return release


class Keys:
    """A seeded stream of keys typed into the console, with the trace a failure reports.

    Keys arrive as a terminal sends them, PACE_S apart, whether or not the
    console has handled the previous ones (Pilot's press would wait for the
    process to idle after each: up to 2 s while a run or an import works).
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.pressed: list[str] = []

    async def press(self, app, pilot, count: int) -> None:
        """Type count random keys while the app runs; a start dialog opened by chance is cancelled."""
        from textual import events

        from labtui.ui.start_dialog import StartDialog

        for _ in range(count):
            for _ in range(5):  # the planned run is the only one: a dialog opened by chance is cancelled
                if not (app.is_running and isinstance(app.screen, StartDialog)):
                    break
                self.pressed.append("escape")
                await pilot.press("escape")
            if not app.is_running:
                return
            key = self.rng.choice(KEYS)
            self.pressed.append(key)
            app.post_message(events.Key(key, CHARS.get(key, key if len(key) == 1 else None)))
            await asyncio.sleep(PACE_S)
            if key in OPENS_DIALOG:  # handled before the next key, which must not go into a dialog
                await pilot.pause(0)
        await pilot.pause(0)


async def close_screens(app, pilot) -> None:
    """Back to the main screen: close the help, the palette, a question or a dialog with esc.

    A screen just pushed holds keys until it has settled (labtui.ui.keygate), so each esc is given up to a
    second to act before the next: on a loaded machine ten at once were all still held when the test looked."""
    for _ in range(10):
        if app.screen is app.screen_stack[0] or not app.is_running:
            return
        shown = app.screen
        await pilot.press("escape")
        for _ in range(20):
            if app.screen is not shown or not app.is_running:
                break
            await pilot.pause(0.05)
    if app.is_running and app.screen is not app.screen_stack[0]:
        raise AssertionError(f"esc did not close {app.screen!r}")


async def start_quick_run(app, pilot, sessions: set[str]) -> None:
    """boot-scaling --profile quick on the process backend, manual stepping, with steps raised to 40 so
    that a random `a` (auto) cannot finish it before it is aborted."""
    from textual.widgets import Input, RadioButton, Select

    from labtui.ui.start_dialog import StartDialog

    await close_screens(app, pilot)
    app.show(RUN)
    await pilot.press("s")
    await wait_for(pilot, lambda: isinstance(app.screen, StartDialog), 10, "the start dialog")
    dialog = app.screen
    await wait_for(pilot, lambda: dialog.query_one("#backend", Select).value == "process", 30, "the backend check")
    dialog.query_one("#suite-file", Input).value = str(quick_suite(app.db_path.parent))
    await wait_for(pilot, lambda: "quick" in [v for _, v in dialog.query_one("#profile", Select)._options], 10,
                   "the suite's profiles")
    dialog.query_one("#profile", Select).value = "quick"
    dialog.query_one("#steps", Input).value = "40"
    dialog.query_one("#manual", RadioButton).value = True
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: app.run_view.model.session_id != "", 30, "the session to start")
    sessions.add(app.run_view.model.session_id)


async def abort_run(app, pilot) -> None:
    """x then y, unless random keys ended the run already; wait for its teardown."""
    from labtui.ui.modals import ConfirmScreen

    await close_screens(app, pilot)
    view = app.run_view
    if view.active:
        app.show(RUN)
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen) or not view.active, 10, "the question")
        if isinstance(app.screen, ConfirmScreen):
            await pilot.press("y")
    await wait_for(pilot, lambda: view.caught_up, 60, "the run's teardown")


async def drive(keys: Keys, lab: Path, sessions: set[str], release: threading.Event) -> None:
    """The seed's whole stream: the console is restarted whenever the keys quit it."""
    from textual.app import App

    from labtui.ui.app import LabApp

    plan: list[Tab | str] = [*TABS, "4", "run", "abort", "after"]
    while plan:
        app = LabApp(lab, idle_sampling=False)
        async with App.run_test(app, size=SIZE) as pilot:  # Textual's own: it does not wait for the views
            await keys.press(app, pilot, BEFORE_VIEWS)  # before the first frame, during the views' import
            release.set()
            await wait_for(pilot, lambda app=app: app.views_loaded.is_set() or not app.is_running, 120, "the views")
            while plan and app.is_running:
                stretch = plan.pop(0)
                if isinstance(stretch, Tab) or stretch == "4":
                    await close_screens(app, pilot)
                    if stretch == "4":
                        app.action_sql()
                    else:
                        app.show(stretch)
                    await keys.press(app, pilot, PER_VIEW)
                elif stretch == "run":
                    await start_quick_run(app, pilot, sessions)
                    await keys.press(app, pilot, DURING_RUN)
                elif stretch == "abort":
                    await abort_run(app, pilot)
                elif stretch == "after":
                    await keys.press(app, pilot, AFTER_RUN)
            if app.is_running:
                await close_screens(app, pilot)
                if app.run_view.active:
                    await abort_run(app, pilot)
                app.exit(0)
        assert app.return_code in (0, None), f"the console exited with {app.return_code}"


@pytest.mark.parametrize("seed", SEEDS)
async def test_random_keys_from_before_the_first_frame(seed: int, lab: Path, ours: set[str],
                                                      import_held: threading.Event) -> None:
    from labtui.store import list_sessions

    keys = Keys(seed)
    try:
        await drive(keys, lab, ours, import_held)
    except BaseException as exc:
        raise AssertionError(f"seed {seed}, after {len(keys.pressed)} keys ending {keys.pressed[-15:]}: "
                             f"{type(exc).__name__}: {exc}") from exc
    finally:
        for session in ours:
            await destroy_session(session)
    assert ours, f"seed {seed}: the run never started"
    status = dict(list_sessions(lab).select("session_id", "status").iter_rows())
    assert all(status.get(s) not in (None, "running") for s in ours), f"seed {seed}: {status}"


@pytest.mark.parametrize("seed", (1, 2))
async def test_the_palette_survives_keys_faster_than_its_search(seed: int, lab: Path) -> None:
    """ctrl+p, letters, page keys and esc as fast as they come: the palette's search worker and timers
    outlive it, and its list pages before it is laid out (KeyError in both seeds without labtui.ui.palette)."""
    from textual import events

    from labtui.ui.app import LabApp
    from labtui.ui.palette import Palette

    rng = random.Random(seed)
    app = LabApp(lab, idle_sampling=False)
    opened = 0
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(150):
            key = rng.choice(("ctrl+p", "escape", "o", "z", "a", "pagedown", "pageup"))
            app.post_message(events.Key(key, CHARS.get(key, key if len(key) == 1 else None)))
            await asyncio.sleep(rng.choice((0, 0.005, 0.01, 0.03, 0.06)))
            opened += isinstance(app.screen, Palette)
        await pilot.pause()
        assert app.is_running and opened > 0, f"seed {seed}"
