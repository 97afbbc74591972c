"""The start-run dialog: suite (built-in or a file), profile, backend, host, overrides, stepping, and the plan.

Backends are checked on the chosen host in a worker, so the dialog opens at
once; the suite with its overrides is checked by labtui.suites.load_suite in a
thread when the user presses Start, and an error is shown next to the input
whose key it names.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Select, Static

from labtui.session import Plan, plan_for
from labtui.session.estimate import before_run_text, history
from labtui.store import StoreError
from labtui.suites import SuiteError, load_suite, suite_profiles
from labtui.suites.model import Suite
from labtui.suites.serialize import suite_to_dict
from labtui.ui.model.choices import OVERRIDE_KEYS, BackendChoice, StartRequest, overrides_from

Checker = Callable[[str], Awaitable[list[BackendChoice]]]
INPUT_IDS = {"scale.steps": "steps", "scale.per_step": "per-step", "suite.repetitions": "repetitions"}
LABELS = {"scale.steps": "steps", "scale.per_step": "per step", "suite.repetitions": "repetitions"}


class StartDialog(ModalScreen[StartRequest | None]):
    """Choose what to run and how; dismisses with a StartRequest, or None on cancel."""

    DEFAULT_CSS = """
    StartDialog { align: center middle; }
    StartDialog > VerticalScroll { width: 96; max-width: 98%; height: auto; max-height: 95%;
        border: thick $primary; background: $surface; padding: 0 2; }
    StartDialog #start-title { text-style: bold; margin-bottom: 1; }
    StartDialog .row { height: 3; }
    StartDialog .row > Label { width: 13; padding: 1 0 0 0; }
    StartDialog .row > Select { width: 1fr; }
    StartDialog .row > Input { width: 1fr; }
    StartDialog #numbers > Input { width: 1fr; }
    StartDialog #numbers > Label { width: auto; padding: 1 1 0 1; }
    StartDialog #numbers > Label:first-child { width: 13; padding: 1 0 0 0; }
    StartDialog RadioSet { layout: horizontal; width: auto; height: auto; border: none; }
    /* one row high: Textual's focus border would hide the choices; the highlighted choice shows the focus */
    StartDialog RadioSet:focus { border: none; }
    StartDialog #stepping > RadioButton { width: auto; margin-right: 2; }
    StartDialog #stepping-row { height: 1; margin: 1 0; }
    StartDialog #plan { color: $text-muted; height: auto; max-height: 6; }
    StartDialog #estimate { color: $text-muted; height: auto; }
    StartDialog #start-error { color: $error; text-style: bold; height: auto; min-height: 1; }
    StartDialog #buttons { height: 3; margin-top: 1; }
    StartDialog Button { margin-right: 2; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "cancel"),
        Binding("ctrl+s", "start", "start", priority=True),
        # Priority: the focus moves as the key arrives, so keys typed ahead of it (a paste, tmux send-keys)
        # go to the next field; a Tab that bubbles up from the field moves it after they are typed.
        Binding("tab", "app.focus_next", show=False, priority=True),
        Binding("shift+tab", "app.focus_previous", show=False, priority=True),
    ]

    def __init__(
        self,
        suites: Sequence[tuple[str, str]],
        hosts: Sequence[str],
        check: Checker,
        *,
        suite: str = "",
        backend: str = "process",
        host: str = "local",
        manual: bool = False,
        db: Path | None = None,
    ) -> None:
        super().__init__()
        self._suites, self._hosts, self._check = list(suites), list(hosts), check
        self._suite, self._backend, self._host, self._manual = suite, backend, host, manual
        self._default_backend = backend  # what a suite that names no backend runs on
        self._db = db  # the store whose past sessions estimate the run's time (none: no estimate shown)
        self._planned: tuple[Suite, Plan] | None = None  # the suite (with the numbers typed) and its plan shown
        self._new_suite = False  # a suite was chosen whose backend is not applied yet
        self.choices: dict[str, BackendChoice] = {}

    def compose(self) -> ComposeResult:
        names = [value for _, value in self._suites]
        with VerticalScroll():
            yield Label("Start a run", id="start-title")
            with Horizontal(classes="row"):
                yield Label("suite")
                yield Select(self._suites, value=self._suite if self._suite in names else Select.NULL,
                             allow_blank=True, prompt="built-in suite", id="suite")
            with Horizontal(classes="row"):
                yield Label("or file")
                yield Input(placeholder="path to a suite .toml (wins over the list)", id="suite-file")
            with Horizontal(classes="row"):
                yield Label("profile")
                yield Select([], prompt="none: the suite as written", allow_blank=True, id="profile")
            with Horizontal(classes="row"):
                yield Label("host")
                hosts = self._hosts if self._host in self._hosts else [*self._hosts, self._host]
                yield Select([(h, h) for h in hosts], value=self._host, allow_blank=False, id="host")
            with Horizontal(classes="row"):
                yield Label("backend")
                yield Select([], prompt="checking backends...", allow_blank=True, id="backend")
            with Horizontal(classes="row", id="numbers"):
                for key in OVERRIDE_KEYS:
                    yield Label(LABELS[key])
                    yield Input(placeholder="suite's", type="integer", id=INPUT_IDS[key])
            with Horizontal(id="stepping-row"):
                yield Label("stepping     ")
                with RadioSet(id="stepping"):
                    yield RadioButton("auto", value=not self._manual, id="auto")
                    yield RadioButton("manual: press n for each step", value=self._manual, id="manual")
            yield Static("", id="plan", markup=False)
            yield Static("", id="estimate", markup=False)
            yield Static("", id="start-error", markup=False)
            with Horizontal(id="buttons"):
                yield Button("Start (ctrl+s)", variant="primary", id="start")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#suite", Select).focus()
        self._check_backends(self._host)
        self._placeholders()

    # --- backends ---------------------------------------------------------------------

    @work(exclusive=True, group="check-backends", exit_on_error=False)
    async def _check_backends(self, host: str) -> None:
        choices = await self._check(host)
        self.show_backends(choices)

    def show_backends(self, choices: Sequence[BackendChoice]) -> None:
        """List backends, usable first; keep the preferred one selected, usable or not (an unusable one shows
        its reason, and Start refuses it), rather than switch the run to another backend unasked."""
        self.choices = {c.name: c for c in choices}
        ordered = sorted(choices, key=lambda c: (not c.usable, c.name))
        select = self.query_one("#backend", Select)
        select.set_options([(c.label, c.name) for c in ordered])
        usable = [c.name for c in ordered if c.usable]
        pick = self._backend if self._backend in self.choices else (usable[0] if usable else None)
        if pick is not None:
            select.value = pick
        select.prompt = "backend" if choices else "no backend found"

    @on(Select.Changed, "#backend")
    def _backend_changed(self) -> None:
        self._estimate()

    @on(Select.Changed, "#host")
    def _host_changed(self, event: Select.Changed) -> None:
        if event.value is not Select.NULL and event.value != self._host:
            self._host = str(event.value)
            self.query_one("#backend", Select).set_options([])
            self._check_backends(self._host)

    # --- suite defaults as placeholders -----------------------------------------------------

    @on(Input.Changed, "#suite-file")
    def _file_changed(self, event: Input.Changed) -> None:
        """A typed file wins over the list: the list is greyed out meanwhile, so it never reads as the choice."""
        self.query_one("#suite", Select).disabled = bool(event.value.strip())
        self._suite_changed()

    @on(Select.Changed, "#suite")
    def _suite_changed(self) -> None:
        self._new_suite = True  # kept until a run of _placeholders applies it (a newer run cancels an older)
        self._profiles()
        self._placeholders()

    @on(Select.Changed, "#profile")
    @on(Input.Changed, "#numbers Input")
    def _profile_or_numbers_changed(self) -> None:
        self._placeholders()

    @work(exclusive=True, group="suite-profiles", exit_on_error=False)
    async def _profiles(self) -> None:
        name = self._suite_name()
        try:
            names = await asyncio.to_thread(suite_profiles, name) if name else []
        except SuiteError:
            names = []
        select = self.query_one("#profile", Select)
        chosen = self._profile()
        select.set_options([(n, n) for n in names])
        if chosen in names:
            select.value = chosen  # the same suite listed again keeps its choice

    def _profile(self) -> str | None:
        value = self.query_one("#profile", Select).value
        return None if value is Select.NULL else str(value)

    @work(exclusive=True, group="suite-defaults", exit_on_error=False)
    async def _placeholders(self) -> None:
        name = self._suite_name()
        try:
            suite = await asyncio.to_thread(load_suite, name, (), self._profile()) if name else None
        except SuiteError:
            suite = None
        values: dict[str, int] = {}
        if suite is not None:
            values["suite.repetitions"] = suite.repetitions
            if suite.scale is not None:
                values.update({"scale.steps": suite.scale.steps, "scale.per_step": suite.scale.per_step})
        if suite is not None and self._new_suite:
            # a new suite brings its own backend, or the default back; a profile change keeps the choice
            self._new_suite = False
            self._backend = suite.backend or self._default_backend  # preferred once the backends are checked
            if self._backend in self.choices:
                self.query_one("#backend", Select).value = self._backend
        no_scale = suite is not None and suite.scale is None
        for key, input_id in INPUT_IDS.items():
            field = self.query_one(f"#{input_id}", Input)
            field.disabled = no_scale and key.startswith("scale.")
            field.placeholder = f"suite: {values[key]}" if key in values else ("not scaling" if field.disabled else "suite's")
        await self._show_plan(suite, name)  # after the fields: a number greyed out for this suite does not count

    async def _show_plan(self, suite, name: str) -> None:
        """What the run will do, from the suite's kind and the numbers typed over it: repetitions and the
        steps of one; a typed number the suite refuses is named instead."""
        text = ""
        self._planned = None
        overrides = overrides_from(self._typed_numbers())
        if suite is not None and overrides:
            try:
                suite = await asyncio.to_thread(load_suite, name, overrides, self._profile())
            except SuiteError as exc:
                suite, text = None, str(exc)
        if suite is not None:
            try:
                plan = plan_for(suite)
            except ValueError as exc:
                text = str(exc)
            else:
                self._planned = (suite, plan)
                shown = list(plan.steps) if len(plan.steps) <= 6 else \
                    [*plan.steps[:3], f"... {len(plan.steps) - 4} more", plan.steps[-1]]
                text = (f"plan: {suite.kind}, {plan.repetitions} repetition(s) of {len(plan.steps)} step(s) "
                        f"= {plan.total_steps} steps\n  " + "\n  ".join(shown))
        self.query_one("#plan", Static).update(text)
        self._estimate()

    @work(exclusive=True, group="estimate", exit_on_error=False)
    async def _estimate(self) -> None:
        """How long the planned run will take, by the latest session of the suite on this host and backend that
        completed with the same sizes (never an aborted or failed one, nor one of other sizes), and how much of it
        was waiting for an idle host."""
        shown = self.query_one("#estimate", Static)
        backend = self.query_one("#backend", Select).value
        shown.display = self._db is not None and self._planned is not None and backend is not Select.NULL
        if not shown.display:
            return
        assert self._db is not None and self._planned is not None
        suite, plan = self._planned
        where = f"{suite.name} on {self._host} with {backend}"
        try:
            past, passed = await asyncio.to_thread(history, self._db, suite.name, self._host, str(backend),
                                                   suite_to_dict(suite), plan)
        except StoreError as exc:
            shown.update(f"time: no estimate, the store cannot be read: {exc}")
            return
        shown.update(before_run_text(where, plan, past, passed))

    # --- start --------------------------------------------------------------------------------

    def _typed_numbers(self) -> dict[str, str]:
        """What is typed over the suite's numbers (key -> text; empty for the suite's own, and for a field
        greyed out because the suite does not scale)."""
        fields = {key: self.query_one(f"#{input_id}", Input) for key, input_id in INPUT_IDS.items()}
        return {key: field.value for key, field in fields.items() if not field.disabled}

    def _suite_name(self) -> str:
        path = self.query_one("#suite-file", Input).value.strip()
        if path:
            return path
        value = self.query_one("#suite", Select).value
        return "" if value is Select.NULL else str(value)

    def error(self, message: str, key: str | None = None) -> None:
        """Show why the run cannot start; mark the input whose key the message names."""
        for k, input_id in INPUT_IDS.items():
            self.query_one(f"#{input_id}", Input).set_class(k == key, "-invalid")
        self.query_one("#start-error", Static).update(message)

    @on(Button.Pressed, "#start")
    @on(Input.Submitted)
    def _start_pressed(self) -> None:
        self.action_start()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_start(self) -> None:
        self._validate_and_start()

    @work(exclusive=True, group="start", exit_on_error=False)
    async def _validate_and_start(self) -> None:
        name = self._suite_name()
        if not name:
            self.error("choose a built-in suite or type a suite file path")
            return
        backend = self.query_one("#backend", Select).value
        choice = self.choices.get(str(backend)) if backend is not Select.NULL else None
        if choice is None:
            self.error("choose a backend" if self.choices else "backends are still being checked")
            return
        if not choice.usable:
            self.error(f"backend {choice.name} is not usable on {self._host}: {choice.reason}")
            return
        overrides = overrides_from(self._typed_numbers())
        try:
            suite = await asyncio.to_thread(load_suite, name, overrides, self._profile())
        except SuiteError as exc:
            self.error(str(exc), exc.key)
            return
        manual = self.query_one("#manual", RadioButton).value
        self.dismiss(StartRequest(suite, choice.name, self._host, manual, tuple(overrides), self._profile()))
