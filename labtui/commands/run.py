"""`labtui run SUITE [--host H]...`: run a suite headless, record it, print a summary table.

With several hosts the same experiment runs on each at once, one session per
host (its results carry the host's name), all recorded in the same store.
"""

from __future__ import annotations

import asyncio
import signal
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from labtui.commands.common import DEFAULT_BACKEND, UsageError, backend_from, db_path, host_from
from labtui.liveness import LivenessError, lock_dir
from labtui.commands.render import render_summary
from labtui.engine import SessionRunner, StepGate
from labtui.events import Event, Result, SessionEnded, StepEnded, StepStarted
from labtui.reconcile import StoreView, read_store_quietly, reconcile_before_run
from labtui.store import StoreError, StoreWriter
from labtui.suites import SuiteError, load_suite

EXIT_CODES = {"completed": 0, "failed": 1, "aborted": 130}


def cmd_run(args) -> int:
    console = Console(stderr=True)
    try:
        suite = load_suite(args.suite, args.overrides, args.profile)
    except SuiteError as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        return 2
    names = list(dict.fromkeys(args.hosts or ["local"]))
    hosts = [host_from(name) for name in names]
    backend_name = args.backend or suite.backend or DEFAULT_BACKEND
    backends = [backend_from(backend_name, host) for host in hosts]
    try:
        lock_dir()  # where each session's running-lock goes: a bad one is an error before anything runs
    except LivenessError as exc:
        raise UsageError(str(exc)) from None
    path = db_path(args)
    view = read_store_quietly(path)  # read before the writer holds the file; reconciled when the run starts
    try:
        writer = StoreWriter.open(path)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    gate = StepGate(auto=not args.step)  # shared: with --step, Enter lets every waiting host go on
    runners = [SessionRunner(suite, backend, host, gate=gate) for backend, host in zip(backends, hosts)]
    try:
        statuses = asyncio.run(_run(runners, writer, console, interactive=args.step, view=view))
    except StoreError as exc:
        console.print(f"[red]store error:[/] {exc}", highlight=False)
        ids = ", ".join(r.session_id for r in runners)
        console.print(f"session {ids} stopped; what was committed before is intact in {path}")
        return 1
    for runner, status in zip(runners, statuses):
        where = f" on {runner.ctx.host.name}" if len(runners) > 1 else ""
        console.print(f"session [bold]{runner.session_id}[/]{where} {status} -> {path}", highlight=False)
        render_summary(Console(), path, runner.session_id)
    return max(EXIT_CODES.get(status, 1) for status in statuses)


async def _run(
    runners: list[SessionRunner], writer: StoreWriter, console: Console, *, interactive: bool,
    view: StoreView | None = None,
) -> list[str]:
    """Reconcile the store with each backend, run every session at once into one store; return their statuses."""
    checks = await asyncio.gather(*(reconcile_before_run(r.ctx.backend, writer.path, view) for r in runners))
    for updates, summary in checks:
        for event in updates:
            writer.add(event)
        if summary:
            console.print(f"[yellow]{summary}[/]", highlight=False)
    merged: asyncio.Queue[Event | None] = asyncio.Queue()
    forwards = [asyncio.create_task(_forward(r.bus.subscribe(durable=True), merged)) for r in runners]
    store_task = asyncio.create_task(writer.consume(merged))
    progress_queues = [r.bus.subscribe() for r in runners]
    run_tasks = [asyncio.create_task(r.run()) for r in runners]
    loop = asyncio.get_running_loop()
    gate = runners[0].ctx.gate
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, _stopper(gate, run_tasks, console))
    side = [asyncio.create_task(_show_progress(progress_queues, runners, console))]
    if interactive:
        side.append(asyncio.create_task(_prompt_between_steps(gate, run_tasks)))
    try:
        statuses = list(await asyncio.gather(*run_tasks))
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await asyncio.gather(*forwards)
        merged.put_nowait(None)
        await store_task
        for task in side:
            task.cancel()
        await asyncio.gather(*side, return_exceptions=True)
        await asyncio.gather(*(r.ctx.host.close() for r in runners))
    return statuses


async def _forward(source: asyncio.Queue[Event | None], target: asyncio.Queue[Event | None]) -> None:
    """Move one session's events (checkpoints included) to the shared store queue until its end."""
    while (event := await source.get()) is not None:
        target.put_nowait(event)


def _stopper(gate: StepGate, run_tasks: list[asyncio.Task], console: Console):
    def stop() -> None:
        if not gate.aborted:
            console.print("[yellow]stopping: tearing down instances...[/]")
            gate.abort()
            for task in run_tasks:
                task.cancel()

    return stop


async def _show_progress(queues: list[asyncio.Queue[Event | None]], runners: list[SessionRunner], console: Console) -> None:
    """One progress line per session, fed by that session's events."""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        await asyncio.gather(*(_follow(q, r, progress, console, several=len(runners) > 1) for q, r in zip(queues, runners)))


async def _follow(
    queue: asyncio.Queue[Event | None], runner: SessionRunner, progress: Progress, console: Console, *, several: bool
) -> None:
    suite = runner.ctx.suite
    host = runner.ctx.host.name
    label = f"{suite.name} @ {host}" if several else suite.name
    task = progress.add_task(label, total=suite.repetitions * suite.steps_per_repetition(), detail="starting")
    latest = ""
    while (event := await queue.get()) is not None:
        if isinstance(event, Result):
            latest = f"{event.metric}={_fmt(event.value, event.unit)}"
        elif isinstance(event, StepStarted):
            progress.update(task, detail=_detail(event.repetition, suite.repetitions, event.step, event.steps, event.background, latest))
        elif isinstance(event, StepEnded):
            progress.advance(task)
            progress.update(task, detail=_detail(event.repetition, suite.repetitions, event.step, suite.steps_per_repetition(), event.background, latest))
        elif isinstance(event, SessionEnded) and event.message:
            where = f" ({host})" if several else ""
            console.print(f"[red]{event.status}{where}:[/] {event.message}", highlight=False)


def _detail(rep: int, reps: int, step: int, steps: int, background: int, latest: str) -> str:
    return f"rep {rep}/{reps}  step {step}/{steps - 1}  background {background}  {latest}"


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1000:.2f} ms"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    return f"{value:.4g} {unit}"


async def _prompt_between_steps(gate: StepGate, run_tasks: list[asyncio.Task]) -> None:
    while not all(task.done() for task in run_tasks):
        if not gate.waiting:
            await asyncio.sleep(0.05)
            continue
        sys.stderr.write("step done: Enter = next, a = auto, q = abort > ")
        sys.stderr.flush()
        answer = (await asyncio.to_thread(sys.stdin.readline)).strip().lower()
        if answer == "q" or answer == "" and sys.stdin.closed:
            gate.abort()
        elif answer == "a":
            gate.set_auto(True)
        else:
            gate.next()
