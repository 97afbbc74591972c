"""The matrix: every built-in suite runs with --profile quick through the CLI and through the console.

Each suite runs on its own backend where this machine has it (process, docker,
unikraft on QEMU, and the zones and Xen simulators reached over real SSH),
once with `labtui run` and once from the console's start dialog driven by a
Pilot.  Both stores must hold the same steps and metrics.  A suite that cannot
run here is skipped with the reason; under CI (LABTUI_CI=1) that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import cli_run
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from simulators.fakehost import start_fake_host, write_lab
from simulators.guest import make_guest_image
from sshd_fixture import free_port, sshd_available, write_key

from labtui.engine import scaling
from labtui.store import fetch_frame, slowdown_frame
from labtui.suites import list_suites, load_suite
from labtui.ui.model.series import SLOWDOWN_COLUMNS, slowdown

SUITES = sorted(info.name for info in list_suites())
#: Simulated hosts of this module (addresses no other test module uses).
ZONES_HOST, ZONES_ADDRESS = "mzones", "127.0.0.61"
XEN_HOST, XEN_ADDRESS = "mxen", "127.0.0.62"
GUEST_POOL, GUEST_PATTERN = "127.0.12.0/29", "127.0.12.*"
SIZE = (160, 50)


def _backend_of(name: str) -> str:
    return load_suite(name).backend or "process"


def _missing(backend: str) -> str | None:
    """Why a backend cannot run on this machine (None: it can)."""
    if backend == "docker":
        docker = shutil.which("docker")
        if docker is None or subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode != 0:
            return "docker: no Docker daemon answers `docker info` (apt install docker.io; start dockerd)"
    if backend == "unikraft" and shutil.which("qemu-system-x86_64") is None:
        return "unikraft: no qemu-system-x86_64 (apt install qemu-system-x86)"
    if backend in ("zones", "xen") and not sshd_available():
        return f"{backend}: the simulator needs OpenSSH's sshd (apt install openssh-server)"
    return None


def _missing_input(name: str) -> str | None:
    """A file the suite names that no installer provides (a real Unikraft image built with kraft)."""
    suite = load_suite(name, (), "quick")
    for program in (suite.worker, suite.background, suite.attacker):
        image = getattr(program, "image", None)
        if image and image.startswith("/") and not Path(image).exists():
            return f"{name}: its image {image} is not on this machine (built with kraft, see docs/backend-unikraft.md)"
    return None


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("LABTUI_CI"):
        pytest.fail(f"CI installs what this needs, yet: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """A lab config with a simulated illumos host and a simulated Xen Domain-0 that boots guests."""
    if not sshd_available():
        yield None
        return
    keys = tmp_path_factory.mktemp("mkeys")
    write_key(keys / "client_key")
    zones = start_fake_host(tmp_path_factory.mktemp("mzones"), ZONES_HOST, ZONES_ADDRESS, "zones",
                            keys / "client_key.pub")
    xen = start_fake_host(tmp_path_factory.mktemp("mxen"), XEN_HOST, XEN_ADDRESS, "xen", keys / "client_key.pub")
    try:
        image = make_guest_image(tmp_path_factory.mktemp("mguest"), keys / "client_key.pub",
                                 free_port("127.0.12.1"))
        lab = tmp_path_factory.mktemp("mlab")
        config = write_lab(lab, [zones, xen], keys)
        (lab / "guest_known_hosts").write_text(image.known_hosts_line(GUEST_PATTERN))
        config.write_text(config.read_text() + f'\n[hosts.{XEN_HOST}.guests]\nkernel = "{image.kernel}"\n'
                          f'addresses = "{GUEST_POOL}"\nport = {image.port}\nidentity = "{lab / "client_key"}"\n'
                          f'known_hosts = "{lab / "guest_known_hosts"}"\n')
        yield config
    finally:
        for host in (zones, xen):
            host.server.stop()


def _host_of(backend: str) -> str:
    return {"zones": ZONES_HOST, "xen": XEN_HOST}.get(backend, "local")


def _shape(db: Path) -> tuple[list[tuple], list[tuple], int]:
    """What must agree between the faces: each session's end, the metrics per step, the number of steps."""
    ends = fetch_frame(db, "select status, coalesce(message, '') as message from sessions").rows()
    metrics = fetch_frame(db, "select distinct repetition, step, benchmark, metric from results order by all").rows()
    steps = fetch_frame(db, "select count(*) as n from steps")["n"][0]
    return ends, metrics, steps


