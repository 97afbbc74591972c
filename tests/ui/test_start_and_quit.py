"""Start-run dialog, quitting while leaving instances, and stuck instances, on the real process backend."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from pathlib import Path

from pilot_wait import wait_for
from test_console import SIZE, destroy_session, start_run

from labtui.backends.base import BackendError, Instance, InstanceSpec, Labels, open_backend
from labtui.hosts import get_host
from labtui.ui.model.inventory import STUCK_AFTER_S, Found, destroy_errors, flags


def test_flags_and_destroy_errors() -> None:
    backend = open_backend("process", get_host("local"))

    def found(state: str, age: float, orphan: bool = False) -> Found:
        return Found(backend, Instance(Labels("s", "background", "ba1"), "lab-ba1", "process", "local", state,
                                       1000.0 - age), None, orphan)

    assert flags(found("running", 500), 1000.0) == []
    assert flags(found("creating", STUCK_AFTER_S - 1), 1000.0) == []
    assert flags(found("creating", STUCK_AFTER_S + 1), 1000.0) == ["stuck creating"]
    assert flags(found("stopping", 90, orphan=True), 1000.0, "lab-ba1: boom") == ["orphan", "stuck stopping",
                                                                                   "destroy failed"]
    errors = ["lab-ba1: BackendError: refused", "lab-ba10: OSError: gone"]
    assert destroy_errors({"k1": "lab-ba1", "k10": "lab-ba10", "k2": "lab-ba2"}, errors) == {
        "k1": errors[0], "k10": errors[1]}


async def test_start_dialog_names_the_bad_key_and_lists_backends(lab: Path) -> None:
    from textual.widgets import Input, Select

    from labtui.ui.app import LabApp
    from labtui.ui.model.choices import backend_choices
    from labtui.ui.start_dialog import StartDialog

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await wait_for(pilot, lambda: isinstance(app.screen, StartDialog), 5, "the dialog")
        dialog = app.screen
        await wait_for(pilot, lambda: dialog.choices, 30, "the backend check")
        expected = {c.name: c.usable for c in await backend_choices("local")}
        assert {n: c.usable for n, c in dialog.choices.items()} == expected and expected["process"]
        assert dialog.query_one("#backend", Select).value == "process"
        await wait_for(pilot, lambda: dialog.query_one("#steps", Input).placeholder == "suite: 100", 10,
                       "the suite's defaults as placeholders")

        dialog.query_one("#per-step", Input).value = "0"
        await pilot.press("ctrl+s")
        error = dialog.query_one("#start-error")
        await wait_for(pilot, lambda: "scale.per_step" in str(error.content), 10, "the error")
        assert dialog.query_one("#per-step", Input).has_class("-invalid")
        assert not dialog.query_one("#steps", Input).has_class("-invalid")

        bad = lab.parent / "bad.toml"
        bad.write_text("[suite]\nname = \"x\"\nkind = \"scaling\"\nrepetitions = \"many\"\n")
        dialog.query_one("#per-step", Input).value = ""
        dialog.query_one("#suite-file", Input).value = str(bad)
        await wait_for(pilot, lambda: dialog.query_one("#suite", Select).disabled, 5, "the list greyed out")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "bad.toml" in str(error.content), 10, "the file error")
        assert "repetitions" in str(error.content)
        dialog.query_one("#suite-file", Input).value = ""  # the list is the choice again
        await wait_for(pilot, lambda: not dialog.query_one("#suite", Select).disabled, 5, "the list back")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, StartDialog), 5, "the dialog to close")
        assert not app.run_view.active


async def test_keep_instances_skips_the_teardown(lab: Path) -> None:
    from labtui.engine import SessionRunner, StepGate
    from labtui.suites import load_suite

    suite = load_suite("boot-scaling", ["scale.steps=2", "scale.per_step=2", "suite.repetitions=1",
                                        "sampling.quiet_timeout_s=0"])
    host = get_host("local")
    backend = open_backend("process", host)
    runner = SessionRunner(suite, backend, host, gate=StepGate(auto=False))
    events = runner.bus.subscribe()
    task = asyncio.create_task(runner.run())
    try:
        for _ in range(300):
            if runner.ctx.gate.waiting:
                break
            await asyncio.sleep(0.1)
        runner.ctx.gate.next()
        for _ in range(300):
            await asyncio.sleep(0.1)
            if runner.ctx.gate.waiting and len(runner.ctx.live) == 2:
                break
        assert len(runner.ctx.live) == 2
        runner.keep_instances = True
        task.cancel()
        assert await task == "aborted"
        left = await backend.list(runner.session_id)
        assert sorted(i.name for i in left) == sorted(i.name for i in runner.ctx.live)
        logs = []
        while not events.empty():
            event = events.get_nowait()
            if event is not None and type(event).__name__ == "Log":
                logs.append(event.message)
        assert "leaving 2 instance(s) running" in logs
    finally:
        await destroy_session(runner.session_id)


async def test_quit_leaving_instances_records_it_and_leaves_orphans(lab: Path) -> None:
    from labtui.core.liveness import session_is_running
    from labtui.store import run_sql
    from labtui.ui.app import LabApp
    from labtui.ui.modals import QuitScreen

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await start_run(app, pilot, manual=True)
        view = app.run_view
        session = view.model.session_id
        try:
            run = view.lab
            await wait_for(pilot, lambda: run.waiting_at_step, 30, "the gate")
            await pilot.press("n")
            await wait_for(pilot, lambda: view.model.steps_done == 2 and run.waiting_at_step, 30, "step 2")
            await pilot.press("q")
            await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen), 5, "the quit question")
            await pilot.press("l")
            await wait_for(pilot, lambda: not app.is_running, 30, "the app to exit")
        except BaseException:
            await destroy_session(session)
            raise
    try:
        left = await open_backend("process", get_host("local")).list(session)
        assert len(left) == 3 and not session_is_running(session)
        quit_log = run_sql(lab, f"select level, message from events where session_id = '{session}' and category = 'abort'")
        assert len(quit_log.rows) == 1 and quit_log.rows[0][0] == "warning"
        assert quit_log.rows[0][1].startswith("console quit: leaving 3 instance(s) running")
        assert all(i.name in quit_log.rows[0][1] for i in left)
        assert run_sql(lab, f"select status from sessions where session_id = '{session}'").rows == [("aborted",)]
    finally:
        await destroy_session(session)


async def test_failed_destroy_is_flagged_then_cleaned_up_with_the_session(lab: Path) -> None:
    from textual.widgets import DataTable

    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import COLUMNS, InstancesView
    from labtui.ui.modals import ConfirmScreen

    real = open_backend("process", get_host("local"))

    class Refusing(type(real)):  # the real backend, with a destroy that fails once (fault injection)
        async def destroy(self, instance: Instance, *, force: bool = False) -> None:
            raise BackendError("refused by the test")

    session = "gone-" + secrets.token_hex(3)
    await real.prepare(["sleeper"])
    made = await real.create_many([InstanceSpec(Labels(session, "background", f"ba{i}"), program="sleeper")
                                   for i in range(2)])
    app = LabApp(lab, idle_sampling=False)
    try:
        async with app.run_test(size=SIZE) as pilot:
            view = app.query_one(InstancesView)
            await pilot.press("2")
            mine = lambda: sorted(k for k, f in view.found.items() if f.instance.labels.session == session)  # noqa: E731
            await wait_for(pilot, lambda: len(mine()) == 2, 30, "the sleepers listed")
            refusing = Refusing(real.host)
            victim = view.found[mine()[0]]
            view.found[victim.key] = Found(refusing, victim.instance, victim.memory, victim.orphan)
            table = app.query_one("#inst-table", DataTable)
            table.move_cursor(row=table.get_row_index(victim.key))
            await pilot.press("ctrl+d")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the confirmation")
            await pilot.press("y")
            await wait_for(pilot, lambda: victim.key in view.failures, 30, "the failure")
            flag = COLUMNS.index("flag")
            await wait_for(pilot, lambda: "destroy failed" in str(table.get_row(victim.key)[flag]), 10, "the flag")
            assert len(await real.list(session)) == 2

            await pilot.press("c")
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), 5, "the cleanup confirmation")
            listed = str(app.screen.query_one("#confirm-list").content)
            assert all(i.name in listed for i in made) and "destroy failed" in listed and "orphan" in listed
            await pilot.press("y")
            await wait_for(pilot, lambda: mine() == [], 30, "the cleanup")
            assert await real.list(session) == [] and view.failures == {}
    finally:
        await destroy_session(session)


async def test_start_through_the_dialog_runs_on_the_chosen_backend(lab: Path) -> None:
    from labtui.ui.app import LabApp

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await start_run(app, pilot, manual=True)
        view = app.run_view
        session = view.model.session_id
        try:
            (started,) = view.lab.sessions
            assert started.backend == "process" and view.manual
            assert started.suite.scale.steps == 2 and started.suite.repetitions == 1
            await pilot.press("x", "y")
            await wait_for(pilot, lambda: view.caught_up, 30, "the abort")
        finally:
            await destroy_session(session)


async def test_a_suite_without_a_backend_brings_the_default_back(lab: Path) -> None:
    """Choosing a docker suite, then one that names no backend, runs the second on the default, not docker."""
    from textual.widgets import Select

    from labtui.ui.app import LabApp
    from labtui.ui.model.choices import BackendChoice
    from labtui.ui.start_dialog import StartDialog

    async def check(host: str) -> list[BackendChoice]:
        return [BackendChoice("process", True, "Linux with labtui-agent"), BackendChoice("docker", True, "engine 28")]

    suites = [("boot-scaling  (scaling)", "boot-scaling"), ("docker-boot-scaling  (scaling)", "docker-boot-scaling")]
    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        dialog = StartDialog(suites, ["local"], check, suite="boot-scaling")
        await app.push_screen(dialog)
        backend = dialog.query_one("#backend", Select)
        await wait_for(pilot, lambda: backend.value == "process", 10, "the default backend")
        dialog.query_one("#suite", Select).value = "docker-boot-scaling"
        await wait_for(pilot, lambda: backend.value == "docker", 10, "the docker suite's own backend")
        dialog.query_one("#suite", Select).value = "boot-scaling"
        await wait_for(pilot, lambda: backend.value == "process", 10, "the default backend back")
        backend.value = "docker"  # a person's own choice survives a change of profile
        dialog.query_one("#profile", Select).value = "quick"
        await pilot.pause(0.5)
        assert backend.value == "docker"


async def test_an_unusable_default_backend_stays_chosen_with_its_reason_and_start_refuses_it(lab: Path) -> None:
    """The dialog never switches a run to another backend unasked: process unusable stays selected, shows why,
    and Start names the reason instead of starting on docker."""
    from textual.widgets import Select, Static

    from labtui.ui.app import LabApp
    from labtui.ui.model.choices import BackendChoice
    from labtui.ui.start_dialog import StartDialog

    async def check(host: str) -> list[BackendChoice]:
        return [BackendChoice("process", False, "no C compiler"), BackendChoice("docker", True, "engine 28")]

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        dialog = StartDialog([("boot-scaling  (scaling)", "boot-scaling")], ["local"], check, suite="boot-scaling")
        await app.push_screen(dialog)
        backend = dialog.query_one("#backend", Select)
        await wait_for(pilot, lambda: bool(dialog.choices), 10, "the backend checks")
        await pilot.pause(0.3)
        assert backend.value == "process"
        await pilot.press("ctrl+s")
        await pilot.pause(0.3)
        assert app.screen is dialog  # not started
        assert "no C compiler" in str(dialog.query_one("#start-error", Static).render())


async def test_the_plan_follows_the_numbers_typed_over_the_suite(lab: Path) -> None:
    """Steps and repetitions typed in the dialog are the run's: the plan preview said 505 steps while 8 x 2
    were typed.  A number greyed out for a suite that does not scale counts for nothing."""
    from textual.widgets import Input, Select, Static

    from labtui.ui.app import LabApp
    from labtui.ui.model.choices import BackendChoice
    from labtui.ui.start_dialog import INPUT_IDS, StartDialog

    async def check(host: str) -> list[BackendChoice]:
        return [BackendChoice("process", True, "Linux with labtui-agent")]

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        suites = [("boot-scaling  (scaling)", "boot-scaling"), ("isolation-cpu  (isolation)", "isolation-cpu")]
        dialog = StartDialog(suites, ["local"], check, suite="boot-scaling")
        await app.push_screen(dialog)
        plan = dialog.query_one("#plan", Static)
        await wait_for(pilot, lambda: "5 repetition(s) of 101 step(s) = 505 steps" in str(plan.render()), 10, "the suite's plan")
        dialog.query_one(f"#{INPUT_IDS['scale.steps']}", Input).focus()
        await pilot.press("8")
        dialog.query_one(f"#{INPUT_IDS['suite.repetitions']}", Input).focus()
        await pilot.press("2")
        await wait_for(pilot, lambda: "2 repetition(s) of 9 step(s) = 18 steps" in str(plan.render()), 10, "the typed plan")
        assert "grow the background to 80, measure" in str(plan.render())
        await pilot.press("backspace", "0")  # repetitions = 0: refused by the suite loader, and said so
        await wait_for(pilot, lambda: "suite.repetitions" in str(plan.render()), 10, "the refused number named")
        await pilot.press("backspace", "3")
        dialog.query_one("#suite", Select).value = "isolation-cpu"  # it does not scale: the 8 steps are greyed out
        await wait_for(pilot, lambda: "isolation, 3 repetition(s) of 5 step(s) = 15 steps" in str(plan.render()), 10,
                       "the isolation plan, without the scaling numbers")
        assert dialog.query_one(f"#{INPUT_IDS['scale.steps']}", Input).disabled


@contextlib.asynccontextmanager
async def console_run(lab: Path, *, manual: bool):
    """The console with a run started through its dialog: (app, pilot, run view, session); nothing left after."""
    from labtui.ui.app import LabApp

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await start_run(app, pilot, manual=manual)
        view = app.run_view
        session = view.model.session_id
        try:
            yield app, pilot, view, session
        finally:
            if view.lab is not None:
                view.lab.abort("test over")
                await wait_for(pilot, lambda: not view.active, 60, "the run's teardown")
            await destroy_session(session)


async def test_the_sql_view_answers_while_the_consoles_own_run_waits_at_a_step(lab: Path) -> None:
    """The run records into its journal and feeds the store between steps, so the store is free for the
    console's own queries; once a query was refused while a run in this console was going."""
    from textual.widgets import DataTable, TextArea

    async with console_run(lab, manual=True) as (app, pilot, view, session):
        run = view.lab
        await wait_for(pilot, lambda: run.waiting_at_step and view.model.steps_done == 1, 60, "the first step's gate")
        await pilot.press("3")
        await wait_for(pilot, lambda: app.query_one("#sessions", DataTable).row_count == 1, 30, "the session")
        editor = app.query_one("#sql", TextArea)
        editor.text = f"select count(*) from steps where session_id = '{session}' and ended_at is not null"
        editor.focus()
        await pilot.press("ctrl+r")
        await wait_for(pilot, lambda: app.query_one("#result").row_count == 1, 30, "the answer")
        assert app.query_one("#result").get_row_at(0) == [1]
        assert run.waiting_at_step and view.active  # the run still waits at its step


