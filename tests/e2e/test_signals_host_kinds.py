"""Every stop signal tears a run down cleanly on every host kind, not only the local process backend.

A real `labtui run` is interrupted at a random moment (often while a batch is being created) on:
the process backend over SSH (a plain sshd), the simulated illumos zones host over SSH, and the
local Docker engine.  Afterwards, with no cleanup command run: nothing of the session is listed
on its host, no instance row is open, and the session's end names the signal.
e2e/test_session_service.py does the same, twice per schedule, on the local process backend.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from interrupted_run import check_torn_down, interrupt_run, open_rows
from simulators.fakehost import start_fake_host, write_lab
from sshd_fixture import sshd_available, write_key

from labtui.backends.base import open_backend
from labtui.hosts import get_host

#: Hosts of this module (addresses no other test module uses).
SSH_HOST, SSH_ADDRESS = "sigssh", "127.0.0.71"
ZONES_HOST, ZONES_ADDRESS = "sigzones", "127.0.0.72"
#: (backend, host) crossings; each meets every schedule once.
TARGETS = [("process", SSH_HOST), ("zones", ZONES_HOST), ("docker", "local")]
#: (first signal, second signal or None)
SCHEDULES = [(signal.SIGINT, None), (signal.SIGTERM, None), (signal.SIGHUP, None), (signal.SIGINT, signal.SIGINT)]
#: Batches big enough that a signal often lands in one, small enough for the zones simulator.
BATCHY = ["--set", "scale.steps=12", "--set", "scale.per_step=6", "--set", "suite.repetitions=1",
          "--set", "sampling.quiet_timeout_s=0"]


def _unavailable(backend: str) -> str | None:
    if backend in ("process", "zones") and not sshd_available():
        return "OpenSSH's sshd is not installed (apt install openssh-server)"
    if backend == "docker":
        docker = shutil.which("docker")
        if docker is None or subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode != 0:
            return "no Docker daemon answers `docker info` (apt install docker.io; start dockerd)"
    return None


@pytest.fixture(scope="module")
def lab_config(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path | None]:
    """A lab config with a plain SSH host and a simulated illumos host, both on loopback sshd."""
    if not sshd_available():
        yield None
        return
    keys = tmp_path_factory.mktemp("sigkeys")
    write_key(keys / "client_key")
    plain = start_fake_host(tmp_path_factory.mktemp("sigssh"), SSH_HOST, SSH_ADDRESS, "zones",
                            keys / "client_key.pub", tools=())
    zones = start_fake_host(tmp_path_factory.mktemp("sigzones"), ZONES_HOST, ZONES_ADDRESS, "zones",
                            keys / "client_key.pub")
    try:
        yield write_lab(tmp_path_factory.mktemp("siglab"), [plain, zones], keys)
    finally:
        for host in (plain, zones):
            host.server.stop()


async def _listed(backend: str, host: str, session: str) -> list[str]:
    """What the backend lists of the session on its host, after the run."""
    opened = get_host(host)
    try:
        return [i.name for i in await open_backend(backend, opened).list(session)]
    finally:
        await opened.close()


@pytest.mark.slow
@pytest.mark.parametrize("first,second", SCHEDULES, ids=lambda s: getattr(s, "name", "none"))
@pytest.mark.parametrize("backend,host", TARGETS, ids=[f"{b}@{h}" for b, h in TARGETS])
def test_a_signal_at_a_random_moment_tears_down_every_host_kind(
    backend: str, host: str, first: signal.Signals, second: signal.Signals | None,
    lab_config: Path | None, tmp_path: Path, runtime_dir: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    missing = _unavailable(backend)
    if missing:
        if os.environ.get("LABTUI_CI"):
            pytest.fail(f"CI installs what this needs, yet: {missing}")
        pytest.skip(missing)
    if lab_config is not None:
        monkeypatch.setenv("LABTUI_CONFIG", str(lab_config))
    db = tmp_path / "lab.duckdb"
    run = interrupt_run(["boot-scaling", "--backend", backend, "--host", host, *BATCHY], db, first, second,
                        latest_s=4.0)
    check_torn_down(run, first)
    session, err = run.session, run.stderr
    assert asyncio.run(_listed(backend, host, session)) == [], err
    assert open_rows(db, session) == [], err
