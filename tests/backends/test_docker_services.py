"""Service images (labtui/nginx, labtui/redis), the ``load`` worker measure and the Docker
application suites, against a real Docker engine and the host's real nginx, redis-server, wrk and
redis-benchmark.

CI installs nginx-light (or nginx), redis-server, redis-tools and wrk; a test that needs one
of them is skipped, with the reason, only when it is absent.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import aiodocker
import duckdb
import pytest
from backend_lab import Lab
from cli_run import labtui

from labtui.backends.base import BackendError, InstanceSpec, Labels, load_backend_class
from labtui.suites.loader import SuiteError, load_suite

#: `env` (tests/conftest.py) gives the CLI the module's runtime dir, which the in-process backend uses too.
SHARED_RUNTIME = True

BACKEND = "docker"  # the backend of the tier's `lab` fixture (tests/backend_lab.py)
SESSION_PREFIX = "svc"

SOCKET = "/var/run/docker.sock"
SBIN = os.pathsep.join([os.environ.get("PATH", ""), "/usr/local/sbin", "/usr/sbin", "/sbin"])

needs_docker = pytest.mark.skipif(
    not Path(SOCKET).is_socket(), reason=f"no Docker engine socket at {SOCKET}: start dockerd to run these tests"
)


def services_module():
    """The docker plugin's services module (importable once the plugin is loaded)."""
    load_backend_class("docker")
    from plugins.docker import services

    return services


def needs(*tools: str) -> pytest.MarkDecorator:
    """Skip unless every tool is installed (CI installs them: see the module docstring)."""
    missing = [t for t in tools if shutil.which(t, path=SBIN) is None]
    return pytest.mark.skipif(bool(missing), reason=f"not installed: {', '.join(missing)} (see the module docstring)")


def exchange(port: int, request: bytes, end: bytes, timeout: float = 10.0) -> bytes:
    """Send request to 127.0.0.1:port and read until the answer ends with end (or the server closes).

    Retried until the server answers, as it may still be starting.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                conn.sendall(request)
                answer = b""
                while not answer.endswith(end) and (chunk := conn.recv(4096)):
                    answer += chunk
                if answer:
                    return answer
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing answered on 127.0.0.1:{port} within {timeout} s")
        time.sleep(0.1)


async def image_info(name: str) -> dict:
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        return await docker.images.inspect(name)


async def port_bindings(handle: str) -> dict:
    async with aiodocker.Docker(url=f"unix://{SOCKET}") as docker:
        return (await docker.containers.container(handle).show())["NetworkSettings"]["Ports"]


def run_rows(db: Path, lab: Lab, query: str) -> tuple[str, str, list[tuple]]:
    """The session's status and message, and the rows of query (the session is cleaned up by lab)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        (session, status, message), = con.execute("select session_id, status, message from sessions").fetchall()
        lab.sessions.append(session)
        return status, message or "", con.execute(query).fetchall()
    finally:
        con.close()


# -- ldd and image building --------------------------------------------------


def test_ldd_paths_reads_real_ldd_output_with_the_loader():
    ldd_paths = services_module().ldd_paths
    found = ldd_paths(subprocess.run(["ldd", "/bin/ls"], capture_output=True, text=True, check=True).stdout)
    assert any("ld-linux" in p for p in found) and any("/libc.so" in p for p in found)
    assert all(p.startswith("/") and Path(p).exists() for p in found)
    assert not any("vdso" in p for p in found)  # the kernel's, not a file
    with pytest.raises(BackendError, match="libgone.so.7"):
        ldd_paths("\tlibgone.so.7 => not found\n\tlibc.so.6 => /lib/libc.so.6 (0x00007f)\n")


@needs_docker
async def test_a_service_whose_server_is_not_installed_is_skipped_with_the_package(lab, monkeypatch):
    services = services_module()
    ghost = services.Service("ghost", "labtui-no-such-server", "ghost-server", ("/usr/bin/ghost",), 1)
    monkeypatch.setitem(services.SERVICES, "ghost", ghost)
    with pytest.raises(services.ServiceUnavailable, match="apt-get install ghost-server"):
        await lab.backend.services.ensure("ghost")
    built = {image.name: image for image in await lab.backend.build_images()}
    assert "labtui-no-such-server is not installed" in built["labtui/ghost"].skipped
    assert built["labtui/ghost"].image_id == ""
    assert built["labtui/hello"].image_id  # the probes are built all the same


