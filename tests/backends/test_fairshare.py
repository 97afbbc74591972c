"""The fairshare kind (VServer/Xen paper, 5.1 and Table 3): its [fairshare] table, the CPU weight
and cap of the process and xen backends, and real runs.

The process-backend runs pin real hourglass instances to CPU 0 of this machine; the xen run drives
the simulated Domain-0 (tests/simulators) over a real sshd on 127.0.0.41.  Shares are checked
against the share the instances received together, so other work on CPU 0 does not fail them,
except for caps, which are ceilings whatever else runs.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import subprocess
import time
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

import duckdb
import pytest
from backend_lab import Lab, open_lab
from cli_run import labtui as run_labtui
from host_needs import V1_CPU, cpu_controller, needs_cpu_controller
from simulators.fakehost import FakeHost, start_fake_host, write_lab
from sshd_fixture import sshd_available, write_key

from labtui.backends.base import (
    PINNING,
    BackendError,
    Instance,
    InstanceSpec,
    Labels,
    builtin_plugins_dir,
    load_backend_class,
    open_backend,
)
from labtui.core.events import InstanceCreating, InstanceReady, SessionEnded
from labtui.engine import SessionRunner
from labtui.engine.fairshare import _check_together, plan
from labtui.engine.hostclock import host_clock_ns
from labtui.hosts import get_host
from labtui.hosts.base import CommandResult
from labtui.hosts.local import LocalHost
from labtui.programs.runat import NAME as RUNAT_NAME
from labtui.suites import SuiteError, load_suite
from labtui.suites.kinds import most_instances, steps_per_repetition
from labtui.suites.kinds.fairshare import Fairshare

BACKEND = "process"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "fs"


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "fs.toml"
    path.write_text(text)
    return str(path)


FAIR = '[suite]\nname = "fs"\nkind = "fairshare"\n'


# -- the suite table ------------------------------------------------------------------------


def test_builtin_suites_follow_table_3() -> None:
    suite = load_suite("fairshare-cpu")
    fair = suite.table(Fairshare)
    assert (fair.instances, fair.reserved_share, fair.methods, fair.cpus) == (8, 0.25, ("weight", "cap"), "0")
    assert steps_per_repetition(suite) == 3 and most_instances(suite) == 8 and fair.probe() == "hourglass"
    # 1/4 of all weights: 7 others at 100, so 7/3 of theirs; caps partition the CPU 1/4 + 7 x 3/28.
    assert fair.weights() == (233, 100)
    assert fair.caps(1) == pytest.approx((0.25, 0.75 / 7)) and fair.caps(2) == pytest.approx((0.5, 1.5 / 7))
    xen = load_suite("xen-fairshare")
    assert xen.backend == "xen" and xen.table(Fairshare).measure == "cpu_time" and xen.table(Fairshare).instances == 8


def test_a_bare_table_takes_the_defaults(tmp_path: Path) -> None:
    fair = load_suite(write(tmp_path, FAIR)).table(Fairshare)
    assert fair == Fairshare() and fair.configurations() == ("equal", "weight", "cap")
    assert load_suite(write(tmp_path, FAIR + '[fairshare]\nmeasure = "cpu_time"\n')).table(Fairshare).probe() == "attack-cpu"


@pytest.mark.parametrize(
    ("extra", "key", "message"),
    [
        ("[fairshare]\nreserved_share = 1.0\n", "fairshare.reserved_share", "between 0 and 1"),
        ('[fairshare]\nmethods = ["weight", "weight"]\n', "fairshare.methods", "distinct methods from: weight, cap"),
        ('[fairshare]\nmethods = ["share"]\n', "fairshare.methods", "distinct methods"),
        ('[fairshare]\ncpus = "1-0"\n', "fairshare.cpus", "CPU list"),
        ('[fairshare]\ncpus = "all"\n', "fairshare.cpus", "CPU list"),
        ("[fairshare]\ninstances = 1\n", "fairshare.instances", "an integer from 2 to"),
        ('[fairshare]\nmeasure = "hourglass"\n', "fairshare.measure", "one of: output, cpu_time"),
        ('[worker]\nprogram = "hourglass"\nmeasure = "output"\n', "worker", "runs its own probe"),
        ('[fairshare]\nprogram = "hourglass"\nimage = "x"\n', "fairshare", "at most one of program"),
        ("[fairshare]\nreserved_share = 0.995\n", "fairshare.reserved_share", "weights go from 1 to 10000"),
        ('[fairshare]\nmethods = ["cap"]\nreserved_share = 0.005\n', "fairshare.reserved_share", "smallest cap is 0.01"),
        ('[fairshare]\nmethods = ["cap"]\ninstances = 200\nreserved_share = 0.5\n', "fairshare.instances", "smallest cap"),
        ("[fairshare]\nduration_s = 300\n", "fairshare.duration_s", "operation_timeout_s of at least 311"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, extra: str, key: str, message: str) -> None:
    with pytest.raises(SuiteError) as info:
        load_suite(write(tmp_path, FAIR + extra))
    assert info.value.key == key and message in info.value.message, str(info.value)
    assert info.value.line is not None


def test_other_kinds_refuse_the_table_and_overrides_are_checked(tmp_path: Path) -> None:
    scaling = '[suite]\nname = "s"\nkind = "scaling"\n[scale]\nsteps = 1\nper_step = 1\n[background]\nprogram = "sleeper"\n'
    with pytest.raises(SuiteError, match=r"fairshare: only a fairshare suite uses \[fairshare\]"):
        load_suite(write(tmp_path, scaling + "[measure]\nmemory = true\n[fairshare]\ninstances = 4\n"))
    with pytest.raises(SuiteError) as info:
        load_suite("fairshare-cpu", ["fairshare.reserved_share=2"])
    assert str(info.value).startswith("--set fairshare.reserved_share: expected a number between 0 and 1")


def test_plan_gives_the_reserved_instance_its_weight_or_cap() -> None:
    fair = Fairshare(instances=4, reserved_share=0.1)
    assert plan(fair, "equal", 1) == [("worker", {}, 0.25)] * 4
    assert plan(fair, "equal", 1, weighted=True) == [("worker", {"cpu_weight": 100}, 0.25)] * 4
    assert plan(fair, "weight", 1) == [("reserved", {"cpu_weight": 33}, 0.1)] + [("worker", {"cpu_weight": 100}, 0.3)] * 3
    capped = plan(fair, "cap", 2)
    assert [(role, share) for role, _, share in capped] == [("reserved", 0.1)] + [("worker", 0.3)] * 3
    assert [knobs["cpu_cap"] for _, knobs, _ in capped] == pytest.approx([0.2, 0.6, 0.6, 0.6])


# -- the process backend's weight and cap ---------------------------------------------------


async def spin_together(lab: Lab, **knobs: dict) -> list[float]:
    """Hourglass for 2 s in one instance per knobs dict, all on CPU 0 from one start; each one's cpu_share."""
    session, start = lab.session(), time.time() + 0.5
    specs = [InstanceSpec(Labels(session, "worker", name), program="hourglass", args=("share", "2"), wait="exit",
                          cpus="0", capture_output=True, start_at=start, **extra) for name, extra in knobs.items()]
    instances = await lab.backend.create_many(specs)
    assert all(i.exit_code == 0 and i.output for i in instances)
    return [float(i.output.split('"value":')[1].split(",")[0]) for i in instances]


