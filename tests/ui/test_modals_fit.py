"""What a dialog asks always shows: an abort, destroy or quit question listing hundreds of instances keeps its
buttons on screen down to 80x24 (at 80x24 and 120x35 the list used to push them out of sight)."""

from __future__ import annotations

import pytest
from textual.app import App
from textual.screen import ModalScreen
from textual.widgets import Button

from labtui.ui.modals import ConfirmScreen, QuitScreen

LIVE = [f"labtui-sleeper-{i} (process@local)" for i in range(600)]


@pytest.mark.parametrize("size", [(80, 24), (120, 35), (160, 48)], ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("question, answers", [
    (lambda: ConfirmScreen("Abort the run?", LIVE), ("yes", "no")),
    (lambda: QuitScreen("20261127-215800-abcdef", LIVE), ("teardown", "leave", "stay")),
], ids=["confirm", "quit"])
async def test_the_answers_show_however_many_instances_are_listed(size, question, answers) -> None:
    app: App[None] = App()
    async with app.run_test(size=size) as pilot:
        screen: ModalScreen = question()
        app.push_screen(screen)
        await pilot.pause(0.2)
        for answer in answers:
            button = screen.query_one(f"#{answer}", Button)
            region = button.region
            shown, _ = screen.get_widget_at(region.x + region.width // 2, region.y + region.height // 2)
            assert shown is button, (answer, tuple(region))


async def test_the_start_dialogs_stepping_choices_show_while_focused(tmp_path, runtime_dir) -> None:
    """Tab onto the stepping choice: Textual's focus border used to take its one row, so auto and manual
    vanished while it had the focus."""
    from textual.widgets import RadioSet

    from labtui.ui.app import LabApp
    from labtui.ui.start_dialog import StartDialog

    app = LabApp(tmp_path / "lab.duckdb", idle_sampling=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("s")
        for _ in range(100):
            if isinstance(app.screen, StartDialog):
                break
            await pilot.pause(0.1)
        stepping = app.screen.query_one("#stepping", RadioSet)
        stepping.focus()
        await pilot.pause(0.2)
        assert app.focused is stepping
        for choice in ("auto", "manual"):
            button = stepping.query_one(f"#{choice}")
            region = button.region
            shown, _ = app.screen.get_widget_at(region.x + 1, region.y)
            assert shown is button, (choice, tuple(region), shown)
