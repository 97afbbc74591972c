"""The console's tabs, each with the view it holds.

A view class is named by its module path: only the Run view is imported for the first frame, the
others in a thread after it (labtui.ui.app.LabApp._import_views).  Code that needs a view asks for it
by its Tab (``app.view(SESSIONS)``), never by a pane id typed as a string.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

#: A command of the palette (ctrl+p): its title, the keys that do it, what it calls.
PaletteCommand = tuple[str, str, Callable[[], object]]


class ConsoleSettings(Protocol):
    """What a view is made from: the console's store, backend and host (LabApp has them)."""

    db_path: Path
    backend_name: str
    host_name: str
    idle_sampling: bool


class LabView(Protocol):
    """What the console asks of every view, so that `labtui.ui.app` has no branch per view.

    A new view: its module (a class with these), a Tab below, and its tests.
    """

    #: Widgets of the view that take typed text (the global letter and digit keys are off in them).
    TEXT_ENTRY: ClassVar[tuple[type, ...]]

    @classmethod
    def for_console(cls, console: ConsoleSettings, *, id: str) -> LabView:
        """The view for `console`, with the widget id `id`."""
        ...

    def tab_shown(self) -> None:
        """Its tab was shown (or it was mounted while its tab was): bring what it shows up to date."""
        ...

    def palette(self) -> list[PaletteCommand]:
        """Its commands in the palette."""
        ...


@dataclass(frozen=True, slots=True)
class Tab:
    """One tab: its pane, title, the view class it holds and the widget that takes the focus when it is shown."""

    name: str  # the command that shows it (`:run`) and its key binding's id (`app.run`)
    pane_id: str  # the TabPane's id, and what the `show_tab(...)` key bindings name
    title: str
    module: str
    class_name: str
    view_id: str
    focus: str  # a selector inside the view


RUN = Tab("run", "tab-run", "Run", "labtui.ui.run_view", "RunView", "run-view", "#live DataTable")
INSTANCES = Tab("instances", "tab-instances", "Instances", "labtui.ui.instances_view", "InstancesView",
                "instances-view", "#inst-table")
SESSIONS = Tab("sessions", "tab-sessions", "Sessions+SQL", "labtui.ui.sessions_view", "SessionsView", "sessions-view",
               "#sessions")
#: The tabs in the order the console shows them (keys 1, 2, 3).
TABS: tuple[Tab, ...] = (RUN, INSTANCES, SESSIONS)


def tab_named(pane_id: str) -> Tab:
    """The tab of a pane id (as a `show_tab` binding or Textual's TabActivated names it)."""
    for tab in TABS:
        if tab.pane_id == pane_id:
            return tab
    raise KeyError(f"no console tab {pane_id!r}")