def cpu_cgroup(pid: int) -> Path:
    """The cgroup directory of pid's cpu controller (v1), or its unified cgroup (v2)."""
    lines = [line.split(":", 2) for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]
    for _, controllers, path in lines:
        if "cpu" in controllers.split(","):
            return V1_CPU / path.lstrip("/")
    return Path("/sys/fs/cgroup") / next(path for number, _, path in lines if number == "0").lstrip("/")


@needs_cpu_controller
async def test_weight_and_cap_reach_the_instances_cgroup_and_go_with_it(lab: Lab) -> None:
    session = lab.session()
    spec = InstanceSpec(Labels(session, "worker", "w1"), program="sleeper", cpu_weight=233, cpu_cap=0.25)
    instance = await lab.backend.create(spec)
    directory = cpu_cgroup(instance.details["pid"])
    if (directory / "cpu.shares").exists():
        assert directory == V1_CPU / "labtui" / f"{session}.w1"
        assert (directory / "cpu.shares").read_text().strip() == "2386"  # 233 x 10.24
        assert (directory / "cpu.cfs_quota_us").read_text().strip() == "25000"
    else:
        assert (directory / "cpu.weight").read_text().strip() == "233"
        assert (directory / "cpu.max").read_text().strip() == "25000 100000"
    await lab.backend.destroy(instance)
    assert not directory.exists()


