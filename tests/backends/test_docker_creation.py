"""Creation runs whose benchmark runs inside docker containers, and the staging that allows it.

A container sees only its FROM scratch image, so ``DockerBackend.stage`` copies
labtui-runat and the probe from the host into it; these tests run that against a
real Docker engine on this machine (CI starts dockerd) and skip, with the reason,
only when its socket does not exist.
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from collections import defaultdict
from collections.abc import AsyncIterator
from pathlib import Path

import aiodocker
import pytest
from backend_lab import Lab

from labtui.backends.base import Backend, BackendError, open_backend
from labtui.core.events import Event, Result, SessionEnded
from labtui.engine import SessionRunner
from labtui.hosts.local import LocalHost
from labtui.programs.native import ensure_program, probe_source
from labtui.programs.runat import NAME as RUNAT_NAME
from labtui.programs.runat import SOURCE as RUNAT_SOURCE
from labtui.suites import load_suite

SOCKET = "/var/run/docker.sock"

pytestmark = pytest.mark.skipif(
    not Path(SOCKET).is_socket(), reason=f"no Docker engine socket at {SOCKET}: start dockerd to run these tests"
)

SUITE = """[suite]
name = "docker-creation-test"
kind = "creation"
[scale]
steps = 2
per_step = 1
[creation]
where = "first"
start_delay_s = 0.5
[worker]
program = "arith"
args = ["int", "0.05"]
measure = "output"
warmup = 0
[background]
program = "sleeper"
[sampling]
quiet_timeout_s = 0.0
"""


class CountingHost(LocalHost):
    """The local host, counting the files fetched from it."""

    def __init__(self) -> None:
        super().__init__()
        self.fetched: list[str] = []

    async def get_file(self, remote_path: str, local_path: str) -> None:
        self.fetched.append(remote_path)
        await super().get_file(remote_path, local_path)


@pytest.fixture
async def counting_lab(runtime_dir: Path) -> AsyncIterator[Lab]:
    """A docker backend on a CountingHost; every container of the sessions it hands out is removed after."""
    backend = type(open_backend("docker", LocalHost()))(CountingHost())
    counting_lab = Lab(backend, "stage")
    try:
        yield counting_lab
    finally:
        await counting_lab.cleanup()


async def programs(host: LocalHost) -> list[str]:
    """labtui-runat and the arith probe, built in the host's runtime dir."""
    return [await ensure_program(host, RUNAT_SOURCE, RUNAT_NAME), await ensure_program(host, probe_source("arith"), "arith")]


async def file_in(container_id: str, path: str) -> tuple[int, bytes]:
    """The mode and bytes of a file inside a container, read back through the engine."""
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        tar = await docker.containers.container(container_id).get_archive(path)
        (member,) = tar.getmembers()
        extracted = tar.extractfile(member)
        assert extracted is not None
        return member.mode, extracted.read()


async def labelled_containers(session: str) -> list[str]:
    """Every container, running or not, carrying session's label (asked of the engine directly)."""
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        found = await docker.containers.list(all=True, filters={"label": [f"labtui.session={session}"]})
        return [c.id for c in found]


# -- stage -------------------------------------------------------------------------------------


async def test_stage_copies_programs_once_per_container_and_they_run_inside(counting_lab: Lab) -> None:
    host = counting_lab.backend.host
    assert isinstance(host, CountingHost)
    runat, arith = await programs(host)
    first, second = await counting_lab.sleepers(counting_lab.session(), 2)
    staged = await counting_lab.backend.stage(first, [runat, arith])
    assert staged == [f"/labtui/bin/{Path(runat).name}", f"/labtui/bin/{Path(arith).name}"]
    for inside, outside in zip(staged, (runat, arith)):
        mode, data = await file_in(first.handle, inside)
        assert mode & 0o777 == 0o755 and data == Path(outside).read_bytes()
    assert sorted(host.fetched) == sorted([runat, arith])

    assert await counting_lab.backend.stage(first, [arith, runat]) == staged[::-1]  # already there: nothing copied
    assert await counting_lab.backend.stage(second, [arith]) == [staged[1]]  # a fresh container gets its own copy ...
    assert sorted(host.fetched) == sorted([runat, arith])  # ... of the file already fetched
    result = await counting_lab.backend.exec(second, [staged[1], "int", "0.05"])
    assert result.ok and '"metric":"int_mops"' in result.stdout, result
    timed = await counting_lab.backend.exec(first, [staged[0], "0", "--", staged[1], "int", "0.05"])
    assert timed.ok and timed.stderr.startswith(f"{RUNAT_NAME}\t"), timed


async def test_two_programs_with_one_name_both_stay_in_the_container(counting_lab: Lab, tmp_path: Path) -> None:
    host = counting_lab.backend.host
    assert isinstance(host, LocalHost)
    runat, arith = await programs(host)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one, other = tmp_path / "a" / "prog", tmp_path / "b" / "prog"
    one.write_bytes(Path(runat).read_bytes())
    other.write_bytes(Path(arith).read_bytes())
    (sleeper,) = await counting_lab.sleepers(counting_lab.session(), 1)
    first, second = await counting_lab.backend.stage(sleeper, [str(one), str(other)])
    assert first == "/labtui/bin/prog" and second.startswith("/labtui/bin/prog-") and second != first
    assert (await file_in(sleeper.handle, first))[1] == one.read_bytes()
    assert (await file_in(sleeper.handle, second))[1] == other.read_bytes()