async def test_a_manual_runs_wait_for_next_is_recorded_as_the_steps_hold(lab: Path) -> None:
    """The time a person took to press n is the next step's held_s (steps table), which time estimates leave out
    of the gaps between steps; the first step, started without waiting, held nothing."""
    from labtui.store import run_sql

    async with console_run(lab, manual=True) as (app, pilot, view, session):
        run = view.lab
        await wait_for(pilot, lambda: run.waiting_at_step and view.model.steps_done == 1, 60, "the first step's gate")
        await asyncio.sleep(1.5)
        await pilot.press("1", "n")
        await wait_for(pilot, lambda: run.waiting_at_step and view.model.steps_done == 2, 60, "the second step's gate")
    held = dict(run_sql(lab, f"select step, held_s from steps where session_id = '{session}' and repetition = 1").rows)
    assert held[0] == 0.0 and 1.5 <= held[1] < 60, held


async def test_N_runs_that_many_steps_then_waits_again(lab: Path) -> None:
    async with console_run(lab, manual=True) as (app, pilot, view, session):
        run = view.lab
        await wait_for(pilot, lambda: run.waiting_at_step and view.model.steps_done == 1, 60, "the first step's gate")
        await pilot.press("1", "N")
        await pilot.press(*"x2")  # not a number: refused, nothing let through
        await pilot.press("enter")
        await pilot.pause(0.5)
        assert run.waiting_at_step and view.model.steps_done == 1 and view.steps_to_go == 0
        await pilot.press("N", "2", "enter")
        await wait_for(pilot, lambda: run.waiting_at_step and view.model.steps_done == 3, 60, "two more steps")
        await pilot.pause(1.0)
        assert run.waiting_at_step and view.model.steps_done == 3 and view.steps_to_go == 0  # waits again