CFS_SLICE_NS = 5_000_000  # the kernel's default sched_cfs_bandwidth_slice_us, in ns


def cfs_numbers(directory: Path) -> dict[str, int]:
    """The cgroup's CFS bandwidth figures: period_us, quota_us, and cpu.stat's nr_periods and nr_throttled."""
    if (directory / "cpu.cfs_quota_us").exists():
        period = int((directory / "cpu.cfs_period_us").read_text())
        quota = int((directory / "cpu.cfs_quota_us").read_text())
    else:
        max_quota, max_period = (directory / "cpu.max").read_text().split()
        period, quota = int(max_period), int(max_quota)
    stat = dict(line.split() for line in (directory / "cpu.stat").read_text().splitlines())
    return {"period_us": period, "quota_us": quota, "nr_periods": int(stat["nr_periods"]),
            "nr_throttled": int(stat["nr_throttled"])}


def cgroup_cpu_ns(directory: Path) -> int:
    """CPU time the processes in the cgroup have received so far (ns, from /proc/PID/schedstat)."""
    total = 0
    for pid in (directory / "cgroup.procs").read_text().split():
        try:
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            pass
    return total


@needs_cpu_controller
async def test_a_cap_holds_an_instance_to_its_share(lab: Lab) -> None:
    """A cap of 0.25 CPU holds a spinner to 25 ms of every 100 ms period, measured on the kernel's own counters.

    Not on wall-time shares: other work on CPU 0 (the other xdist worker, other users) squeezes a spinner
    below its cap, and that says nothing about the cap.  The CFS bandwidth counters do not depend on load:
    the CPU time the instance received is at most its quota in each period that began (plus the first
    quota), and every period in which the kernel throttled it used up its whole quota.  A cap that is not
    applied never throttles (the wait fails); a cap applied 10x too small fails the lower bound; a ceiling
    that leaks fails the upper one.
    """
    session = lab.session()
    spec = InstanceSpec(Labels(session, "worker", "capped"), program="hourglass", args=("share", "3600"),
                        cpus="0", cpu_cap=0.25)
    instance = await lab.backend.create(spec)
    directory = cpu_cgroup(instance.details["pid"])
    try:
        first = cfs_numbers(directory)
        assert first["quota_us"] == first["period_us"] // 4, first
        for _ in range(1200):  # up to about 2 minutes: throttled in 5 periods, each after its 25 ms
            if cfs_numbers(directory)["nr_throttled"] >= 5:
                break
            await asyncio.sleep(0.1)
        throttled = cfs_numbers(directory)["nr_throttled"]
        used_ns = cgroup_cpu_ns(directory)
        periods = cfs_numbers(directory)["nr_periods"]
    finally:
        await lab.backend.destroy(instance)
    quota_ns = first["quota_us"] * 1000
    assert throttled >= 5, f"the capped spinner was held by its cap in {throttled} of {periods} periods"
    # The kernel hands out quota in slices (sched_cfs_bandwidth_slice_us, 5 ms) and notices the overrun at
    # the next tick, so a period may run past its quota by up to a slice; a leaking ceiling runs far past.
    overrun_ns = CFS_SLICE_NS * (periods + 1)
    assert used_ns <= (periods + 1) * quota_ns + overrun_ns, (used_ns, periods, quota_ns)
    assert used_ns >= throttled * quota_ns * 0.9, (used_ns, throttled, quota_ns)
    assert not directory.exists()  # the instance's cpu cgroup went with it


