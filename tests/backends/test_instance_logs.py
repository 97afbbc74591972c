"""`logs` of the process, zones and xen backends (the console's `l`), with real processes and simulators.

The process backend's agent keeps each instance's stdout and stderr in its runtime dir; the
zones backend reads zoneadmd's console log under the zonepath (the simulator writes it as
illumos does, tests/simulators/_zonesim.py); the xen backend reads xenconsoled's guest log.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from backend_lab import Lab
from simulators.fakehost import FakeHost, start_fake_host, write_lab
from sshd_fixture import sshd_available, write_key

from labtui.backends.base import Backend, BackendError, Instance, InstanceSpec, Labels, open_backend
from labtui.hosts import get_host

BACKEND = "process"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "logs"

ZONES_ADDRESS, XEN_ADDRESS = "127.0.0.81", "127.0.0.82"
needs_sshd = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")


# -- process ------------------------------------------------------------------------------


async def wait_for_text(backend: Backend, instance: Instance, wanted: str) -> str:
    """The instance's log once it holds `wanted` (output reaches it as the instance runs)."""
    text = ""
    for _ in range(100):
        text = await backend.logs(instance) or ""
        if wanted in text:
            return text
        await asyncio.sleep(0.05)
    raise AssertionError(f"{wanted!r} not in the log: {text!r}")


async def test_process_log_holds_the_output_and_goes_with_the_instance(lab: Lab, runtime_dir: Path) -> None:
    session = lab.session()
    (instance,) = await lab.backend.create_many([InstanceSpec(Labels(session, "background", "chatty"), program="hello")])
    text = await wait_for_text(lab.backend, instance, "hello")
    assert text.splitlines() == ["hello from labtui"]
    log = runtime_dir / "logs" / session / "chatty.log"
    assert log.exists() and log.stat().st_mode & 0o777 == 0o600
    await lab.backend.destroy(instance)  # hello has exited: the agent finds it gone and removes its log
    assert not log.exists() and not log.parent.exists()  # the session's last instance: its directory too
    with pytest.raises(BackendError, match="no log of"):
        await lab.backend.logs(instance)


async def test_process_instance_run_for_its_output_has_no_log(lab: Lab) -> None:
    instance = await lab.backend.create(InstanceSpec(Labels(lab.session(), "worker", "w1"), tool="/bin/echo",
                                                     args=("result",), wait="exit", capture_output=True))
    assert instance.output == "result\n"
    with pytest.raises(BackendError, match="its output went to its result"):
        await lab.backend.logs(instance)


async def test_agent_refuses_a_log_for_an_instance_that_is_not_a_file_name(lab: Lab) -> None:
    spec = InstanceSpec(Labels(lab.session(), "background", "../escape"), program="hello")
    with pytest.raises(BackendError, match="open log"):
        await lab.backend.create(spec)


# -- zones and xen on fake hosts --------------------------------------------------------------


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("logkeys")
    write_key(tmp / "client_key")
    return tmp


def fake_host(tmp_path_factory: pytest.TempPathFactory, keys: Path, name: str, address: str,
              kind: str) -> Iterator[FakeHost]:
    if not sshd_available():
        pytest.skip("needs OpenSSH sshd (apt install openssh-server)")
    host = start_fake_host(tmp_path_factory.mktemp(name), name, address, kind, keys / "client_key.pub")
    try:
        yield host
    finally:
        host.server.stop()


@pytest.fixture(scope="module")
def illumos(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> Iterator[FakeHost]:
    yield from fake_host(tmp_path_factory, keys, "logzones", ZONES_ADDRESS, "zones")


@pytest.fixture(scope="module")
def dom0(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> Iterator[FakeHost]:
    yield from fake_host(tmp_path_factory, keys, "logxen", XEN_ADDRESS, "xen")


@pytest.fixture
async def remote(request: pytest.FixtureRequest, tmp_path: Path, keys: Path,
                 monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[FakeHost, Backend]]:
    fake: FakeHost = request.getfixturevalue(request.param)
    for path in fake.state.glob("*.json"):
        path.unlink()
    fake.knobs(console_log_dir=str(tmp_path / "xen-console"))
    monkeypatch.setenv("LABTUI_CONFIG", str(write_lab(tmp_path, [fake], keys)))
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "rt"))
    host = get_host(fake.name)
    backend = open_backend("zones" if request.param == "illumos" else "xen", host)
    try:
        yield fake, backend
    finally:
        for instance in await backend.list():
            await backend.destroy(instance, force=True)
        await host.close()


@needs_sshd
@pytest.mark.parametrize("remote", ["illumos"], indirect=True)
async def test_zone_console_log_as_zoneadmd_keeps_it(remote: tuple[FakeHost, Backend], tmp_path: Path) -> None:
    fake, zones = remote
    zones.zonepath_base = str(tmp_path / "zones")  # type: ignore[attr-defined]  # where this test's zones live
    (tmp_path / "zones").mkdir()
    instance = await zones.create(InstanceSpec(Labels(f"zl{secrets.token_hex(2)}", "background", "ba1"),
                                               program="sleeper"))
    (listed,) = await zones.list(instance.labels.session)
    text = await zones.logs(listed)
    lines = (text or "").splitlines()
    assert lines[0] == "[NOTICE: Zone booting up]" and lines[-1] == f"Hostname: {instance.name}", lines
    assert not any(line.startswith("{") or "\r" in line for line in lines)  # the messages, not zoneadmd's JSON
    raw = (Path(listed.details["zonepath"]) / "logs" / "console.log").read_text()
    assert '"stream":"logfile"' in raw and raw.count('"stream":"console"') == len(lines)
    await zones.destroy(instance)
    with pytest.raises(BackendError, match="no console log of zone"):
        await zones.logs(listed)


def test_console_text_leaves_out_a_cut_first_line_and_other_streams() -> None:
    from plugins.zones import console_text

    log = ('le", "msg":"cut"}\n'
           '{ "time": "2026-01-01T00:00:00.000000000Z", "v": 0, "hostname": "h", "name": "zoneadmd",'
           '"pid": 7, "level": 30, "msg":"open", "stream":"logfile" }\n'
           '{ "time": "2026-01-01T00:00:01.000000000Z", "v": 0, "hostname": "h", "name": "zoneadmd",'
           '"pid": 7, "level": 30, "msg":"login: \\u00e9\\r\\n", "stream":"console" }\n')
    assert console_text(log) == "login: é\n"


@needs_sshd
@pytest.mark.parametrize("remote", ["dom0"], indirect=True)
async def test_xen_console_log_as_xenconsoled_keeps_it(remote: tuple[FakeHost, Backend], tmp_path: Path) -> None:
    fake, xen = remote
    kernel = tmp_path / "kernel.sh"
    kernel.write_text("#!/bin/sh\necho 'Linux version 6.1.0 (guest)'\necho 'login:'\nexec sleep 600\n")
    kernel.chmod(0o755)
    instance = await xen.create(InstanceSpec(Labels(f"xl{secrets.token_hex(2)}", "background", "ba1"),
                                             image=str(kernel)))
    with pytest.raises(BackendError, match="--log=guest"):
        await xen.logs(instance)  # xenconsoled's default log dir: nothing there
    xen.console_log_dir = str(tmp_path / "xen-console")  # type: ignore[attr-defined]  # the sim's --log-dir
    text = await wait_for_text(xen, instance, "login:")
    assert text.splitlines() == ["Linux version 6.1.0 (guest)", "login:"]

