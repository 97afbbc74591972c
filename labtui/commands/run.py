"""`labtui run SUITE`: run a suite headless, record it, print a summary table."""

from __future__ import annotations

import asyncio
import signal
import sys

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from labtui.commands.common import DEFAULT_BACKEND, UsageError, backend_from, db_path, host_from
from labtui.commands.render import render_summary
from labtui.engine import SessionRunner, StepGate
from labtui.events import Event, Result, SessionEnded, StepEnded, StepStarted
from labtui.store import StoreError, StoreWriter
from labtui.suites import SuiteError, load_suite

EXIT_CODES = {"completed": 0, "failed": 1, "aborted": 130}


def cmd_run(args) -> int:
    console = Console(stderr=True)
    try:
        suite = load_suite(args.suite, args.overrides)
    except SuiteError as exc:
        console.print(f"[red]error:[/] {exc}", highlight=False)
        return 2
    host = host_from(args.host)
    backend = backend_from(args.backend or suite.backend or DEFAULT_BACKEND, host)
    path = db_path(args)
    try:
        writer = StoreWriter.open(path)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    gate = StepGate(auto=not args.step)
    runner = SessionRunner(suite, backend, host, gate=gate)
    try:
        status = asyncio.run(_run(runner, writer, console, interactive=args.step))
    except StoreError as exc:
        console.print(f"[red]store error:[/] {exc}", highlight=False)
        console.print(f"session {runner.session_id} stopped; what was committed before is intact in {path}")
        return 1
    console.print(f"session [bold]{runner.session_id}[/] {status} -> {path}", highlight=False)
    render_summary(Console(), path, runner.session_id)
    return EXIT_CODES.get(status, 1)


async def _run(runner: SessionRunner, writer: StoreWriter, console: Console, *, interactive: bool) -> str:
    store_queue = runner.bus.subscribe(durable=True)
    progress_queue = runner.bus.subscribe()
    store_task = asyncio.create_task(writer.consume(store_queue))
    run_task = asyncio.create_task(runner.run())
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, _stopper(runner, run_task, console))
    side = [asyncio.create_task(_show_progress(progress_queue, runner, console))]
    if interactive:
        side.append(asyncio.create_task(_prompt_between_steps(runner.ctx.gate, run_task)))
    try:
        status = await run_task
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
        await store_task
        for task in side:
            task.cancel()
        await asyncio.gather(*side, return_exceptions=True)
        await runner.ctx.host.close()
    return status


def _stopper(runner: SessionRunner, run_task: asyncio.Task, console: Console):
    def stop() -> None:
        if not runner.ctx.gate.aborted:
            console.print("[yellow]stopping: tearing down instances...[/]")
            runner.ctx.gate.abort()
            run_task.cancel()

    return stop


async def _show_progress(queue: asyncio.Queue[Event | None], runner: SessionRunner, console: Console) -> None:
    suite = runner.ctx.suite
    total = suite.repetitions * suite.steps_per_repetition()
    latest = ""
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[detail]}"),
        TimeElapsedColumn(),
        console=console,
    ) as progress:
        task = progress.add_task(suite.name, total=total, detail="starting")
        while (event := await queue.get()) is not None:
            if isinstance(event, Result):
                latest = f"{event.metric}={_fmt(event.value, event.unit)}"
            elif isinstance(event, StepStarted):
                progress.update(task, detail=_detail(event.repetition, suite.repetitions, event.step, event.steps, event.background, latest))
            elif isinstance(event, StepEnded):
                progress.advance(task)
                progress.update(task, detail=_detail(event.repetition, suite.repetitions, event.step, suite.steps_per_repetition(), event.background, latest))
            elif isinstance(event, SessionEnded) and event.message:
                console.print(f"[red]{event.status}:[/] {event.message}", highlight=False)


def _detail(rep: int, reps: int, step: int, steps: int, background: int, latest: str) -> str:
    return f"rep {rep}/{reps}  step {step}/{steps - 1}  background {background}  {latest}"


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1000:.2f} ms"
    if unit == "bytes":
        return f"{value / 2**20:.1f} MiB"
    return f"{value:.4g} {unit}"


async def _prompt_between_steps(gate: StepGate, run_task: asyncio.Task) -> None:
    while not run_task.done():
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