def _open_rows(db: Path) -> list[tuple]:
    return fetch_frame(db, "select instance_id, state from instances where destroyed_at is null "
                           "and state not in ('exited')").rows()


async def _run_in_console(db: Path, name: str, host: str, backend: str) -> tuple[str, pl.DataFrame]:
    """Start `name` with the quick profile from the start dialog, wait for its end.

    Returns the session id and the slowdown table the console showed live.
    """
    from textual.widgets import Select

    from labtui.ui.app import LabApp
    from labtui.ui.start_dialog import StartDialog

    app = LabApp(db, idle_sampling=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("s")
        await _until(pilot, lambda: isinstance(app.screen, StartDialog), 10, "the start dialog")
        dialog = app.screen
        dialog.query_one("#suite", Select).value = name
        dialog.query_one("#host", Select).value = host
        profile = dialog.query_one("#profile", Select)
        await _until(pilot, lambda: ("quick", "quick") in [(p, v) for p, v in profile._options], 30, "the profiles")
        profile.value = "quick"
        chosen = dialog.query_one("#backend", Select)
        await _until(pilot, lambda: chosen.value == backend and dialog.choices.get(backend) is not None, 90,
                     f"backend {backend} checked on {host}")
        assert dialog.choices[backend].usable, dialog.choices[backend].reason
        await _until(pilot, lambda: "plan:" in str(dialog.query_one("#plan").content), 30, "the plan preview")
        profile.value = "quick"  # chosen again once every worker the suite choice started has run
        await pilot.pause(0.3)
        assert profile.value == "quick"
        await pilot.press("ctrl+s")
        view = app.run_view
        await _until(pilot, lambda: view.model.session_id != "", 60, "the session to start")
        session = view.model.session_id
        await _until(pilot, lambda: view.caught_up, 600, "the session to end and its events to be drained")
        live = slowdown(view.model.results_frame())
    return session, live


async def _until(pilot, condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.1)


def _suite_param(index: int, name: str) -> object:
    """A suite of the matrix in one of two xdist groups (``-n 2 --dist loadgroup`` shares the matrix
    between both workers); the suites on simulated hosts all in one, so one worker starts those hosts."""
    group = 1 if _backend_of(name) in ("zones", "xen") else index % 2
    return pytest.param(name, marks=pytest.mark.xdist_group(f"e2e/matrix-{group}"))


@pytest.mark.slow
@pytest.mark.parametrize("name", [_suite_param(i, n) for i, n in enumerate(SUITES)])
async def test_every_suite_runs_the_same_from_the_cli_and_the_console(
    name: str, request: pytest.FixtureRequest, runtime_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = _backend_of(name)
    if reason := _missing(backend):
        _skip_or_fail(reason)
    if reason := _missing_input(name):
        pytest.skip(reason)  # nothing CI installs can provide it
    host = _host_of(backend)
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    simulated = request.getfixturevalue("simulated") if host != "local" else None
    if simulated is not None:
        monkeypatch.setenv("LABTUI_CONFIG", str(simulated))
    cli_db, console_db = tmp_path / "cli.duckdb", tmp_path / "console.duckdb"
    # Neither face waits for a quiet host before a repetition: with two workers the host is never quiet and
    # each wait ran out its 10 s. What the matrix compares (ends, steps, metrics) does not depend on it.
    monkeypatch.setattr(scaling, "QUIET_CPU_AVAIL", 0.0)  # the console runs its session in this process
    cli = cli_run.labtui("run", name, "--profile", "quick", "--db", str(cli_db), "--host", host,
                         "--set", "sampling.quiet_timeout_s=0", timeout=600, env={**os.environ, "COLUMNS": "200"})
    assert cli.returncode == 0, cli.stdout + cli.stderr
    session, live = await _run_in_console(console_db, name, host, backend)
    cli_shape, console_shape = _shape(cli_db), _shape(console_db)
    assert cli_shape[0] == [("completed", "")], cli_shape[0]
    assert console_shape == cli_shape
    assert cli_shape[1], "no results recorded"
    assert _open_rows(cli_db) == [] and _open_rows(console_db) == []
    # the console's live slowdown is the report's, number for number
    stored = slowdown_frame(console_db, session).select(SLOWDOWN_COLUMNS)
    order = ["benchmark", "metric", "placement", "background"]
    # equal to the last bits a float sum in another order may differ by
    assert_frame_equal(live.sort(order), stored.sort(order), check_dtypes=False, check_exact=False,
                       rel_tol=1e-9, abs_tol=1e-12)