@needs_cpu_controller
async def test_weights_split_a_cpu_in_their_ratio(lab: Lab) -> None:
    heavy, light = await spin_together(lab, heavy={"cpu_weight": 300}, light={"cpu_weight": 100})
    assert 2.2 < heavy / light < 4.0, (heavy, light)


@pytest.mark.parametrize(("knobs", "message"), [
    ({"cpu_weight": 0}, "cpu_weight must be from 1 to 10000, not 0"),
    ({"cpu_weight": 20000}, "cpu_weight must be from 1 to 10000"),
    ({"cpu_cap": 0.001}, "cpu_cap must be at least 0.01 CPUs"),
    ({"cpu_cap": float("nan")}, "cpu_cap must be at least 0.01 CPUs"),
])
async def test_bad_knobs_are_refused_before_anything_starts(lab: Lab, knobs: dict, message: str) -> None:
    session = lab.session()
    with pytest.raises(BackendError, match=message):
        await lab.backend.create(InstanceSpec(Labels(session, "worker", "w1"), program="sleeper", **knobs))
    assert await lab.backend.list(session) == []


@pytest.fixture(scope="module")
def bare_agent(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent built to find no cgroup hierarchy at all, as on a host without a writable one."""
    out = tmp_path_factory.mktemp("agent") / "labtui-agent-bare"
    missing = '"/nonexistent-cgroup"'
    subprocess.run(["cc", "-O1", f"-DCGROUP_V2_ROOT={missing}", f"-DCGROUP_V1_PIDS_ROOT={missing}",
                    f"-DCGROUP_V1_CPU_ROOT={missing}", "-o", str(out), str(builtin_plugins_dir() / "process" / "agent.c")],
                   check=True)
    return out


def test_without_a_cpu_controller_a_cap_fails_before_any_instance_starts(bare_agent: Path, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    run = subprocess.run([str(bare_agent), "spawn", "--session", f"fsbare-{secrets.token_hex(4)}", "--role", "worker",
                          "--instance", "w1", "--instance", "w2", "--cpu-cap", "0.5", "--", "touch", str(marker)],
                         capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode == 1
    assert run.stdout.startswith("error\tw1\tcpu cap needs a writable cgroup cpu controller and found none")
    assert "/nonexistent-cgroup" in run.stdout and run.stdout.count("\n") == 1
    time.sleep(0.2)
    assert not marker.exists()


@pytest.mark.parametrize(("weight", "nice"), [(50, 3), (100, 0), (10, 10), (400, -6)])
def test_without_a_cpu_controller_a_weight_becomes_the_nearest_nice(
        bare_agent: Path, tmp_path: Path, weight: int, nice: int) -> None:
    if nice < 0 and os.geteuid() != 0:
        pytest.skip(f"a negative nice needs root (running as uid {os.geteuid()})")
    out = tmp_path / "nice.out"
    run = subprocess.run([str(bare_agent), "spawn", "--session", f"fsbare-{secrets.token_hex(4)}", "--role", "worker",
                          "--instance", "w1", "--wait", "exit", "--stdout", str(out), "--cpu-weight", str(weight), "--",
                          "sh", "-c", "cut -d' ' -f19 /proc/self/stat"], capture_output=True, text=True, timeout=30, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert out.read_text().strip() == str(nice)


# -- the docker backend's weight and cap ------------------------------------------------------

DOCKER_SOCKET = Path("/var/run/docker.sock")


@pytest.fixture
async def docker_lab(runtime_dir: Path) -> AsyncIterator[Lab]:
    if not DOCKER_SOCKET.is_socket():
        pytest.skip(f"no Docker engine socket at {DOCKER_SOCKET}: start dockerd to run this test")
    async for lab in open_lab("docker", "fs"):
        yield lab


async def test_docker_gives_a_container_its_cpu_shares_and_quota(docker_lab: Lab) -> None:
    from test_docker_backend import cgroup_value, inspect

    spec = InstanceSpec(Labels(docker_lab.session(), "worker", "dw1"), program="sleeper", cpu_weight=233, cpu_cap=0.25)
    instance = await docker_lab.backend.create(spec)
    host_config = (await inspect(instance.handle))["HostConfig"]
    assert (host_config["CpuShares"], host_config["NanoCpus"]) == (2386, 250_000_000)
    pid = (await inspect(instance.handle))["State"]["Pid"]
    assert cgroup_value(pid, "cpu", "cpu.cfs_quota_us", "cpu.max") in ("25000", "25000 100000")
    shares = cgroup_value(pid, "cpu", "cpu.shares", "cpu.weight")
    # on v2 runc converts the shares to a cpu.weight (its formula differs between versions): not the default 100
    assert shares == "2386" if (V1_CPU / "cpu.shares").exists() else shares != "100"
    with pytest.raises(BackendError, match="cpu_weight must be from 1 to 10000"):
        await docker_lab.backend.create(replace(spec, labels=Labels(spec.labels.session, "worker", "dw2"), cpu_weight=0))


# -- whole runs -------------------------------------------------------------------------------


labtui = partial(run_labtui, check=True)


def shares(db: Path) -> dict[tuple[int, str], list[tuple[float, float]]]:
    """(step, role) -> [(achieved, requested)] per instance, from the store."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT r.step, i.role, r.instance_id, "
            "max(value) FILTER (WHERE metric = 'achieved_share'), max(value) FILTER (WHERE metric = 'requested_share') "
            "FROM results r JOIN instances i USING (session_id, instance_id) "
            "WHERE benchmark = 'fairshare' GROUP BY ALL ORDER BY r.step, i.role, r.instance_id").fetchall()
    finally:
        con.close()
    found: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for step, role, _, achieved, requested in rows:
        found.setdefault((step, role), []).append((achieved, requested))
    return found


