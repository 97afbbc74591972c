"""The edges a slip would cross: an id that is another's prefix, each suite limit at its maximum and one past
it, every unit suffix a real tool prints, and the warm-up path of every measure kind."""

from __future__ import annotations

import asyncio
import math
import re
import secrets
from pathlib import Path

import pytest

from labtui.backends.base import Availability, Backend, Instance, InstanceSpec, Labels, open_backend
from labtui.cli import main
from labtui.commands.instances import session_named
from labtui.core.errors import UsageError
from labtui.core.events import InstanceCreating, Result, SessionEnded, SessionStarted
from labtui.core.liveness import session_lock
from labtui.engine.bus import EventBus
from labtui.engine.context import RunContext
from labtui.engine.gate import StepGate
from labtui.engine.worker_runs import measure_worker
from labtui.hosts.local import LocalHost
from labtui.lifecycle.cleanup import plan_cleanup
from labtui.parsers import ParseError
from labtui.parsers.stress_ng import parse_stress_ng
from labtui.parsers.wrk import parse_wrk
from labtui.store import StoreWriter, fetch_frame, record_events
from labtui.suites import SuiteError, load_suite

DATA = Path(__file__).parents[1] / "data" / "parsers"


# --- an id that is the prefix of another ---------------------------------------------------------------


def _ids() -> tuple[str, str]:
    """A session id and a longer one that starts with it (fresh ones: the lock dir is the machine's)."""
    short = f"edge-{secrets.token_hex(3)}"
    return short, short + "0"


class LooseListing(Backend):
    """The process backend with a listing that ignores the session asked for, as a backend may: the
    cleanup's own selection must still take only the session named."""

    def __init__(self, inner: Backend) -> None:
        super().__init__(inner.host)
        self.inner, self.name = inner, inner.name

    async def check(self) -> Availability:
        return await self.inner.check()

    async def create(self, spec: InstanceSpec) -> Instance:
        return await self.inner.create(spec)

    async def destroy(self, instance: Instance, *, force: bool = False) -> None:
        await self.inner.destroy(instance, force=force)

    async def list(self, session: str | None = None) -> list[Instance]:
        return await self.inner.list(None)

    async def memory_bytes(self, instance: Instance) -> int | None:
        return await self.inner.memory_bytes(instance)


@pytest.fixture
def process(runtime_dir: Path) -> Backend:
    return open_backend("process", LocalHost())


async def _sleeper(backend: Backend, session: str) -> None:
    await backend.create(InstanceSpec(Labels(session, "idle", "s0"), program="sleeper"))


@pytest.mark.parametrize("listing", ["exact", "loose"])
async def test_cleanup_of_a_session_never_selects_one_whose_id_merely_starts_with_it(
        process: Backend, tmp_path: Path, listing: str) -> None:
    short, longer = _ids()
    backend = process if listing == "exact" else LooseListing(process)
    try:
        await _sleeper(process, short)
        await _sleeper(process, longer)
        with session_lock(longer):  # the longer one is running
            plan = await plan_cleanup([backend], tmp_path / "none.duckdb", session=short, orphans=False, dry_run=True)
            orphans = await plan_cleanup([backend], tmp_path / "none.duckdb", session=None, orphans=True,
                                         dry_run=True)
        mine = {short, longer}
        listed = {i.labels.session for i in await backend.list(short)}
        # a loose listing is machine-wide: other tests' sleepers may be listed beside both of ours
        assert (listed == {short}) if listing == "exact" else (mine <= listed)
        assert {t.instance.labels.session for t in plan.targets} == {short}
        assert {t.instance.labels.session for t in orphans.targets} & mine == {short}
        assert not any(longer in note for note in plan.notes), plan.notes
    finally:
        for sid in (short, longer):
            await process.destroy_many(await process.list(sid), force=True)


