"""Real tools as workers: a suite names a tool on the host (or in an image) and the parser of its output.

The end-to-end runs use stress-ng, a real tool from Debian that prints its metrics on stderr (as
lmbench and UnixBench's programs do), through `labtui run` on the process backend, on this machine
and over SSH.  The readings carry the tool's own benchmark name, so they never pass for a probe's.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import cli_run
import duckdb
import pytest
from simulators.fakehost import start_fake_host, write_lab
from sshd_fixture import sshd_available, write_key

from labtui.backends.base import BackendError, InstanceSpec, Labels, open_backend
from labtui.engine.worker_runs import check_worker_runs
from labtui.hosts.local import LocalHost
from labtui.parsers.registry import PARSERS, WORKER_OUTPUTS
from labtui.suites import SuiteError, load_suite

STRESS_NG = shutil.which("stress-ng") or "/usr/bin/stress-ng"
SSH_HOST, SSH_ADDRESS = "toolssh", "127.0.0.73"
DOCKER_SOCKET = "/var/run/docker.sock"


def suite_text(worker: str, kind: str = "scaling") -> str:
    head = f'[suite]\nname = "tools"\nkind = "{kind}"\nrepetitions = 1\n'
    scale = {"scaling": "[scale]\nsteps = 1\nper_step = 2\n", "creation": "[scale]\nsteps = 2\nper_step = 1\n"}.get(kind, "")
    background = '[background]\nprogram = "sleeper"\n' if kind in ("scaling", "creation") else ""
    return head + scale + background + "[worker]\n" + worker


def write_suite(tmp_path: Path, worker: str, kind: str = "scaling") -> Path:
    path = tmp_path / "tools.toml"
    path.write_text(suite_text(worker, kind))
    return path


STRESS_WORKER = (f'tool = "{STRESS_NG}"\nargs = ["--cpu", "1", "--timeout", "1s", "--metrics-brief"]\n'
                 'measure = "output"\noutput = "stress-ng"\nruns = 2\nwarmup = 0\n')


# --- the suite file ---------------------------------------------------------------------------------


def test_a_tool_worker_loads_with_its_path_args_and_parser(tmp_path: Path) -> None:
    worker = load_suite(str(write_suite(tmp_path, STRESS_WORKER))).worker
    assert worker is not None
    assert (worker.tool, worker.program, worker.image) == (STRESS_NG, None, None)
    assert worker.args == ("--cpu", "1", "--timeout", "1s", "--metrics-brief")
    assert worker.output == "stress-ng"


def test_a_worker_without_output_reads_probe_lines(tmp_path: Path) -> None:
    worker = load_suite(str(write_suite(tmp_path, 'program = "syscall"\nmeasure = "output"\n'))).worker
    assert worker is not None and worker.output == "probe"


@pytest.mark.parametrize("worker,complaint", [
    ('tool = "stress-ng"\nmeasure = "output"\noutput = "stress-ng"\n', "absolute path"),
    ('tool = "/usr/bin/stress-ng"\nprogram = "hello"\nmeasure = "output"\n', "exactly one of program"),
    ('tool = "/usr/bin/stress-ng"\nimage = "x"\nmeasure = "output"\n', "exactly one of program"),
    ('tool = "/usr/bin/stress-ng"\nmeasure = "boot"\noutput = "stress-ng"\n', 'needs measure = "output"'),
    ('program = "syscall"\nmeasure = "output"\noutput = "lmbench"\n', "is a labtui probe"),
    ('tool = "/usr/bin/x"\nmeasure = "output"\noutput = "lmbench3"\n', "one of: " + ", ".join(WORKER_OUTPUTS)),
])
def test_a_bad_tool_worker_is_refused_naming_the_key(tmp_path: Path, worker: str, complaint: str) -> None:
    path = write_suite(tmp_path, worker)
    with pytest.raises(SuiteError) as caught:
        load_suite(str(path))
    assert complaint in str(caught.value)
    assert "tools.toml" in str(caught.value)


def test_a_creation_suite_refuses_a_tool(tmp_path: Path) -> None:
    path = write_suite(tmp_path, 'tool = "/usr/bin/stress-ng"\nmeasure = "boot"\n', kind="creation")
    with pytest.raises(SuiteError, match="give program, not tool"):
        load_suite(str(path))


#: A real output of each tool, from tests/data/parsers (SOURCES.md there says where each came from).
SAMPLES = {"lmbench": "lmbench-3alpha4-results.txt", "unixbench": "unixbench-5.1.2-lpi4a.txt",
           "sysbench": "sysbench-1.0.20-cpu-ci.txt", "stress-ng": "stress-ng-0.15.06-cpu.txt"}


@pytest.mark.parametrize("output", [o for o in WORKER_OUTPUTS if o != "probe"])
def test_every_real_tool_output_has_a_parser_that_names_the_tool(output: str) -> None:
    readings = PARSERS[output].parse((Path(__file__).parents[1] / "data" / "parsers" / SAMPLES[output]).read_text())
    assert readings and {r.benchmark for r in readings} == {output}


# --- which backends can run it ----------------------------------------------------------------------


@pytest.mark.parametrize("backend,tool_ok,stderr_ok", [
    ("process", True, True), ("docker", False, True), ("zones", False, False), ("xen", False, False),
    ("unikraft", False, False),
])
def test_a_backend_that_cannot_run_the_tool_is_refused_before_anything_starts(
    tmp_path: Path, backend: str, tool_ok: bool, stderr_ok: bool
) -> None:
    opened = open_backend(backend, LocalHost())
    on_host = load_suite(str(write_suite(tmp_path, STRESS_WORKER)))
    in_image = load_suite(str(write_suite(tmp_path, 'image = "my/stress-ng"\nargs = ["--cpu", "1"]\n'
                                                    'measure = "output"\noutput = "stress-ng"\n')))
    for suite, ok in ((on_host, tool_ok and stderr_ok), (in_image, stderr_ok)):
        if ok:
            check_worker_runs(suite, opened)
        else:
            with pytest.raises(BackendError, match=f"backend {backend} cannot"):
                check_worker_runs(suite, opened)


# --- end to end -------------------------------------------------------------------------------------


def _need_stress_ng() -> None:
    if not Path(STRESS_NG).exists():
        if os.environ.get("LABTUI_CI"):
            pytest.fail("CI installs stress-ng, yet it is missing")
        pytest.skip("stress-ng is not installed (apt install stress-ng)")


@pytest.fixture(scope="module")
def ssh_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """A lab config naming one plain SSH host on loopback (the process backend runs its agent there)."""
    if not sshd_available():
        yield None
        return
    keys = tmp_path_factory.mktemp("toolkeys")
    write_key(keys / "client_key")
    host = start_fake_host(tmp_path_factory.mktemp("toolssh"), SSH_HOST, SSH_ADDRESS, "zones",
                           keys / "client_key.pub", tools=())
    try:
        yield write_lab(tmp_path_factory.mktemp("toollab"), [host], keys)
    finally:
        host.server.stop()


@pytest.mark.slow
@pytest.mark.parametrize("host", ["local", SSH_HOST])
def test_a_real_tool_runs_as_the_worker_and_its_stderr_readings_are_recorded_as_its_own(
    host: str, tmp_path: Path, runtime_dir: Path, ssh_lab: Path | None
) -> None:
    _need_stress_ng()
    env = {**os.environ, "COLUMNS": "200"}
    if host != "local":
        if ssh_lab is None:
            pytest.skip("OpenSSH's sshd is not installed (apt install openssh-server)")
        env["LABTUI_CONFIG"] = str(ssh_lab)
    db = tmp_path / "lab.duckdb"
    run = cli_run.labtui("run", str(write_suite(tmp_path, STRESS_WORKER)), "--host", host,
                         "--set", "sampling.quiet_timeout_s=0", "--db", str(db), env=env, timeout=600)
    assert run.returncode == 0, run.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select benchmark, metric, step, count(*), min(value) from results "
                           "group by all order by all").fetchall()
        config = con.execute("select config from sessions").fetchone()[0]
    assert rows == [("stress-ng", "cpu_bogo_ops_s", 0, 2, rows[0][4]), ("stress-ng", "cpu_bogo_ops_s", 1, 2, rows[1][4]),
                    ("stress-ng", "cpu_bogo_ops_s_cpu", 0, 2, rows[2][4]),
                    ("stress-ng", "cpu_bogo_ops_s_cpu", 1, 2, rows[3][4])], rows
    assert all(row[4] > 0 for row in rows)
    assert STRESS_NG in config and '"output": "stress-ng"' in config  # the session says which tool ran
    assert "stress-ng: cpu_bogo_ops_s" in run.stdout  # the table is headed by the tool's name, not a probe's


@pytest.mark.skipif(not Path(DOCKER_SOCKET).is_socket(), reason=f"no Docker engine socket at {DOCKER_SOCKET}")
@pytest.mark.parametrize("held", [False, True])
async def test_docker_captures_stderr_with_stdout_only_when_asked(runtime_dir: Path, held: bool) -> None:
    """A probe given a bad argument complains on stderr: that text is in the output only with capture_stderr,
    and labtui-runat's closing line (a held start) never is."""
    import time

    backend = open_backend("docker", LocalHost())
    await backend.prepare(["arith"])
    session = "stderr-" + secrets.token_hex(4)
    made = []
    try:
        for i, stderr in enumerate((False, True)):
            spec = InstanceSpec(Labels(session, "worker", f"wo{i}"), program="arith", args=("no-such-test",),
                                wait="exit", capture_output=True, capture_stderr=stderr,
                                start_at=time.time() + 1 if held else None)
            made.append(instance := await backend.create(spec))
            assert instance.exit_code != 0
            assert ("arith" in (instance.output or "")) == stderr, instance.output
            assert "labtui-runat\t" not in (instance.output or "")
    finally:
        await backend.destroy_many(await backend.list(session), force=True)


def test_a_tool_that_fails_fails_the_run_with_its_own_last_words(tmp_path: Path, runtime_dir: Path) -> None:
    worker = ('tool = "/bin/sh"\nargs = ["-c", "echo starting; echo stress-ng: no such stressor >&2; exit 3"]\n'
              'measure = "output"\noutput = "stress-ng"\nwarmup = 0\n')
    db = tmp_path / "lab.duckdb"
    run = cli_run.labtui("run", str(write_suite(tmp_path, worker)), "--set", "sampling.quiet_timeout_s=0",
                         "--db", str(db), env={**os.environ, "COLUMNS": "300"})
    assert run.returncode != 0
    assert "exited with code 3: starting / stress-ng: no such stressor" in run.stdout + run.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select status from sessions").fetchone() == ("failed",)
