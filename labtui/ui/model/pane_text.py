"""Rich renderables for the run view's text panes (pure: model in, Text out)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from labtui.core.events import Event, Log, Result, SessionEnded, SessionStarted, StepEnded, StepStarted
from labtui.core.units import interval, quantity, share_pct
from labtui.figures import sample_figures
from labtui.ui.model.format import pct, sparkline
from labtui.ui.model.live import HostState, RunModel

if TYPE_CHECKING:
    from labtui.session import Plan

#: The slowdown table's first columns: what a pane shows first, then the interval and n (scrolled to).  Trust
#: comes right after the level: at 80 columns the pane is 30 wide, and a figure is read with how far to trust it.
_FIRST_HEADERS = ("metric", "bg", "trust", "mean", "median slowdown", "CoV", "95% CI", "n")


def slowdown_headers() -> tuple[str, ...]:
    """The slowdown table's columns: the first ones, then the sample figures (median, ...: labtui.figures.columns).

    A pane is narrower than the CLI's run table (which puts the sample figures after the mean), so its
    columns come in the order a reader needs them: at 80 columns the level and its trust show, then the mean."""
    return (*_FIRST_HEADERS, *(f.name for f in sample_figures()))


def hosts_text(hosts: dict[str, HostState], width: int = 40, stale_s: float = 10.0) -> Text:
    """Each host: connection state, then free CPU/RAM/swap (availability, as the charts) and a sparkline."""
    out = Text()
    if not hosts:
        return Text("no host sampled yet", "dim")
    spark_w = width - 16  # what " CPU free   42% " leaves; a pane too narrow for 3 cells gets no sparkline
    for name, state in hosts.items():
        latest = state.latest
        fresh = latest is not None and time.time() - latest.ts < stale_s
        out.append(f"{name} ", "bold")
        if latest is None:  # known at once, read within a second
            out.append("○ sampling", "dim")
        else:
            out.append("● connected" if state.connected and fresh else "○ no samples", "green" if fresh else "yellow")
        if latest is not None and latest.load1 is not None:
            out.append(f"  load {latest.load1:.2f}", "dim")
        out.append("\n")
        for label, attr in (("CPU free", "cpu_avail"), ("RAM free", "mem_avail"), ("swap free", "swap_avail")):
            values = [getattr(s, attr) for s in state.samples]
            now = values[-1] if values else None
            style = "red" if now is not None and now < 0.1 else "cyan"
            out.append(f" {label:<9} {pct(now):>4} ")
            if spark_w >= 3:
                out.append(sparkline(values, spark_w), style)
            out.append("\n")
    return out


def run_text(model: RunModel, gate_state: str, waiting: str | None = None) -> Text:
    """Suite on backend@host, session, status, step k/n and repetition r/R, background, stepping; `waiting` (the
    run waits for an idle host: StepClock.waiting_text) goes after the status."""
    out = Text()
    if model.status == "idle":
        return Text("no run yet: choose a suite, then press s", "dim")
    # steps are numbered from 0 (the baseline), as the store, the CLI and the step prompt number them
    step = f"{model.position if model.position >= 0 else '-'}/{model.steps - 1 if model.steps else '-'}"
    rows = [
        ("suite", f"{model.suite} on {model.backend}@{model.host}"),
        ("session", model.session_id or "-"),
        ("status", model.status + (f": {model.message}" if model.message else "") + (f": {waiting}" if waiting else "")),
        ("step", f"{step}  rep {model.repetition}/{model.repetitions}"),  # the count first: a narrow pane cuts the end
        ("background", str(model.background)),
        ("stepping", gate_state),
    ]
    for key, value in rows:
        out.append(f"{key:<11}", "dim")
        out.append(f"{value}\n", "bold" if key in ("status", "step") else "")
    return out


def next_step_text(plan: Plan, model: RunModel) -> str:
    """What "next" will do after the model's current step, by its place in the plan (not the engine's index)."""
    if model.steps == plan.steps_per_repetition:
        return plan.next_step(model.repetition, model.position)
    # the engine runs fewer steps than planned (an isolation run skipped a placement the host lacks):
    # the plan's lines no longer match, so only the position, numbered as Plan.next_step numbers it
    if model.position + 1 < model.steps:
        return f"rep {model.repetition}/{model.repetitions}, step {model.position + 1}"
    if model.repetition < model.repetitions:
        return f"rep {model.repetition + 1}/{model.repetitions}, step 0"
    return "end of the run: teardown"


def counts_table(model: RunModel) -> Table:
    """Live instances by backend, state and role."""
    table = Table("backend", "state", "role", "n", box=None, pad_edge=False, title="instances", title_justify="left")
    counts = model.counts()
    for (backend, state, role), n in sorted(counts.items()):
        table.add_row(Text(str(backend)), Text(str(state)), Text(str(role)), str(n))
    table.add_row("", "", "total", str(sum(counts.values())), style="bold")
    return table


def slowdown_cells(row: tuple) -> tuple[Text, ...]:
    """One slowdown row (see series.slowdown_rows) as table cells: plain Text, since a DataTable reads str as markup."""
    from labtui.figures.verdict import slowdown_text  # with the statistics it needs: not before the first frame

    metric, background, unit, mean, low, high, cv, n, slow, slow_low, slow_high, flags, *extra = row
    return (Text(str(metric)), Text(str(background)), Text(flags or "", style="yellow"), Text(quantity(mean, unit)),
            Text(slowdown_text(slow, slow_low, slow_high, "%")), Text(share_pct(cv)),
            Text(interval(low, high, unit, with_unit=True)), Text(str(n)), *(Text(quantity(value, unit)) for value in extra))


def log_line(event: Event, position: int | None = None) -> Text | None:
    """An event as one log line, or None for events the log leaves out (samples, instances).

    A step is numbered by `position`, its place in the plan (RunModel.position once the event is
    applied), when given; the engine's index can skip numbers (an isolation run that skips a placement).
    """
    stamp = time.strftime("%H:%M:%S", time.localtime(event.ts))
    match event:
        case SessionStarted():
            body, style = f"session {event.session_id} started: {event.suite} on {event.backend}@{event.host}", "bold"
        case SessionEnded():
            body = f"session {event.session_id} {event.status}" + (f": {event.message}" if event.message else "")
            style = "bold green" if event.status == "completed" else "bold red"
        case StepStarted():
            step = event.step if position is None else position
            body, style = f"rep {event.repetition} step {step}/{event.steps - 1}: {event.background} background", ""
        case StepEnded():
            step = event.step if position is None else position
            body, style = f"rep {event.repetition} step {step} done" + ("" if event.ok else " (failed)"), "dim"
        case Result():
            value = quantity(event.value, event.unit)
            body, style = f"{event.benchmark}/{event.metric} = {value} at {event.background} bg", "cyan"
        case Log():
            body = f"[{event.category}] {event.message}"
            style = {"error": "red", "warning": "yellow", "debug": "dim"}.get(event.level, "")
        case _:
            return None
    return Text.assemble((stamp + " ", "dim"), (body, style))