def _on_process(work):
    """Run work(backend) on a process backend of its own event loop (the CLI runs its own loops in between)."""
    async def run():
        return await work(open_backend("process", LocalHost()))
    return asyncio.run(run())


def test_cleanup_and_instances_take_a_prefix_of_a_session_id_and_refuse_one_that_names_nothing(
        runtime_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--session` matches as report and compare do: the whole id, else the one id it starts; an id nothing knows
    is an error (it was an empty table, "nothing to clean up" and exit 0 while 740 instances stayed alive)."""
    session = f"edge-{secrets.token_hex(4)}"
    db = tmp_path / "lab.duckdb"
    try:
        _on_process(lambda backend: _sleeper(backend, session))
        assert main(["--db", str(db), "instances", "--session", session[:-3], "--backend", "process",
                     "--format", "csv"]) == 0
        assert session in capsys.readouterr().out
        assert main(["--db", str(db), "cleanup", "--session", session[:-3], "--backend", "process"]) == 0
        assert "destroyed 1, failed 0" in capsys.readouterr().out
        assert _on_process(lambda backend: backend.list(session)) == []
        ended = f"done-{secrets.token_hex(4)}"  # a session the store knows, with nothing left
        record_events(db, [SessionStarted(ended, "boot-scaling", "scaling", "process", "local", {}, 1),
                           SessionEnded(ended, "completed")])
        assert main(["--db", str(db), "cleanup", "--session", ended, "--backend", "process"]) == 0
        again = capsys.readouterr().out
        assert "nothing to clean up" in again and "to destroy" not in again  # no empty table above it
        unknown = f"none-{secrets.token_hex(4)}"
        assert main(["--db", str(db), "cleanup", "--session", unknown, "--backend", "process"]) == 2
        assert "no session has that id or one starting with it" in capsys.readouterr().err
        # listing nothing is no harm (a script polls until a session has none): exit 0, and stderr says why
        assert main(["--db", str(db), "instances", "--session", unknown, "--backend", "process"]) == 0
        assert capsys.readouterr().err.startswith(f"labtui instances: --session {unknown}: no session has that id")
    finally:
        async def end(backend: Backend) -> None:
            await backend.destroy_many(await backend.list(session), force=True)
        _on_process(end)


def test_cleanup_by_a_prefix_of_a_running_session_destroys_nothing_and_its_whole_id_cleans_it(
        runtime_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the CLI (labtui.cli.main): `cleanup --session PREFIX` of a session whose running-lock is held exits
    2 and leaves its live instance running; `--session ID`, its whole id, destroys it."""
    session = f"edge-{secrets.token_hex(4)}"
    db = tmp_path / "lab.duckdb"
    try:
        _on_process(lambda backend: _sleeper(backend, session))
        with session_lock(session):
            assert main(["--db", str(db), "cleanup", "--session", session[:-3], "--backend", "process"]) == 2
            assert f"names {session}, which is still running" in capsys.readouterr().err
            left = _on_process(lambda backend: backend.list(session))
            assert [(i.labels.session, i.state) for i in left] == [(session, "running")]
            assert main(["--db", str(db), "cleanup", "--session", session, "--backend", "process"]) == 0
            assert "destroyed 1, failed 0" in capsys.readouterr().out
            assert _on_process(lambda backend: backend.list(session)) == []
    finally:
        async def end(backend: Backend) -> None:
            await backend.destroy_many(await backend.list(session), force=True)
        _on_process(end)


def test_a_session_prefix_resolves_exactly_never_to_a_running_session_for_a_cleanup() -> None:
    short, longer = _ids()
    known = {short, longer, "other-1"}
    assert session_named(short, known, running_ok=False) == short  # the whole id wins over the longer one it starts
    assert session_named("oth", known, running_ok=False) == "other-1"
    with pytest.raises(UsageError, match="ambiguous; it matches: " + ", ".join(sorted([short, longer]))):
        session_named(short[:-1], known, running_ok=True)
    with pytest.raises(UsageError, match="no session has that id"):
        session_named("zzz", known, running_ok=True)
    alone = {longer}
    with session_lock(longer):
        assert session_named(short, alone, running_ok=True) == longer  # listing instances of it is harmless
        with pytest.raises(UsageError, match=f"still running; .* give its whole id: --session {longer}"):
            session_named(short, alone, running_ok=False)
        assert session_named(longer, alone, running_ok=False) == longer  # named in full: the user means it


def _store(db: Path, finished: str, running: str) -> None:
    with StoreWriter.open(db) as writer:
        writer.add(SessionStarted(finished, "boot", "scaling", "process", "local", {}, 0, ts=1.79e9))
        writer.add(SessionEnded(finished, "completed", ts=1.79e9 + 1))
        writer.add(SessionStarted(running, "boot", "scaling", "process", "local", {}, 0, ts=1.79e9 + 2))


def _sessions(db: Path) -> list[str]:
    return sorted(fetch_frame(db, "SELECT session_id FROM sessions")["session_id"].to_list())


def test_sessions_rm_of_an_id_deletes_that_session_not_a_running_one_it_prefixes(
        runtime_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    short, longer = _ids()
    db = tmp_path / "lab.duckdb"
    with session_lock(longer):
        _store(db, short, longer)
        assert main(["--db", str(db), "sessions", "rm", short, "--yes"]) == 0
        assert _sessions(db) == [longer]
        # the running one, by its own id, is refused and kept
        assert main(["--db", str(db), "sessions", "rm", longer, "--yes"]) == 2
        assert _sessions(db) == [longer]
    assert "is running" in capsys.readouterr().err


def test_sessions_rm_of_a_prefix_of_two_ids_is_ambiguous_and_deletes_nothing(
        runtime_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    short, longer = _ids()
    db = tmp_path / "lab.duckdb"
    with session_lock(longer):
        _store(db, short, longer)
        assert main(["--db", str(db), "sessions", "rm", short[:-1], "--yes"]) != 0
    assert _sessions(db) == sorted([short, longer])
    assert "ambiguous" in capsys.readouterr().err


# --- each limit at its maximum and one past it ------------------------------------------------------------

#: (base suite, key, the largest value it accepts). An integer one past is max + 1; a number one past is the
#: next float above it.
LIMITS = [
    ("boot-scaling", "suite.repetitions", 10_000),
    ("boot-scaling", "suite.operation_timeout_s", 86_400.0),
    ("boot-scaling", "scale.steps", 100_000),
    ("boot-scaling", "scale.per_step", 100_000),
    ("boot-scaling", "scale.start", 10_000_000_000),
    ("boot-scaling", "worker.runs", 1_000_000_000),
    ("boot-scaling", "worker.warmup", 1_000_000_000),
    ("boot-scaling", "sampling.interval_s", 60.0),
    ("boot-scaling", "sampling.settle_s", 31_536_000.0),
    ("boot-scaling", "sampling.quiet_timeout_s", 600.0),
    ("isolation-cpu", "isolation.settle_s", 600.0),
    ("aim9-arithmetic", "concurrent.start_delay_s", 60.0),
    ("fairshare-cpu", "fairshare.instances", 1_000_000_000),
    ("fairshare-cpu", "fairshare.duration_s", 86_400.0),
    ("fairshare-cpu", "fairshare.start_delay_s", 60.0),
    ("docker-nginx-scaling", "load.port", 65_535),
    ("docker-nginx-scaling", "load.connections", 1_000_000_000),
    ("docker-nginx-scaling", "load.duration_s", 1_000_000_000),
    ("docker-nginx-scaling", "load.ready_timeout_s", 600.0),
    ("docker-nginx-scaling", "load.timeout_s", 86_400.0),
    ("docker-redis-scaling", "load.requests", 1_000_000_000),
    ("docker-redis-scaling", "load.pipeline", 1_000_000_000),
]


#: Keys whose maximum other keys would refuse first: with the weight or cap method, a billion instances give
#: the reserved one a weight above 10000 or the others a cap below 0.01 CPUs; measured by output, a day's
#: run needs an operation timeout above the day that suite.operation_timeout_s allows (limits of their own).
ALONE = {"fairshare.instances": ["fairshare.methods=[]"], "fairshare.duration_s": ['fairshare.measure="cpu_time"']}


def _past(top: float) -> float:
    return top + 1 if isinstance(top, int) else math.nextafter(top, math.inf)


@pytest.mark.parametrize("base, key, top", LIMITS, ids=[key for _, key, _ in LIMITS])
def test_a_limit_is_accepted_at_its_maximum_and_refused_one_past_it(base: str, key: str, top: float) -> None:
    table, name = key.split(".")
    alone = ALONE.get(key, [])
    suite = load_suite(base, [*alone, f"{key}={top!r}"])
    values = suite if table == "suite" else dict(suite.settings).get(table) or getattr(suite, table)
    assert getattr(values, name) == top
    with pytest.raises(SuiteError) as refused:
        load_suite(base, [*alone, f"{key}={_past(top)!r}"])
    assert refused.value.key == key and refused.value.message.startswith("expected "), refused.value


def test_wrk_threads_may_equal_connections_and_not_exceed_them() -> None:
    assert load_suite("docker-nginx-scaling", ["load.threads=30", "load.connections=30"]).load.threads == 30
    with pytest.raises(SuiteError, match=r"wrk needs connections >= threads; got 30 < 31"):
        load_suite("docker-nginx-scaling", ["load.threads=31", "load.connections=30"])


def test_max_runs_may_equal_runs_and_not_fall_below_them() -> None:
    suite = load_suite("boot-scaling", ["worker.runs=5", "worker.max_runs=5", "worker.target_cv=0.05"])
    assert suite.worker is not None and suite.worker.max_runs == 5
    with pytest.raises(SuiteError, match=r"must be at least runs \(5\), not 4"):
        load_suite("boot-scaling", ["worker.runs=5", "worker.max_runs=4", "worker.target_cv=0.05"])


# --- every unit suffix a real tool prints -------------------------------------------------------------------

#: wrk's units.c: times are printed in us, ms, s, then m and h; sizes in B, KB, MB, GB, TB (powers of 1024).
WRK_TIME_MS = {"us": 0.001, "ms": 1.0, "s": 1_000.0, "m": 60_000.0, "h": 3_600_000.0}
WRK_SIZE_MIB = {"B": 1 / 1024**2, "KB": 1 / 1024, "MB": 1.0, "GB": 1024.0, "TB": 1024.0**2}


def _wrk(latency: str, transfer: str) -> str:
    """wrk 4.1.0's summary (tests/data/parsers/wrk-4.1.0-plain.txt) with the latency and transfer given."""
    text = (DATA / "wrk-4.1.0-plain.txt").read_text()
    text = text.replace("Latency    78.89us  127.19us   3.67ms", f"Latency    {latency}  {latency}  {latency}")
    return text.replace("Transfer/sec:      7.52MB", f"Transfer/sec:      {transfer}")


@pytest.mark.parametrize("suffix", list(WRK_TIME_MS))
def test_every_wrk_time_suffix_is_read_in_ms(suffix: str) -> None:
    got = {r.metric: r.value for r in parse_wrk(_wrk(f"2.50{suffix}", "7.52MB"))}
    for metric in ("latency_avg_ms", "latency_stdev_ms", "latency_max_ms"):
        assert got[metric] == pytest.approx(2.5 * WRK_TIME_MS[suffix], rel=1e-12), (suffix, metric)


@pytest.mark.parametrize("suffix", list(WRK_SIZE_MIB))
def test_every_wrk_size_suffix_is_read_in_mib(suffix: str) -> None:
    got = {r.metric: r.value for r in parse_wrk(_wrk("78.89us", f"3.25{suffix}"))}
    assert got["transfer_mib_s"] == pytest.approx(3.25 * WRK_SIZE_MIB[suffix], rel=1e-12)


#: Real wrk 4.1.0 runs against a loopback server that answers each request after a delay with a response of a
#: known size, both named in its URL (tests/data/parsers/SOURCES.md): one file per unit of Transfer/sec.
WRK_UNIT_RUNS = {"B": "wrk-4.1.0-b-per-s.txt", "KB": "wrk-4.1.0-kb-per-s.txt", "MB": "wrk-4.1.0-mb-per-s.txt",
                 "GB": "wrk-4.1.0-gb-per-s.txt"}
#: wrk's units.c prints a time in us below 850 us, in ms below 850 ms, in s below 51 s (0.85 of each next unit).
WRK_TIME_RANGE_MS = {"us": (0.0, 0.85), "ms": (0.85, 850.0), "s": (850.0, 51_000.0)}


def _wrk_run(text: str) -> dict[str, float]:
    """What a wrk output says of its own run, read from its text alone: the server's delay and response size
    (its URL), connections, requests completed and the run time in seconds to its 2 decimals."""
    url = re.search(r"^Running .* @ http://127\.0\.0\.1:\d+/respond-after-(\d+)ms-with-(\d+)-bytes$", text, re.M)
    conns = re.search(r"^\s+\d+ threads and (\d+) connections$", text, re.M)
    done = re.search(r"^\s+(\d+) requests in ([\d.]+)s, ", text, re.M)
    assert url and conns and done, text
    return {"delay_ms": float(url[1]), "size": float(url[2]), "connections": float(conns[1]),
            "requests": float(done[1]), "runtime_s": float(done[2])}


@pytest.mark.parametrize("unit", list(WRK_UNIT_RUNS))
def test_wrk_size_and_time_units_on_real_outputs_match_the_bytes_and_delays_served(unit: str) -> None:
    """On a real run whose Transfer/sec is in `unit`, the parsed MiB/s is the bytes the server sent per second
    (requests x response size, up to one partial response per connection, over the run time), and the parsed
    latencies lie between the server's delay and the run time, inside the range wrk prints that time unit in."""
    text = (DATA / WRK_UNIT_RUNS[unit]).read_text()
    assert re.search(rf"^Transfer/sec:\s+[\d.]+{unit}$", text, re.M), "the file is not in the unit it is named for"
    run = _wrk_run(text)
    got = {r.metric: r.value for r in parse_wrk(text)}
    printed = float(re.search(r"^Transfer/sec:\s+([\d.]+)", text, re.M)[1])  # type: ignore[index]
    half_digit = 0.005 * got["transfer_mib_s"] / printed  # the printed figure's rounding, in MiB/s
    low_bytes = run["requests"] * run["size"]
    high_bytes = (run["requests"] + run["connections"]) * run["size"]
    low = low_bytes / (run["runtime_s"] + 0.005) / 2**20 - half_digit
    high = high_bytes / (run["runtime_s"] - 0.005) / 2**20 + half_digit
    assert low <= got["transfer_mib_s"] <= high, (unit, low, got["transfer_mib_s"], high)
    latency = re.search(r"^\s+Latency\s+([\d.]+)(us|ms|s)\s", text, re.M)
    assert latency, text
    avg, (floor, ceiling) = got["latency_avg_ms"], WRK_TIME_RANGE_MS[latency[2]]
    half_digit = 0.005 * avg / float(latency[1])  # the printed average's rounding, in ms
    assert max(floor, run["delay_ms"]) - half_digit <= avg <= got["latency_max_ms"]
    assert avg < min(ceiling, run["runtime_s"] * 1e3) + half_digit


#: stress-ng's "setting to a ... run per stressor": its duration in days, hours, mins and secs.
STRESS_NG_SECONDS = {"day": 86_400.0, "hour": 3_600.0, "min": 60.0, "sec": 1.0}


def _stress_ng(setting: str, real_s: float) -> str:
    """A real stress-ng 0.15.06 run (tests/data/parsers/stress-ng-0.15.06-cpu.txt) set to `setting`, whose
    stressor ran `real_s` seconds."""
    lines = (DATA / "stress-ng-0.15.06-cpu.txt").read_text().splitlines()
    out = []
    for line in lines:
        if "setting to a" in line:
            line = line[:line.index("setting to a")] + f"setting to a {setting} run per stressor"
        elif "metrc:" in line and " cpu " in line:
            parts = line.split()
            real_at = parts.index("cpu") + 2
            line = line.replace(f" {parts[real_at]} ", f" {real_s:.2f} ", 1)
        out.append(line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("unit", list(STRESS_NG_SECONDS))
def test_every_stress_ng_duration_unit_is_read_in_seconds(unit: str) -> None:
    set_s = 2 * STRESS_NG_SECONDS[unit]
    assert parse_stress_ng(_stress_ng(f"2 {unit}s", set_s))  # ran the whole time set: a figure
    with pytest.raises(ParseError, match="ran .* of the 2 .* run it was set to"):
        parse_stress_ng(_stress_ng(f"2 {unit}s", 0.9 * set_s))  # stopped short: no figure
    with pytest.raises(ParseError, match="ran .* of the 2 .* run it was set to"):  # 10 ms short of 95 %
        parse_stress_ng(_stress_ng(f"2 {unit}s", 0.95 * set_s - 0.01))


# --- the warm-up path of every measure kind ---------------------------------------------------------------

#: Each measure kind's [worker] (after it, the tables it needs), run twice after two warm-up runs.
WARMUP_SUITES = {
    "boot": ('program = "hello"\nmeasure = "boot"\n', ""),
    "output": ('program = "arith"\nargs = ["int", "0.05"]\nmeasure = "output"\n', ""),
    "load": ('image = "labtui/nginx"\nmeasure = "load"\n',
             '[load]\ntool = "wrk"\nport = 80\nconnections = 2\nthreads = 1\nduration_s = 1\n'),
}


@pytest.mark.parametrize("measure", list(WARMUP_SUITES))
async def test_warmup_runs_are_made_and_never_recorded(measure: str, runtime_dir: Path, tmp_path: Path) -> None:
    backend_name = "docker" if measure == "load" else "process"
    backend = open_backend(backend_name, LocalHost())
    availability = await backend.check()
    if not availability.usable:
        pytest.skip(f"{backend_name}: {availability.reason}")
    path = tmp_path / "warmup.toml"
    worker, tables = WARMUP_SUITES[measure]
    path.write_text('[suite]\nname = "warmup"\nkind = "scaling"\n[scale]\nsteps = 1\nper_step = 1\n'
                    '[background]\nprogram = "sleeper"\n' f"[worker]\n{worker}runs = 2\nwarmup = 2\n{tables}")
    session = f"edge-warmup-{secrets.token_hex(3)}"
    bus = EventBus()
    events = bus.subscribe()
    ctx = RunContext(session, load_suite(str(path)), backend, backend.host, bus, StepGate())
    try:
        await measure_worker(ctx)
    finally:
        bus.close()
        await backend.destroy_many(await backend.list(session), force=True)
    seen = []
    while (event := events.get_nowait()) is not None:
        seen.append(event)
    roles = {e.instance_id: e.role for e in seen if isinstance(e, InstanceCreating)}
    assert sorted(roles.values()) == ["warmup", "warmup", "worker", "worker"], roles
    results = [e for e in seen if isinstance(e, Result)]
    assert results and {roles[r.instance_id] for r in results} == {"worker"}
    assert sorted({r.run for r in results}) == [1, 2]