@needs_docker
@needs("nginx")
async def test_nginx_image_is_from_scratch_and_serves_its_page_on_loopback(lab):
    built = await lab.backend.services.ensure("nginx", force=True)
    assert built.built and built.name == "labtui/nginx"
    info = await image_info("labtui/nginx")
    assert info["Id"] == built.image_id and info["Config"]["Labels"]["labtui.managed"] == "1"
    assert len(info["RootFS"]["Layers"]) == 1  # FROM scratch: only the rootfs copy
    assert info["Config"]["Cmd"][0] == "/usr/sbin/nginx"
    again = await lab.backend.services.ensure("nginx")
    assert not again.built and again.image_id == built.image_id  # same binaries: not rebuilt

    session = lab.session()
    instance = await lab.backend.create(InstanceSpec(Labels(session, "worker", "ng"), image="labtui/nginx", ports=(80,)))
    host_port = instance.details["ports"][80]
    assert [b["HostIp"] for b in (await port_bindings(instance.handle))["80/tcp"]] == ["127.0.0.1"]
    answer = exchange(host_port, b"GET / HTTP/1.0\r\n\r\n", b"</html>\n")
    assert answer.startswith(b"HTTP/1.1 200") and b"labtui nginx" in answer
    await lab.backend.destroy(instance)
    assert await lab.backend.list(session) == []


@needs_docker
@needs("redis-server")
async def test_redis_image_answers_ping_on_loopback(lab):
    session = lab.session()
    instance = await lab.backend.create(InstanceSpec(Labels(session, "worker", "re"), image="labtui/redis", ports=(6379,)))
    assert exchange(instance.details["ports"][6379], b"PING\r\n", b"\r\n") == b"+PONG\r\n"
    assert exchange(instance.details["ports"][6379], b"CONFIG GET save\r\n", b"$0\r\n\r\n").endswith(b"$4\r\nsave\r\n$0\r\n\r\n")
    await lab.backend.destroy(instance)


# -- the suites end to end -------------------------------------------------------

QUICK = ("--set", "suite.repetitions=1", "--set", "sampling.quiet_timeout_s=0", "--set", "scale.per_step=2")


@needs_docker
@needs("nginx", "wrk")
async def test_docker_nginx_scaling_records_requests_per_second_per_step(lab, env, tmp_path):
    db = tmp_path / "ng.duckdb"
    out = labtui("run", "docker-nginx-scaling", "--backend", "docker", *QUICK, "--set", "scale.steps=2",
                 "--set", "load.duration_s=2", "--db", str(db), env=env)
    status, message, rows = run_rows(db, lab, "select step, background, metric, value, better from results "
                                              "where benchmark = 'wrk' order by step, metric")
    assert out.returncode == 0 and status == "completed", out.stdout + out.stderr + message
    rps = [(step, background, value) for step, background, metric, value, _ in rows if metric == "requests_per_s"]
    assert [(s, b) for s, b, _ in rps] == [(0, 0), (1, 2), (2, 4)]
    assert all(value > 100 for _, _, value in rps)  # 2 s of wrk on loopback: thousands
    latency = {better for _, _, metric, _, better in rows if metric.startswith("latency_")}
    assert latency == {"lower"}
    assert await lab.backend.list(lab.sessions[-1]) == []  # torn down


@needs_docker
@needs("redis-server", "redis-benchmark")
async def test_docker_redis_scaling_records_set_and_get_rates(lab, env, tmp_path):
    db = tmp_path / "re.duckdb"
    out = labtui("run", "docker-redis-scaling", "--backend", "docker", *QUICK, "--set", "scale.steps=1",
                 "--set", "load.requests=20000", "--set", 'load.tests=["set", "get"]', "--db", str(db), env=env)
    status, message, rows = run_rows(db, lab, "select step, background, metric, value from results "
                                              "where benchmark = 'redis-benchmark' and metric like '%_rps' "
                                              "order by step, metric")
    assert out.returncode == 0 and status == "completed", out.stdout + out.stderr + message
    assert [(s, b, m) for s, b, m, _ in rows] == [(0, 0, "get_rps"), (0, 0, "set_rps"), (1, 2, "get_rps"), (1, 2, "set_rps")]
    assert all(value > 100 for *_, value in rows)
    assert await lab.backend.list(lab.sessions[-1]) == []


