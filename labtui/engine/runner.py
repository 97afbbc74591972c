"""Run one suite as a session: start, sample, run the kind, tear down, end.

The runner owns the session's life cycle and guarantees, whatever happens in
the experiment, that live instances are torn down in reverse order of creation
and that the session ends with a status: completed, failed or aborted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from collections.abc import Awaitable

from labtui.backends.base import Backend
from labtui.core.events import HostFacts, SessionEnded, SessionStarted
from labtui.core.liveness import session_lock
from labtui.core.observer import own_usage
from labtui.engine.bus import EventBus
from labtui.engine.context import RunContext
from labtui.engine.gate import Aborted, StepGate
from labtui.engine.kinds import experiment_kind
from labtui.engine.quiet import QuietWindows
from labtui.engine.worker_runs import check_worker_runs
from labtui.hosts.base import Host, HostError
from labtui.suites.model import Suite
from labtui.suites.serialize import suite_to_dict


def new_session_id() -> str:
    """A time-sortable, unique session id such as 20261121-101502-3fa9c1."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


class SessionRunner:
    """Drives one session; subscribe to `bus` before calling run()."""

    def __init__(
        self,
        suite: Suite,
        backend: Backend,
        host: Host,
        *,
        gate: StepGate | None = None,
        quiet: QuietWindows | None = None,
        session_id: str | None = None,
        tags: dict[str, str] | None = None,
        note: str = "",
    ) -> None:
        self.bus = EventBus()
        #: The user's labels and note, recorded with the session's start.
        self.tags, self.note = dict(tags or {}), note
        #: Why the session was aborted, as its end records it (a signal's name, the console's quit).
        self.abort_reason = "aborted by the user"
        self._forced = False
        self._teardown_task: asyncio.Future[None] | None = None
        self.ctx = RunContext(
            session_id=session_id or new_session_id(),
            suite=suite,
            backend=backend,
            host=host,
            bus=self.bus,
            gate=gate or StepGate(auto=True),
            quiet=quiet or QuietWindows(),
        )

    @property
    def session_id(self) -> str:
        return self.ctx.session_id

    @property
    def keep_instances(self) -> bool:
        """True leaves every instance running when the session ends (a console quit that keeps them)."""
        return self.ctx.keep_instances

    @keep_instances.setter
    def keep_instances(self, keep: bool) -> None:
        self.ctx.keep_instances = keep

    async def run(self) -> str:
        """Run the session to its end and return its final status.

        When the session cannot take its running-lock, nothing runs: the bus is
        closed (so subscribers end) and the error is raised.
        """
        with contextlib.ExitStack() as stack:
            try:
                stack.enter_context(session_lock(self.session_id))
            except BaseException:
                self.bus.close()
                raise
            return await self._run()

    async def _run(self) -> str:
        ctx = self.ctx
        status, message = "failed", ""
        self.ctx.record(
            SessionStarted(
                ctx.session_id,
                ctx.suite.name,
                ctx.suite.kind,
                ctx.backend.name,
                ctx.host.name,
                suite_to_dict(ctx.suite),
                os.getpid(),
                tags=self.tags,
                note=self.note,
            )
        )
        sampler = None
        try:
            kind = experiment_kind(ctx.suite.kind)
            check_backend_runs(ctx.suite, ctx.backend)  # LabRun.prepare() checked it too, before the session
            await self._record_facts()
            await ctx.backend.prepare(_programs(ctx.suite))
            await ctx.backend.prepare_images(_images(ctx.suite))
            sampler = asyncio.create_task(self._sample_forever())
            await _unless_lost(kind.run(ctx), sampler)
            status = "completed"
        except (Aborted, asyncio.CancelledError, KeyboardInterrupt):
            status, message = "aborted", self.abort_reason
        except Exception as exc:  # recorded, then the session ends as failed
            message = f"{type(exc).__name__}: {exc}"
            ctx.log("error", "failure", message)
        finally:
            if sampler is not None:
                sampler.cancel()
                # its failure (a lost host, a journal that cannot take a sample) was raised above already; raised
                # again here it would skip the teardown and the session's end below, and hang the run
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await sampler
            await self._end_instances()
            if self.ctx.live and not self.keep_instances:
                ctx.log("error", "teardown", f"{len(ctx.live)} instance(s) left running: "
                        f"`labtui cleanup --session {ctx.session_id}` ends them")
            self.ctx.record(SessionEnded(ctx.session_id, status, message))  # type: ignore[arg-type]
            self.bus.close()
        return status

    def abort(self, reason: str) -> None:
        """Stop at the next gate (the gate may be shared) and record reason as the session's end."""
        self.abort_reason = reason
        self.ctx.gate.abort()

    def force(self) -> None:
        """Stop waiting for an orderly teardown: force-destroy whatever is left, in parallel."""
        self._forced = True
        if self._teardown_task is not None and not self._teardown_task.done():
            self._teardown_task.cancel()

    async def _end_instances(self) -> None:
        """Tear down (shielded from the run's cancellation); force() cuts an orderly teardown short."""
        task = asyncio.ensure_future(self._teardown(force=self._forced))
        self._teardown_task = task
        while not task.done():  # a cancellation of the run itself never skips the teardown
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(task)
        if task.cancelled():
            self.ctx.log("warning", "teardown", "second interrupt: force-destroying what is left")
            await self._teardown(force=True)

    async def _teardown(self, *, force: bool) -> None:
        if self.keep_instances:
            if self.ctx.live:
                self.ctx.log("warning", "teardown", f"leaving {len(self.ctx.live)} instance(s) running")
            return
        try:
            await self.ctx.teardown(force=force)
        except Exception as exc:
            self.ctx.log("error", "teardown", f"teardown failed: {type(exc).__name__}: {exc}")

    async def _record_facts(self) -> None:
        ctx = self.ctx
        facts = await ctx.host.facts()
        isolation = await ctx.backend.isolation()  # first: it may settle what check() reports (unikraft's accelerator)
        availability = await ctx.backend.check()
        self.ctx.record(
            HostFacts(
                ctx.session_id,
                ctx.host.name,
                facts.os,
                facts.kernel,
                facts.arch,
                facts.cpu_model,
                facts.cores,
                facts.mem_total_bytes,
                ctx.backend.name,
                availability.version,
                isolation,
            )
        )
        if not availability.usable:
            raise RuntimeError(f"backend {ctx.backend.name} is not usable on {ctx.host.name}: {availability.reason}")

    async def _sample_forever(self) -> None:
        """Sample until cancelled; a lost host gets one reconnect (the host's own backoff), then HostLost."""
        ctx = self.ctx
        lost: HostError | None = None
        while True:
            try:
                async for sample in ctx.host.samples(ctx.suite.sampling.interval_s, before=ctx.quiet.until_closed):
                    if lost is not None:
                        ctx.log("info", "host-reconnected", f"host {ctx.host.name} reconnected; sampling again")
                        lost = None
                    ctx.record_sample(sample)
                    ctx.record(own_usage(ctx.helper_pids).sample(ctx.session_id))  # the observer's share
            except HostError as exc:
                if lost is not None:
                    raise HostLost(f"host {ctx.host.name} lost ({lost}); reconnecting failed: {exc}") from exc
                lost = exc
                ctx.log("warning", "host-lost", f"host {ctx.host.name} lost: {exc}; reconnecting")