async def test_stage_refuses_a_dynamic_binary_naming_it(counting_lab: Lab) -> None:
    (sleeper,) = await counting_lab.sleepers(counting_lab.session(), 1)
    dynamic = str(Path(sys.executable).resolve())
    with pytest.raises(BackendError) as info:
        await counting_lab.backend.stage(sleeper, [dynamic])
    assert f"{dynamic} is not a static binary" in str(info.value) and sleeper.handle[:12] in str(info.value)
    missing = await counting_lab.backend.exec(sleeper, [f"/labtui/bin/{Path(dynamic).name}"])
    assert missing.returncode in (126, 127)  # nothing was copied


async def test_stage_into_a_removed_container_is_a_clear_error(counting_lab: Lab) -> None:
    host = counting_lab.backend.host
    assert isinstance(host, LocalHost)
    runat, _ = await programs(host)
    (sleeper,) = await counting_lab.sleepers(counting_lab.session(), 1)
    await counting_lab.backend.stage(sleeper, [runat])
    await counting_lab.backend.destroy(sleeper, force=True)
    with pytest.raises(BackendError, match=f"copying programs into container {sleeper.handle[:12]}"):
        await counting_lab.backend.stage(sleeper, [runat])


# -- creation runs -----------------------------------------------------------------------------


@pytest.fixture
async def session(runtime_dir: Path) -> AsyncIterator[str]:
    """A fresh session id; any container still carrying it afterwards is removed (and fails the test)."""
    name = f"dcreate-{secrets.token_hex(4)}"
    yield name
    left = await labelled_containers(name)
    if left:
        async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
            await asyncio.gather(*(docker.containers.container(c).delete(force=True) for c in left))
    assert left == [], f"containers left behind by {name}"


async def run_creation(tmp_path: Path, session: str, where: str) -> tuple[SessionEnded, dict[str, dict[int, list[Result]]]]:
    """Run the 2-step creation suite on docker with the benchmark where; its end and results by metric and step."""
    path = tmp_path / "creation.toml"
    path.write_text(SUITE)
    suite = load_suite(str(path), [f"creation.where={where}"])
    host = LocalHost()
    backend: Backend = open_backend("docker", host)
    runner = SessionRunner(suite, backend, host, session_id=session)
    queue = runner.bus.subscribe()
    task = asyncio.create_task(runner.run())
    events: list[Event] = []
    while (event := await asyncio.wait_for(queue.get(), 300)) is not None:
        events.append(event)
    await task
    (ended,) = [e for e in events if isinstance(e, SessionEnded)]
    results: dict[str, dict[int, list[Result]]] = defaultdict(lambda: defaultdict(list))
    for e in events:
        if isinstance(e, Result):
            results[e.metric][e.step].append(e)
    return ended, results


def check_tcreate(results: dict[str, dict[int, list[Result]]]) -> list[float]:
    """Tcreate(n) for in1 and in2, each at least the container's create-to-ready time."""
    tcreate = {step: rs for step, rs in results["tcreate_s"].items()}
    assert sorted(tcreate) == [1, 2]
    assert [(rs[0].instance_id, len(rs)) for _, rs in sorted(tcreate.items())] == [("in1", 1), ("in2", 1)]
    ready = {rs[0].instance_id: rs[0].value for rs in results["ready_s"].values()}
    for (result,) in tcreate.values():
        # the copy into the container is left out, like the settle time: what remains is creation
        assert ready[result.instance_id] <= result.value < ready[result.instance_id] + 2.0, (result, ready)
    return [round(rs[0].value * 1e3, 1) for _, rs in sorted(tcreate.items())]


async def test_creation_first_runs_the_probe_in_container_one(tmp_path: Path, session: str) -> None:
    ended, results = await run_creation(tmp_path, session, "first")
    assert ended.status == "completed", ended.message
    bench = results["int_mops"]
    assert sorted(bench) == [1, 2]  # nothing to run in before container 1 exists
    assert all(len(rs) == 1 and rs[0].instance_id == "in1" and rs[0].value > 0 for rs in bench.values())
    assert "start_spread_ms" not in results
    print("Tcreate(n) on docker, benchmark in container 1:", check_tcreate(results), "ms")
    assert await labelled_containers(session) == []


async def test_creation_all_runs_the_probe_in_every_container_at_once(tmp_path: Path, session: str) -> None:
    ended, results = await run_creation(tmp_path, session, "all")
    assert ended.status == "completed", ended.message
    bench, sums = results["int_mops"], results["int_mops_sum"]
    assert sorted(bench) == [1, 2]
    for n, readings in bench.items():
        assert sorted(r.instance_id for r in readings) == [f"in{i}" for i in range(1, n + 1)]
        assert all(r.value > 0 for r in readings)
        assert sums[n][0].value == pytest.approx(sum(r.value for r in readings))  # S_n = sum of R_in
    spread = {step: rs[0].value for step, rs in results["start_spread_ms"].items()}
    lag = {step: rs[0].value for step, rs in results["start_lag_ms"].items()}
    assert sorted(spread) == [1, 2] and spread[1] == 0.0 and 0.0 <= spread[2] < 500.0
    assert sorted(lag) == [1, 2] and all(0.0 <= v < 500.0 for v in lag.values())  # none early, none missed it
    print("Tcreate(n) on docker, benchmark in every container:", check_tcreate(results), "ms;",
          "start spread (ms):", {n: round(v, 3) for n, v in spread.items()},
          "lag (ms):", {n: round(v, 3) for n, v in lag.items()})
    assert await labelled_containers(session) == []