@needs_docker
async def test_docker_sqlite_scaling_times_inserts_in_the_container(lab, env, tmp_path):
    db = tmp_path / "sql.duckdb"
    out = labtui("run", "docker-sqlite-scaling", "--backend", "docker", *QUICK, "--set", "scale.steps=1",
                 "--set", 'worker.args=["2000", "/dev/shm"]', "--db", str(db), env=env)
    status, message, rows = run_rows(db, lab, "select step, background, metric, value, unit from results order by step")
    if "sqlite3.h" in out.stdout + out.stderr + message:
        pytest.skip("the sqlite probe needs libsqlite3-dev on the host")
    assert out.returncode == 0 and status == "completed", out.stdout + out.stderr + message
    assert [(s, b, m, u) for s, b, m, _, u in rows] == [(0, 0, "inserts_2000_s", "s"), (1, 2, "inserts_2000_s", "s")]
    assert all(0 < value < 60 for *_, value, _ in rows)


@needs_docker
@needs("nginx", "wrk")
async def test_a_worker_that_never_answers_fails_the_run_and_leaves_nothing(lab, env, tmp_path):
    db = tmp_path / "deaf.duckdb"
    out = labtui("run", "docker-nginx-scaling", "--backend", "docker", *QUICK, "--set", "scale.steps=1",
                 "--set", "load.port=81", "--set", "load.ready_timeout_s=1", "--db", str(db), env=env)
    status, message, rows = run_rows(db, lab, "select count(*) from results where benchmark = 'wrk'")
    assert out.returncode != 0 and status == "failed"
    assert "(port 81)" in message and "did not answer within 1 s" in message
    assert rows == [(0,)]
    assert await lab.backend.list(lab.sessions[-1]) == []


# -- the [load] table ------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "where", "says"),
    [
        (["load.tool=none"], "--set load.tool", "one of: wrk, redis-benchmark"),
        (["load.threads=40"], "load.threads", "connections >= threads"),
        (["worker.measure=boot"], "load", 'only a worker with measure = "load" uses [load]'),
        (["load.duration_s=2.5"], "--set load.duration_s", "an integer from 1 to"),
        (['load.tests=["set;rm"]'], "--set load.tests", "redis-benchmark test names"),
    ],
)
def test_bad_load_keys_are_named(overrides, where, says):
    with pytest.raises(SuiteError) as caught:
        load_suite("docker-nginx-scaling", overrides)
    assert where in str(caught.value) and says in str(caught.value)


def test_a_load_worker_needs_a_load_table_and_a_scaling_suite(tmp_path):
    suite = tmp_path / "s.toml"
    suite.write_text('[suite]\nname = "s"\nkind = "scaling"\n[scale]\nsteps = 1\nper_step = 1\n'
                     '[worker]\nimage = "labtui/nginx"\nmeasure = "load"\n[background]\nprogram = "sleeper"\n')
    with pytest.raises(SuiteError, match=r"s.toml:.*load.tool.*needs \[load\] tool"):
        load_suite(str(suite))
    suite.write_text('[suite]\nname = "s"\nkind = "concurrent"\n'
                     '[worker]\nimage = "labtui/nginx"\nmeasure = "load"\n[load]\ntool = "wrk"\n')
    with pytest.raises(SuiteError, match=r"s.toml:6: worker.measure: .*runs in scaling and isolation suites"):
        load_suite(str(suite))
    loaded = load_suite("docker-redis-scaling", ["load.requests=20000"])
    assert loaded.load is not None and (loaded.load.requests, loaded.load.pipeline, loaded.load.connections) == (20000, 16, 30)
