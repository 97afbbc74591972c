"""A load tool whose connections the server dropped runs once more when the server answers again (seen in CI:
redis-benchmark against Redis on Unikraft under TCG, "Connection reset by peer" right after PING answered)."""

from __future__ import annotations

from pathlib import Path

import pytest

from labtui.backends.base import BackendError
from labtui.engine.load import run_tool_again_if_dropped
from labtui.hosts.base import CommandResult
from labtui.suites.model import Load

CSV = (Path(__file__).parents[1] / "data" / "parsers" / "redis-benchmark-7.0.15-csv.txt").read_text()
RESET = "Error: Connection reset by peer\n"


class ScriptedHost:
    """A host whose redis-benchmark answers as scripted, one answer per run; its readiness probe always answers."""

    name = "scripted"

    def __init__(self, *answers: tuple[int, str, str]) -> None:
        self.answers = list(answers)
        self.runs: list[str] = []

    async def run(self, argv, timeout: float | None = None) -> CommandResult:
        self.runs.append(argv[0])
        if argv[0] == "bash":  # wait_ready's probe: PING answered
            return CommandResult(tuple(argv), 0, "", "", 0.0)
        code, out, err = self.answers.pop(0)
        return CommandResult(tuple(argv), code, out, err, 0.0)


LOAD = Load(tool="redis-benchmark", port=6379, tests=("set", "get"))


async def test_dropped_connections_get_one_more_run_and_a_warning() -> None:
    host, warned = ScriptedHost((1, "", RESET), (0, CSV, "")), []
    readings = await run_tool_again_if_dropped(host, LOAD, 40000, "wo1", warned.append)  # type: ignore[arg-type]
    assert host.runs == ["redis-benchmark", "bash", "redis-benchmark"]
    assert {r.metric for r in readings} >= {"set_rps", "get_rps"}
    assert len(warned) == 1 and "Connection reset by peer" in warned[0] and "once more" in warned[0]


@pytest.mark.parametrize("answers, message", [
    (((1, "", RESET), (1, "", RESET)), "Connection reset by peer"),  # dropped twice: the step's error
    (((1, "", "NOAUTH Authentication required.\n"),), "NOAUTH"),  # another failure: no second run
])
async def test_a_second_drop_or_any_other_failure_is_the_steps_error(answers, message: str) -> None:
    host, warned = ScriptedHost(*answers), []
    with pytest.raises(BackendError, match=message):
        await run_tool_again_if_dropped(host, LOAD, 40000, "wo1", warned.append)  # type: ignore[arg-type]
    assert host.answers == []