def together(found: dict[tuple[int, str], list[tuple[float, float]]], step: int) -> float:
    return sum(a for (s, _), rows in found.items() if s == step for a, _ in rows)


SMALL = FAIR + """repetitions = 1
[fairshare]
instances = 4
reserved_share = 0.1
duration_s = 2.0
cpus = "0"
start_delay_s = 0.5
[sampling]
quiet_timeout_s = 1.0
"""


@needs_cpu_controller
def test_run_on_the_process_backend_reproduces_fair_share_weight_and_cap(tmp_path: Path) -> None:
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(tmp_path / "runtime"), "COLUMNS": "200"}
    db = tmp_path / "fs.duckdb"
    out = labtui("run", write(tmp_path, SMALL), "--db", str(db), env=env).stdout
    assert "fairshare on CPUs 0: CPU share achieved against requested, in % of one CPU" in out and "each other (3)" in out
    found = shares(db)
    assert sorted(found) == [(0, "worker"), (1, "reserved"), (1, "worker"), (2, "reserved"), (2, "worker")]
    # equal: each near 1/4 of what the four received together (however little of CPU 0 a busy machine left them)
    equal = [a for a, _ in found[(0, "worker")]]
    assert len(equal) == 4 and together(found, 0) > 0
    assert all(0.7 < a / together(found, 0) / 0.25 < 1.3 for a in equal), equal
    assert {r for _, r in found[(0, "worker")]} == {0.25}
    # weight: the reserved one gets about 1/10 of what they received together, not the 1/4 of an equal share
    ((reserved, requested),) = found[(1, "reserved")]
    assert requested == pytest.approx(0.1) and [r for _, r in found[(1, "worker")]] == pytest.approx([0.3] * 3)
    assert 0.06 < reserved / together(found, 1) < 0.15, (reserved, together(found, 1))
    # cap: caps of 0.1 and 0.3 of CPU 0 are ceilings (other work on CPU 0 may leave less; the kernel's own
    # accounting of a cap is test_a_cap_holds_an_instance_to_its_share)
    ((reserved, _),) = found[(2, "reserved")]
    assert 0 < reserved <= 0.12, reserved
    assert all(a <= 0.33 for a, _ in found[(2, "worker")])
    con = duckdb.connect(str(db), read_only=True)
    try:
        counts = dict(con.execute("SELECT metric, count(*) FROM results GROUP BY metric").fetchall())
        left = con.execute("SELECT count(*) FROM instances WHERE state NOT IN ('exited', 'destroyed')").fetchone()[0]
        (session,) = con.execute("SELECT session_id FROM sessions").fetchone()
    finally:
        con.close()
    assert counts == {"achieved_share": 12, "requested_share": 12, "share_ratio": 12, "cpu_share": 12,
                      "achieved_share_sum": 3}
    assert left == 0
    report = labtui("report", session, "--db", str(db), "--out", str(tmp_path / "report"), env=env)
    html = Path(report.stdout.strip().splitlines()[-1]).read_text()
    assert "fairshare (study 004 Table 3): CPU share achieved against requested, in % of one CPU" in html
    assert "achieved against requested CPU share" in html