class HostLost(HostError):
    """The session's host stopped answering and could not be reached again."""


async def _unless_lost(work: Awaitable[None], sampler: asyncio.Task[None]) -> None:
    """Await work; if the sampler fails first (the host is lost), cancel work and raise that failure."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.wait({task, sampler}, return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            sampler.result()  # the sampler only ends early by raising (HostLost)
        await task
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):  # the host is gone: its errors add nothing
                await task
        elif not task.cancelled():
            # this await was cancelled as the work ended (an abort ends both at once): its outcome is read here,
            # or asyncio prints "Task exception was never retrieved" with the gate's Aborted
            task.exception()


def check_backend_runs(suite: Suite, backend: Backend) -> None:
    """BackendError in one line, before anything is created, when `backend` cannot run the suite as written: a
    tool from the host or its stderr (check_worker_runs), what the suite's kind needs (its `check`: pinning,
    exec inside instances, ...), a probe's arguments (the backend's check_invocations) or an image (its
    check_images).  ValueError for a kind that cannot run."""
    check_worker_runs(suite, backend)
    experiment_kind(suite.kind).check(suite, backend)
    backend.check_invocations(_invocations(suite))
    backend.check_images(_images(suite))


def _images(suite: Suite) -> list[str]:
    programs = (suite.worker, suite.background, suite.attacker)
    return sorted({p.image for p in programs if p is not None and p.image})


def _programs(suite: Suite) -> list[str]:
    return sorted({name for name, _ in _invocations(suite)})


def _invocations(suite: Suite) -> list[tuple[str, tuple[str, ...]]]:
    """Each probe the suite runs, with its arguments (worker, background, attacker)."""
    programs = (suite.worker, suite.background, suite.attacker)
    return [(p.program, tuple(p.args)) for p in programs if p is not None and p.program]
