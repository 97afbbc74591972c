"""`labtui exec` and the fan-out helper against real sshd processes on 127.0.0.41 to 127.0.0.43.

CI needs the openssh-server package (sshd), as tests/hosts/test_ssh_host.py does.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import cli_run
import pytest
from sshd_fixture import (
    Sshd,
    free_port,
    host_table,
    sshd_available,
    start_sshd,
    write_key,
)

from labtui.hosts.config import load_lab_config
from labtui.hosts.fanout import SelectionError, run_on_hosts, select_hosts

pytestmark = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")

ADDRESSES = {"e41": "127.0.0.41", "e42": "127.0.0.42", "e43": "127.0.0.43"}


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Sshd]]]:
    """Three sshd hosts sharing one client key (in the returned directory), stopped at the end."""
    keys = tmp_path_factory.mktemp("exec-keys")
    write_key(keys / "client_key")
    started: dict[str, Sshd] = {}
    try:
        for name, address in ADDRESSES.items():
            started[name] = start_sshd(tmp_path_factory.mktemp(name), address, keys / "client_key.pub")
        yield keys, started
    finally:
        for server in started.values():
            server.stop()


def known_line(server: Sshd) -> str:
    words = server.host_key.export_public_key("openssh").decode().split()
    return f"[{server.address}]:{server.port} {words[0]} {words[1]}\n"


@pytest.fixture
def lab_config(tmp_path: Path, servers: tuple[Path, dict[str, Sshd]], monkeypatch: pytest.MonkeyPatch) -> Path:
    """A lab config: e41..e43 trusted (e43 also tagged 'odd'), e44 with nothing listening."""
    keys, started = servers
    for suffix in ("", ".pub"):
        (tmp_path / f"client_key{suffix}").write_bytes((keys / f"client_key{suffix}").read_bytes())
    os.chmod(tmp_path / "client_key", 0o600)
    (tmp_path / "known_hosts").write_text("".join(known_line(s) for s in started.values()))
    text = "".join(
        host_table(name, server, tmp_path, **({"tags": ["lab", "odd"]} if name == "e43" else {}))
        for name, server in started.items()
    )
    nobody = SimpleNamespace(address="127.0.0.44", port=free_port("127.0.0.44"))  # nothing listens there
    text += host_table("e44", nobody, tmp_path, tags=["gone"], connect_timeout_s=2)  # type: ignore[arg-type]
    config = tmp_path / "labtui.toml"
    config.write_text(text)
    monkeypatch.setenv("LABTUI_CONFIG", str(config))
    return config


def labtui(*args: str, config: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "LABTUI_CONFIG": str(config), "LABTUI_RUNTIME_DIR": str(config.parent / "rt"), "COLUMNS": "200"}
    return cli_run.labtui(*args, env=env, timeout=timeout)


# -- selection ------------------------------------------------------------------


def test_selection_by_name_and_tag(lab_config: Path) -> None:
    config = load_lab_config()
    assert select_hosts(config) == ["e41", "e42", "e43", "e44"]  # local only when named
    assert select_hosts(config, ["e42", "local"]) == ["local", "e42"]
    assert select_hosts(config, tags=["odd"]) == ["e43"]
    assert select_hosts(config, ["e41"], ["odd", "gone"]) == ["e41", "e43", "e44"]
    with pytest.raises(SelectionError, match="unknown host 'e9'; known hosts: local, e41"):
        select_hosts(config, ["e9"])
    with pytest.raises(SelectionError, match="no host has tag 'even'; tags in the lab config: gone, lab, odd"):
        select_hosts(config, tags=["even"])


# -- fan-out ---------------------------------------------------------------------


async def test_hosts_run_at_the_same_time(lab_config: Path, tmp_path: Path) -> None:
    # A barrier: each host's command waits until all three have started, so a
    # sequential fan-out would time out instead of finishing.
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    script = 'd=$1; set -- $SSH_CONNECTION; touch "$d/$3"; while [ "$(ls "$d" | wc -l)" -lt 3 ]; do sleep 0.05; done; echo "$3"'
    seen = []
    outcomes = await run_on_hosts(
        ["e41", "e42", "e43"], ["sh", "-c", script, "sh", str(barrier)], timeout=15, on_done=seen.append
    )
    assert [o.host for o in outcomes] == ["e41", "e42", "e43"]
    assert sorted(o.host for o in seen) == ["e41", "e42", "e43"]
    for o in outcomes:
        assert o.ok, o.error
        assert o.result is not None and o.result.stdout.strip() == ADDRESSES[o.host]  # ran on its own host


async def test_one_host_failing_does_not_stop_the_others(lab_config: Path) -> None:
    outcomes = {o.host: o for o in await run_on_hosts(["e41", "e44", "local"], ["true"], timeout=20)}
    assert outcomes["e41"].ok and outcomes["local"].ok
    assert not outcomes["e44"].ok and outcomes["e44"].result is None
    assert "host e44: cannot connect to 127.0.0.44" in outcomes["e44"].error


# -- the command -------------------------------------------------------------------


def test_exec_on_every_host_prints_prefixed_output_and_a_summary(lab_config: Path) -> None:
    out = labtui("exec", "--host", "e41", "--tag", "odd", "--", "sh", "-c", 'echo "$SSH_CONNECTION" "$1"', "sh", "a b",
                 config=lab_config)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [line for line in out.stdout.splitlines() if " | " in line]
    prefixed = {line.split(" | ")[0].strip(): line.split(" | ")[1] for line in lines}
    assert set(prefixed) == {"e41", "e43"}
    for name, text in prefixed.items():
        assert text.split()[2] == ADDRESSES[name] and text.endswith(" a b")
    assert "exec summary" in out.stdout and "2 of 2 hosts ok" in out.stdout
    summary = out.stdout[out.stdout.index("exec summary"):]
    assert summary.count("exit 0") == 2 and "e42" not in summary


def test_exec_exit_status_names_failed_unreachable_and_timed_out_hosts(lab_config: Path) -> None:
    out = labtui("exec", "--timeout", "2", "--",
                 "sh", "-c", 'case "$SSH_CONNECTION" in *127.0.0.42\\ *) exit 7;; *127.0.0.43\\ *) sleep 30;; esac; echo fine',
                 config=lab_config)
    assert out.returncode == 1, out.stdout + out.stderr
    summary = out.stdout[out.stdout.index("exec summary"):]
    rows = {line.split("│")[1].strip(): line for line in summary.splitlines() if line.count("│") >= 3}
    assert "exit 0" in rows["e41"] and "exit 7" in rows["e42"]
    assert "timed out" in rows["e43"] and "error" in rows["e44"] and "cannot connect" in rows["e44"]
    assert "1 of 4 hosts ok, 3 failed" in out.stdout
    assert "e41 | fine" in out.stdout
    assert "e44 | error: host e44: cannot connect" in out.stderr


def test_exec_refuses_an_unknown_host_key_and_goes_on(lab_config: Path, tmp_path: Path, servers) -> None:
    _, started = servers
    (tmp_path / "known_hosts").write_text(known_line(started["e41"]))  # e42's key is unknown now
    out = labtui("exec", "--host", "e41", "--host", "e42", "--", "true", config=lab_config)
    assert out.returncode == 1
    assert "e42 | error: host e42" in out.stderr and started["e42"].fingerprint in out.stderr
    assert "1 of 2 hosts ok" in out.stdout


def test_exec_usage_errors(lab_config: Path) -> None:
    out = labtui("exec", "--host", "nope", "--", "true", config=lab_config)
    assert out.returncode == 2 and "unknown host 'nope'" in out.stderr
    out = labtui("exec", "--host", "e41", config=lab_config)
    assert out.returncode == 2 and "no command given" in out.stderr
    out = labtui("exec", "--tag", "even", "--", "true", config=lab_config)
    assert out.returncode == 2 and "no host has tag 'even'" in out.stderr


def test_hosts_listing_and_check_filter_by_tag(lab_config: Path) -> None:
    out = labtui("hosts", "--tag", "odd", config=lab_config)
    assert out.returncode == 0, out.stderr
    assert "e43" in out.stdout and "127.0.0.41" not in out.stdout and "this machine" not in out.stdout
    check = labtui("hosts", "check", "--tag", "odd", config=lab_config)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "e43" in check.stdout and "e41" not in check.stdout and "Linux" in check.stdout


# -- persisted connections (the background mux) ------------------------------------


def test_persisted_hosts_keep_their_connection_between_exec_runs(lab_config: Path, servers) -> None:
    _, started = servers
    lab_config.write_text("".join(host_table(n, started[n], lab_config.parent, persist_s=30) for n in ("e41", "e42")))
    socket = mux_path(lab_config)
    first = labtui("exec", "--host", "e41", "--host", "e42", "--", "sh", "-c", "echo $PPID", config=lab_config)
    assert first.returncode == 0, first.stdout + first.stderr
    wait_for(socket.exists)  # the first run started the mux, which connects to both hosts
    runs = [labtui("exec", "--host", "e41", "--host", "e42", "--", "sh", "-c", "echo $PPID", config=lab_config)
            for _ in range(2)]
    parents = [dict(line.split(" | ") for line in r.stdout.splitlines() if " | " in line) for r in runs]
    assert parents[0] == parents[1] and set(parents[0]) == {"e41", "e42"}  # the same runner served both runs
    assert parents[0]["e41"] != parents[0]["e42"]
    failing = labtui("exec", "--host", "e41", "--timeout", "0.5", "--", "sleep", "5", config=lab_config)
    assert failing.returncode == 1 and "timed out" in failing.stdout
    stop = labtui("hosts", "disconnect", config=lab_config)
    assert stop.returncode == 0 and "closed" in stop.stdout
    wait_for(lambda: not socket.exists())


def test_the_mux_exits_once_its_hosts_were_idle_for_persist_s(lab_config: Path, servers) -> None:
    _, started = servers
    lab_config.write_text(host_table("e41", started["e41"], lab_config.parent, persist_s=1))
    socket = mux_path(lab_config)
    assert labtui("exec", "--host", "e41", "--", "true", config=lab_config).returncode == 0
    wait_for(socket.exists)
    wait_for(lambda: not socket.exists(), timeout=15)  # about 1 s idle after it connected
    assert labtui("exec", "--host", "e41", "--", "true", config=lab_config).returncode == 0  # and a new run still works
    labtui("hosts", "disconnect", config=lab_config)


def mux_path(config: Path) -> Path:
    digest = hashlib.sha256(str(config.resolve()).encode() + b"\0" + config.read_bytes()).hexdigest()[:16]
    return config.parent / "rt" / f"mux-{digest}.sock"


def wait_for(condition, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {condition}"
        time.sleep(0.05)