async def test_ctrl_c_asks_and_a_second_one_aborts_the_consoles_run_and_tears_it_down(lab: Path) -> None:
    from labtui.store import run_sql
    from labtui.ui.modals import ConfirmScreen

    async with console_run(lab, manual=True) as (app, pilot, view, session):  # manual: it cannot end first
        await pilot.press("1", "ctrl+c")  # within the run's first moments
        assert isinstance(app.screen, ConfirmScreen) and view.active  # asked, nothing stopped yet
        await pilot.press("n")
        assert not isinstance(app.screen, ConfirmScreen) and view.active and not view.lab.stopping
        await pilot.press("ctrl+c", "ctrl+c")  # asked again; the second answers yes
        await wait_for(pilot, lambda: not view.active, 120, "the run's end")
        assert app.is_running  # ctrl+c stopped the run, not the console
    assert await open_backend("process", get_host("local")).list(session) == []
    assert run_sql(lab, f"select status, message from sessions where session_id = '{session}'").rows == [
        ("aborted", "aborted by ctrl+c")]


async def test_a_console_closed_without_q_ends_its_run_instead_of_waiting_for_ever(lab: Path) -> None:
    """The app exits while its run waits at a step (an exit not through q's question: a test's exit, a
    closed terminal's): the run is aborted and torn down, so its thread ends and the process can exit.
    Before, the run's thread waited at the gate for ever and CI's worker hung at the end of the test."""
    from labtui.store import run_sql
    from labtui.ui.app import LabApp

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await start_run(app, pilot, manual=True)
        view = app.run_view
        session, lab_run = view.model.session_id, view.lab
        await wait_for(pilot, lambda: view.lab.waiting_at_step, 60, "the first step's gate")
        app.exit(0)
    deadline = time.monotonic() + 60
    while not lab_run.outcomes and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert [o.status for o in lab_run.outcomes] == ["aborted"], "the run did not end with the console"
    assert run_sql(lab, f"select status from sessions where session_id = '{session}'").rows == [("aborted",)]
    assert await open_backend("process", get_host("local")).list(session) == []


