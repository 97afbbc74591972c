"""A session's SSH host lost mid-run: the sampler notices, reconnects once, then the session fails.

The sshd on 127.0.0.45 is killed while the suite waits in a long settle pause
(no command of the experiment is running), so only the resource sampler can
notice.  CI needs the openssh-server package (sshd) and a C compiler (cc) for
the process backend's agent, as tests/test_ssh_host.py does.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sshd_fixture import Sshd, host_table, sshd_available, start_sshd, write_key

from labtui.backends import open_backend
from labtui.engine import SessionRunner
from labtui.events import Log, SessionEnded, StepStarted
from labtui.hosts import get_host
from labtui.suites import load_suite

pytestmark = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sshd]:
    """An sshd on 127.0.0.45 named h45 in a lab config; stopped at the end whatever happened."""
    write_key(tmp_path / "client_key")
    started = start_sshd(tmp_path / "sshd45", "127.0.0.45", tmp_path / "client_key.pub")
    try:
        words = started.host_key.export_public_key("openssh").decode().split()
        (tmp_path / "known_hosts").write_text(f"[{started.address}]:{started.port} {words[0]} {words[1]}\n")
        config = tmp_path / "labtui.toml"
        config.write_text(host_table("h45", started, tmp_path, keepalive_s=1))
        monkeypatch.setenv("LABTUI_CONFIG", str(config))
        monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "rt"))
        yield started
    finally:
        started.stop()


async def test_host_lost_mid_run_fails_the_session_naming_host_and_reconnect(server: Sshd) -> None:
    suite = load_suite("boot-scaling", ["scale.steps=1", "scale.per_step=1", "suite.repetitions=1",
                                        "sampling.quiet_timeout_s=0", "sampling.interval_s=0.2",
                                        "sampling.settle_s=120"])
    host = get_host("h45")
    runner = SessionRunner(suite, open_backend("process", host), host)
    events = runner.bus.subscribe()
    task = asyncio.create_task(runner.run())
    seen: list[object] = []
    try:
        while not any(isinstance(e, StepStarted) for e in seen):  # the baseline step: settling for 120 s
            event = await asyncio.wait_for(events.get(), 120)
            assert event is not None, f"session ended before its first step: {seen}"
            seen.append(event)
        await asyncio.sleep(0.5)
        server.signal_all(signal.SIGKILL)
        killed = time.monotonic()
        status = await asyncio.wait_for(task, 30)
        took = time.monotonic() - killed
    finally:
        if not task.done():
            task.cancel()
        await host.close()
    while (event := events.get_nowait()) is not None:
        seen.append(event)
    assert status == "failed"
    assert took < 20  # long before the 120 s settle pause ends
    logs = [e for e in seen if isinstance(e, Log)]
    lost = [e for e in logs if e.kind == "host-lost"]
    assert lost and "host h45 lost" in lost[0].message and "reconnecting" in lost[0].message
    ended = [e for e in seen if isinstance(e, SessionEnded)]
    assert len(ended) == 1 and ended[0].status == "failed"
    assert ended[0].message.startswith("HostLost: host h45 lost")
    assert "reconnecting failed" in ended[0].message and "gave up after 4 attempts" in ended[0].message
