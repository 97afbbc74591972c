"""A worker that drops the load tool's connections is replaced once by a fresh one (seen in CI: redis-benchmark
against Redis on Unikraft under TCG, "Connection reset by peer" right after PING answered, then no answer)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from labtui.backends.base import BackendError, Instance, InstanceSpec, Labels
from labtui.engine.load import measure_load
from labtui.engine.quiet import QuietWindows
from labtui.hosts.base import CommandResult
from labtui.suites.model import Load, Worker

CSV = (Path(__file__).parents[1] / "data" / "parsers" / "redis-benchmark-7.0.15-csv.txt").read_text()
RESET = "Error: Connection reset by peer\n"
LOAD = Load(tool="redis-benchmark", port=6379, tests=("set", "get"))


class ScriptedHost:
    """A host whose redis-benchmark answers as scripted, one answer per run; its readiness probe always answers."""

    name = "scripted"

    def __init__(self, *answers: tuple[int, str, str]) -> None:
        self.answers = list(answers)
        self.runs: list[str] = []

    async def run(self, argv, timeout: float | None = None) -> CommandResult:
        if argv[0] == "bash":  # wait_ready's probe: PING answered
            return CommandResult(tuple(argv), 0, "", "", 0.0)
        self.runs.append(argv[argv.index("-p") + 1])  # which worker's port the tool loaded
        code, out, err = self.answers.pop(0)
        return CommandResult(tuple(argv), code, out, err, 0.0)


@dataclass
class Context:
    """What measure_load uses of a RunContext: it creates workers on ports 40001, 40002, ... and records."""

    host: ScriptedHost
    console: str = "Powered by Unikraft\nredis: oom\n"
    suite: Any = field(default_factory=lambda: SimpleNamespace(load=LOAD))
    alive: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    logged: list[tuple[str, str, str]] = field(default_factory=list)
    results: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.backend = SimpleNamespace(name="scripted", logs=self._logs)

    async def _logs(self, instance: Instance) -> str:
        return self.console

    def spec(self, role: str, worker: Worker, wait: str, *, cpus: str | None = None) -> InstanceSpec:
        return InstanceSpec(Labels("s1", role, f"wo{len(self.created) + 1}"), image=worker.image, wait=wait)

    async def create(self, specs: list[InstanceSpec]) -> list[Instance]:
        (spec,) = specs
        name = spec.labels.instance
        self.created.append(name)
        self.alive.append(name)
        return [Instance(spec.labels, name, "scripted", "scripted", "running", 0.0,
                         details={"ports": {6379: 40000 + len(self.created)}})]

    async def destroy(self, instances: list[Instance]) -> None:
        for instance in instances:
            self.alive.remove(instance.name)

    def measuring(self) -> contextlib.AbstractAsyncContextManager[None]:
        return QuietWindows().window()

    def log(self, level: str, category: str, message: str) -> None:
        self.logged.append((level, category, message))

    def result(self, benchmark: str, metric: str, *args: Any, **kwargs: Any) -> None:
        self.results.append((benchmark, metric))


WORKER = Worker(image="unikraft:redis", measure="load")


async def test_a_worker_that_dropped_the_connections_is_replaced_by_a_fresh_one() -> None:
    ctx = Context(ScriptedHost((1, "", RESET), (0, CSV, "")))
    readings = await measure_load(ctx, WORKER)  # type: ignore[arg-type]
    assert ctx.host.runs == ["40001", "40002"]  # the second run loads the second worker
    assert ctx.created == ["wo1", "wo2"] and ctx.alive == []
    assert {r.metric for r in readings} >= {"set_rps", "get_rps"} and len(ctx.results) == len(readings)
    ((level, category, message),) = ctx.logged
    assert (level, category) == ("warning", "load")
    assert "Connection reset by peer" in message and "fresh worker" in message
    assert "its console ended: Powered by Unikraft | redis: oom" in message


@pytest.mark.parametrize("answers, message", [
    (((1, "", RESET), (1, "", RESET)), "Connection reset by peer"),  # dropped twice: the step's error
    (((1, "", "NOAUTH Authentication required.\n"),), "NOAUTH"),  # another failure: no second worker
])
async def test_a_second_drop_or_any_other_failure_is_the_steps_error(answers, message: str) -> None:
    ctx = Context(ScriptedHost(*answers))
    with pytest.raises(BackendError, match=message):
        await measure_load(ctx, WORKER)  # type: ignore[arg-type]
    assert ctx.host.answers == [] and ctx.alive == [] and ctx.results == []
    assert len(ctx.created) == len(answers)