async def test_a_backend_without_the_knobs_is_refused_before_anything_starts(runtime_dir: Path) -> None:
    class PinOnly(load_backend_class("process")):  # type: ignore[misc, valid-type]
        """The real process backend, declaring only pinning, as a backend without weights or caps would."""

        capabilities = frozenset({PINNING})

    host = LocalHost()
    suite = load_suite("fairshare-cpu", ["suite.repetitions=1", "sampling.quiet_timeout_s=0"])
    runner = SessionRunner(suite, PinOnly(host), host)
    events = runner.bus.subscribe()
    status = await runner.run()
    seen = []
    while not events.empty():
        seen.append(events.get_nowait())
    ended = [e for e in seen if isinstance(e, SessionEnded)]
    assert status == "failed" and "cannot set CPU weights" in ended[0].message and "fairshare.methods" in ended[0].message
    assert not [e for e in seen if isinstance(e, InstanceCreating)]


# -- the common start is on the host's clock --------------------------------------------------


async def test_the_host_clock_is_read_on_the_host(runtime_dir: Path) -> None:
    before = time.time_ns()
    read = await host_clock_ns(LocalHost())
    assert before <= read <= time.time_ns()  # this host shares the controller's clock


#: How far ahead of the controller's clock AheadHost's clock readings are.
SKEW_S = 1.5


class AheadHost(LocalHost):
    """The local host, whose clock readings (labtui-runat --now, really run here) come back SKEW_S ahead.

    Its agent still holds a start on the real clock, so a start chosen on this host's reading is
    held SKEW_S longer than one chosen on the controller's: which clock the start came from shows.
    """

    def __init__(self) -> None:
        super().__init__("ahead")
        self.readings: list[int] = []

    async def run(self, argv: Sequence[str], *, timeout: float = 60.0, input: bytes | None = None,
                  env: Mapping[str, str] | None = None) -> CommandResult:
        result = await super().run(argv, timeout=timeout, input=input, env=env)
        if Path(argv[0]).name.startswith(RUNAT_NAME + "-") and list(argv[1:]) == ["--now"] and result.ok:
            self.readings.append(int(result.stdout) + int(SKEW_S * 1e9))
            result = replace(result, stdout=f"{self.readings[-1]}\n")
        return result