async def test_numbers_typed_ahead_with_tab_land_in_their_own_fields(lab: Path) -> None:
    """`3 Tab 3 Tab 1` sent in one burst (a paste, tmux send-keys, a fast typist) fills steps, per step and
    repetitions.  Tab's focus move used to come after the keys already queued, so steps read 331."""
    from textual import events
    from textual.widgets import Input

    from labtui.ui.app import LabApp
    from labtui.ui.model.choices import BackendChoice, StartRequest
    from labtui.ui.start_dialog import INPUT_IDS, StartDialog

    async def check(host: str) -> list[BackendChoice]:
        return [BackendChoice("process", True, "Linux with labtui-agent")]

    app = LabApp(lab, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        dialog = StartDialog([("boot-scaling  (scaling)", "boot-scaling")], ["local"], check, suite="boot-scaling")
        started: list[StartRequest | None] = []
        await app.push_screen(dialog, started.append)
        field = {key: dialog.query_one(f"#{INPUT_IDS[key]}", Input) for key in INPUT_IDS}
        await wait_for(pilot, lambda: dialog.choices, 10, "the backend check")
        field["scale.steps"].focus()
        await pilot.pause()
        burst = [events.Key("3", "3"), events.Key("tab", "\t"), events.Key("3", "3"), events.Key("tab", "\t"),
                 events.Key("1", "1"), events.Key("ctrl+s", None)]
        for key in burst:  # all queued before the first is handled, as the terminal's driver sends them
            key.set_sender(app)
            app._driver.send_message(key)
        await wait_for(pilot, lambda: started, 10, "the dialog to start the run")
        assert [field[k].value for k in ("scale.steps", "scale.per_step", "suite.repetitions")] == ["3", "3", "1"]
        (request,) = started
        assert request is not None
        assert dict(o.split("=") for o in request.overrides) == {
            "scale.steps": "3", "scale.per_step": "3", "suite.repetitions": "1"}
