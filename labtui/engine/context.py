"""RunContext: what an experiment kind uses to create, measure and tear down.

It wraps one backend on one host, records an event for every action (intent
before each create and destroy, outcome after) in the session's journal and
publishes it to the faces, and keeps the live instances in creation order so an
abort can tear them down in reverse.  It never waits on the store.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field, replace
from typing import TypeVar

from labtui.backends.base import Backend, BackendError, Instance, InstanceSpec, Labels
from labtui.core.events import (
    Better,
    Event,
    InstanceCreating,
    InstanceDestroyed,
    InstanceDestroying,
    InstanceReady,
    Log,
    ResourceSample,
    Result,
    SessionEnded,
    StepStarted,
)
from labtui.core.record import Recorder, Unrecorded
from labtui.engine.bus import EventBus
from labtui.engine.gate import StepGate
from labtui.engine.quiet import QuietWindows
from labtui.hosts.base import Host
from labtui.suites.model import Program, Suite

T = TypeVar("T")
#: Every backend call is bounded: the suite's operation_timeout_s, plus this per instance in the batch.
PER_INSTANCE_TIMEOUT_S = 2.0
#: An instance's own create deadline (InstanceSpec.timeout_s) unless the suite's operation_timeout_s is lower.
INSTANCE_TIMEOUT_S = 60.0


@dataclass
class Position:
    """Where the run is: repetition r of n, step k of m, with b background instances."""

    repetition: int = 0
    repetitions: int = 0
    step: int = 0
    steps: int = 0
    background: int = 0


@dataclass
class RunContext:
    session_id: str
    suite: Suite
    backend: Backend
    host: Host
    bus: EventBus
    gate: StepGate
    position: Position = field(default_factory=Position)
    live: list[Instance] = field(default_factory=list)
    #: Instance ids whose create has begun and not returned: a teardown looks for them by label.
    creating: set[str] = field(default_factory=set)
    #: Instances whose destroy has begun and not returned (by id): a teardown finishes them.
    destroying: dict[str, Instance] = field(default_factory=dict)
    tearing_down: bool = False
    #: Leave instances running: destroy() does nothing (a console quit that keeps them).
    keep_instances: bool = False
    #: The session's journal: every event is recorded there before the faces see it.
    journal: Recorder = field(default_factory=Unrecorded)
    #: The journal's first failure (a full disk): the run reports it once the session has ended.
    lost: Exception | None = None
    #: Seconds the step gate held this session since its last step started (the next StepStarted.held_s).
    held_s: float = 0.0
    #: Whether a measured operation is in flight; shared by a run's sessions (labtui.engine.quiet).
    quiet: QuietWindows = field(default_factory=QuietWindows)
    #: labtui's own helper processes (the store's): their memory and CPU go into each ObserverSample.
    helper_pids: tuple[int, ...] = ()
    _ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def record(self, event: Event) -> None:
        """Record one event in the journal, then publish it to the faces.

        A journal that cannot take it (a full disk) fails this call, so the experiment stops; not
        while tearing down, nor for a log line or the session's end: ending the instances and the
        session matters more.  The first failure is kept in `lost` for the run to report.  A step's start
        carries how long the step gate held it (StepStarted.held_s), so time estimates leave a person's wait out.
        """
        if isinstance(event, StepStarted):
            event, self.held_s = replace(event, held_s=self.held_s), 0.0
        try:
            self.journal.append(event)
        except Exception as exc:
            self.lost = self.lost or exc
            if not self.tearing_down and not isinstance(event, (Log, SessionEnded)):
                raise
        self.bus.publish(event)

    def record_intents(self, events: Sequence[Event]) -> None:
        """Record intents in one journal append (safe from a crash once this returns), then publish them."""
        try:
            self.journal.append_all(events)
        except Exception as exc:
            self.lost = self.lost or exc
            raise
        for event in events:
            self.bus.publish(event)

    async def pass_gate(self) -> None:
        """Wait at the step gate (a manual run waits for next); the time it held this session goes into the next
        step's StepStarted.held_s.  Raises Aborted when the run must stop."""
        self.held_s += await self.gate.passed()

    def log(self, level: str, category: str, message: str) -> None:
        self.record(Log(self.session_id, level, category, message))  # type: ignore[arg-type]

    def spec(
        self,
        role: str,
        program: Program,
        wait: str,
        *,
        cpus: str | None = None,
        capture_output: bool = False,
        capture_stderr: bool = False,
        start_at: float | None = None,
    ) -> InstanceSpec:
        """A spec with fresh lab labels for one instance of role."""
        labels = Labels(self.session_id, role, f"{role[:2]}{next(self._ids)}")
        return InstanceSpec(
            labels=labels,
            program=program.program,
            image=program.image,
            args=tuple(program.args),
            tool=program.tool,
            wait=wait,
            cpus=cpus,
            timeout_s=min(INSTANCE_TIMEOUT_S, self.suite.operation_timeout_s),
            capture_output=capture_output,
            capture_stderr=capture_stderr,
            start_at=start_at,
        )

    def measuring(self, *, idle_wait: bool = False) -> contextlib.AbstractAsyncContextManager[None]:
        """The quiet window around one measured operation: labtui's own work (the feed, the sampler, the
        faces' redraws) waits until it closes, and nothing is recorded inside it (labtui.engine.quiet).
        `idle_wait`: a wait for an idle host, which times nothing: the faces may still redraw their text."""
        return self.quiet.window(idle_wait=idle_wait)

    async def create(self, specs: Sequence[InstanceSpec], *, measured: bool = False) -> list[Instance]:
        """Create instances, recording intent first and each outcome after; `measured`: in a quiet window
        (the create is what the step measures: a worker's run to its exit, a round, a creation)."""
        self.record_intents([
            InstanceCreating(
                self.session_id, spec.labels.instance, self.host.name, self.backend.name, spec.labels.role,
                spec.labels.instance,
            )
            for spec in specs
        ])
        self.creating.update(spec.labels.instance for spec in specs)
        async with self.measuring() if measured else contextlib.nullcontext():
            instances = await self._bounded(self.backend.create_many(specs), specs, "create")
        self.creating.difference_update(spec.labels.instance for spec in specs)
        # every instance is live before any outcome is recorded: a journal that fails on the first (a full
        # disk) must not hide the others from the teardown
        self.live.extend(instance for instance in instances if instance.state != "exited")
        for instance in instances:
            self.record(
                InstanceReady(
                    self.session_id,
                    instance.labels.instance,
                    created_at=instance.created_at or 0.0,
                    ready_at=instance.ready_at or 0.0,
                    boot_s=instance.boot_s if instance.boot_s is not None else float("nan"),
                    state=instance.state,
                )
            )
        return instances

    async def destroy(self, instances: Sequence[Instance], *, force: bool = False) -> None:
        """Destroy instances in reverse order of creation, recording intent first and each after.

        While tearing down, a journal that cannot take the intent (a full disk)
        does not stop the destroys: ending the instances matters more.
        """
        ordered = list(reversed(instances))
        if not ordered or self.keep_instances:
            return
        for instance in ordered:
            self.destroying[instance.labels.instance] = instance
        try:
            self.record_intents([InstanceDestroying(self.session_id, i.labels.instance) for i in ordered])
        except Exception:
            if not self.tearing_down:
                raise
        await self._bounded(self.backend.destroy_many(ordered, force=force), ordered, "destroy")
        gone = {id(i) for i in ordered if i.state != "exited"}  # an instance that ran to its exit never was live
        if gone:  # a worker's destroy between two boots need not walk a thousand background instances
            self.live = [i for i in self.live if id(i) not in gone]
        for instance in ordered:
            self.destroying.pop(instance.labels.instance, None)
            self.record(InstanceDestroyed(self.session_id, instance.labels.instance))

    async def teardown(self, *, force: bool = False) -> None:
        """Destroy every live instance, newest first; force those that resist; then sweep by label.

        force (a second interrupt) skips the orderly path: everything left is
        force-destroyed in parallel.
        """
        self.tearing_down = True
        if self.keep_instances:
            return
        if self.live:
            self.log("info", "teardown", f"{'force-' if force else ''}destroying {len(self.live)} instances")
            try:
                await self.destroy(list(self.live), force=force)
            except Exception as exc:
                self.log("warning", "stuck", f"destroy failed ({exc}); forcing {len(self.live)} instances")
                await self.destroy(list(self.live), force=True)
        if self.destroying:  # destroys an interrupt cut short (an exited worker's, say): finish them
            await self.destroy(list(self.destroying.values()), force=True)
        await self.sweep_creating()

    async def sweep_creating(self) -> None:
        """End the instances of creates that an interrupt cut short, found by their lab labels.

        Their rows were opened (``creating``) before the create began; each is
        closed here, destroyed when the backend lists it, ``create-cancelled`` when not.
        """
        if not self.creating:
            return
        pending = set(self.creating)  # forgotten only once closed: a second interrupt may cut this sweep short
        found = [i for i in await self._bounded(self.backend.list(self.session_id), (), "list")
                 if i.labels.instance in pending]
        self.log("info", "teardown", f"{len(pending)} create(s) were cut short; {len(found)} of them left an instance")
        if found:
            self.record_intents([InstanceDestroying(self.session_id, i.labels.instance) for i in found])
            await self._bounded(self.backend.destroy_many(found, force=True), found, "destroy")
        alive = {i.labels.instance for i in found}
        for instance_id in sorted(pending):
            state = "destroyed" if instance_id in alive else "create-cancelled"
            self.record(InstanceDestroyed(self.session_id, instance_id, state=state))
        self.creating -= pending

    async def _bounded(self, work: Awaitable[T], items: Sequence[object], what: str) -> T:
        """Await a backend call with a timeout that grows with the batch size."""
        timeout = self.suite.operation_timeout_s + PER_INSTANCE_TIMEOUT_S * len(items)
        try:
            return await asyncio.wait_for(work, timeout)
        except TimeoutError:
            raise BackendError(
                f"{self.backend.name} {what} of {len(items)} instance(s) on {self.host.name} "
                f"did not finish within {timeout:g} s"
            ) from None

    def result(
        self,
        benchmark: str,
        metric: str,
        value: float,
        unit: str,
        better: Better,
        instance_id: str = "",
        *,
        placement: str = "",
        run: int = 0,
    ) -> None:
        """Record one reading; `run` numbers the worker's runs one after another at this measurement."""
        p = self.position
        self.record(
            Result(
                self.session_id,
                p.repetition,
                p.step,
                p.background,
                self.host.name,
                instance_id,
                benchmark,
                metric,
                value,
                unit,
                better,
                placement=placement,
                run=run,
            )
        )

    async def sample_now(self) -> ResourceSample:
        """Read the host's resources now and record the sample."""
        sample = await self.host.sample()
        return self.record_sample(sample)

    def record_sample(self, sample: ResourceSample) -> ResourceSample:
        tagged = replace(sample, session_id=self.session_id, instances=len(self.live))
        self.record(tagged)
        return tagged