async def test_output_instances_start_on_the_hosts_clock(runtime_dir: Path) -> None:
    class Recording(load_backend_class("process")):  # type: ignore[misc, valid-type]
        """The real process backend, keeping every spec it was asked to create."""

        def __init__(self, host: LocalHost) -> None:
            super().__init__(host)
            self.specs: list[InstanceSpec] = []

        async def create_many(self, specs):  # type: ignore[no-untyped-def]
            self.specs.extend(specs)
            return await super().create_many(specs)

    host = AheadHost()
    backend = Recording(host)
    suite = load_suite("fairshare-cpu", ["suite.repetitions=1", "sampling.quiet_timeout_s=0", "fairshare.methods=[]",
                                         "fairshare.instances=2", "fairshare.duration_s=0.5",
                                         "fairshare.start_delay_s=0.2"])
    runner = SessionRunner(suite, backend, host)
    events = runner.bus.subscribe()
    status = await runner.run()
    seen = []
    while not events.empty():
        seen.append(events.get_nowait())
    assert status == "completed", [e for e in seen if isinstance(e, SessionEnded)]
    # the common start is the host's reading plus the delay, not the controller's clock plus it
    (reading,) = host.readings
    specs = [s for s in backend.specs if s.labels.session == runner.session_id]
    assert len(specs) == 2 and {s.start_at for s in specs} == {reading / 1e9 + 0.2}
    # and the agent held both until then (on its real clock, SKEW_S after the controller's) and they ended together
    ready = [e for e in seen if isinstance(e, InstanceReady)]
    assert len(ready) == 2
    for event in ready:
        assert event.ready_at - reading / 1e9 - 0.2 >= 0.5, (event, reading)  # not before the start plus 0.5 s
        # held SKEW_S + 0.2 s from the reading, then ran 0.5 s: on the controller's clock it would be 0.7 s at most
        assert event.boot_s > SKEW_S, event


def ended(at: float) -> Instance:
    return Instance(Labels("fsc", "worker", f"w{at}"), f"w{at}", "process", "h", "exited", ready_at=at)


def test_instances_that_ended_together_on_any_clock_ran_together() -> None:
    far = time.time() + 3600.0  # a host clock an hour off the controller's
    _check_together([ended(far), ended(far + 0.3), ended(far + 0.1)], 2.0)
    _check_together([ended(far), Instance(Labels("fsc", "worker", "w"), "w", "process", "h", "exited")], 2.0)
    # 10% of 2 s plus 0.5 s is the most one may end after the first
    with pytest.raises(BackendError, match=r"1 of 3 instances ended up to 2\.0 s after the first one: they did not run "
                                           r"at the same time"):
        _check_together([ended(far + 2.0), ended(far), ended(far + 0.2)], 2.0)
    with pytest.raises(BackendError, match="2 of 3 instances ended up to 0.8 s"):
        _check_together([ended(far), ended(far + 0.8), ended(far + 0.75)], 2.0)


# -- Xen over SSH, against the simulated Domain-0 ------------------------------------------------

ADDRESS = "127.0.0.41"


@pytest.fixture(scope="module")
def dom0(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeHost, Path]]:
    if not sshd_available():
        pytest.skip("needs OpenSSH sshd (apt install openssh-server)")
    keys = tmp_path_factory.mktemp("fskeys")
    write_key(keys / "client_key")
    host = start_fake_host(tmp_path_factory.mktemp("fsdom0"), "fshost", ADDRESS, "xen", keys / "client_key.pub")
    try:
        yield host, keys
    finally:
        host.tool("sh", "-c", "for n in $(xl list | tail -n +3 | cut -c1-40); do xl destroy $n; done")
        host.server.stop()


@pytest.fixture
def xen_env(dom0: tuple[FakeHost, Path], tmp_path: Path) -> dict[str, str]:
    host, keys = dom0
    return {**os.environ, "LABTUI_CONFIG": str(write_lab(tmp_path, [host], keys)),
            "LABTUI_RUNTIME_DIR": str(tmp_path / "rt"), "COLUMNS": "200"}


async def test_xen_domains_get_their_credit_weight_and_cap(dom0: tuple[FakeHost, Path], xen_env: dict[str, str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("LABTUI_CONFIG", "LABTUI_RUNTIME_DIR"):
        monkeypatch.setenv(key, xen_env[key])
    fake, _ = dom0
    host = get_host("fshost")
    xen = open_backend("xen", host)
    try:
        spec = InstanceSpec(Labels("fsx1", "worker", "wo1"), program="sleeper", cpus="0", cpu_weight=233, cpu_cap=0.25)
        instance = await xen.create(spec)
        try:
            assert (instance.details["credit_weight"], instance.details["credit_cap"]) == (596, 25)
            one = fake.tool("xl", "sched-credit", "-d", instance.name).stdout.splitlines()
            assert one[0] == f"{'Name':<33} {'ID':>4} {'Weight':>6} {'Cap':>4}" and one[1].split()[-2:] == ["596", "25"]
            every = fake.tool("xl", "sched-credit").stdout.splitlines()
            assert every[0].startswith("Cpupool Pool-0: tslice=30ms") and every[2].split()[0] == "Domain-0"
            with pytest.raises(BackendError, match=r"Cpu cap out of range, valid range is from 0 to 100 .*; "
                                                   r"libxl_domain_sched_params_set failed\."):
                await xen.set_credit(instance, cap=150)
            bad = fake.tool("xl", "sched-credit", "-w", "300")
            assert bad.returncode == 1 and bad.stderr == "Must specify a domain.\n"
        finally:
            await xen.destroy(instance, force=True)
        with pytest.raises(BackendError, match="cpu_cap must be at least 0.01"):
            await xen.create(InstanceSpec(Labels("fsx1", "worker", "wo2"), program="sleeper", cpu_cap=0.0))
    finally:
        await host.close()


def test_xen_fairshare_run_reads_each_domains_cpu_time(dom0: tuple[FakeHost, Path], xen_env: dict[str, str],
                                                        tmp_path: Path) -> None:
    db = tmp_path / "xen.duckdb"
    out = labtui("run", "xen-fairshare", "--host", "fshost", "--set", "suite.repetitions=1",
                 "--set", "fairshare.instances=3", "--set", "fairshare.reserved_share=0.5",
                 "--set", "fairshare.duration_s=3", "--set", "fairshare.start_delay_s=0.5", "--db", str(db),
                 env=xen_env).stdout
    assert "fairshare on CPUs 0: CPU share achieved against requested, in % of one CPU" in out
    found = shares(db)
    assert sorted(found) == [(0, "worker"), (1, "reserved"), (1, "worker"), (2, "reserved"), (2, "worker")]
    # xl list's Time(s) has 0.1 s steps: about 1 s of CPU each over the 3 s window
    equal = [a for a, _ in found[(0, "worker")]]
    assert all(0.5 < a / together(found, 0) * 3 < 1.5 for a in equal), equal
    if cpu_controller():  # the simulator makes weights and caps felt through a cpu cgroup
        ((reserved, _),) = found[(1, "reserved")]
        assert 0.38 < reserved / together(found, 1) < 0.65, (reserved, together(found, 1))
        ((reserved, _),) = found[(2, "reserved")]
        assert reserved <= 0.5 + 0.07
        assert all(a <= 0.25 + 0.07 for a, _ in found[(2, "worker")])
    fake, _ = dom0
    assert [line for line in fake.tool("xl", "list").stdout.splitlines() if "labtui." in line] == []
