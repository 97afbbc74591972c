"""A simulated illumos host behind a real sshd, as the zones tests and the cleanup-across-hosts test use it.

The host is a real OpenSSH sshd on 127.0.0.21 whose PATH starts with the simulators in
tests/simulators (zonecfg, zoneadm, zlogin, kstat).  Import the fixtures into a test module
(`from zones_host import illumos, keys, seeded  # noqa: F401`): each module gets its own host.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from simulators.fakehost import FakeHost, start_fake_host
from sshd_fixture import sshd_available, write_key

from plugins.zones.listing import parse_zoneadm_list

ADDRESS = "127.0.0.21"
needs_sshd = pytest.mark.skipif(not sshd_available(), reason="needs OpenSSH sshd (apt install openssh-server)")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("zkeys")
    write_key(tmp / "client_key")
    return tmp


@pytest.fixture(scope="module")
def illumos(tmp_path_factory: pytest.TempPathFactory, keys: Path) -> Iterator[FakeHost]:
    if not sshd_available():
        pytest.skip("needs OpenSSH sshd (apt install openssh-server)")
    host = start_fake_host(tmp_path_factory.mktemp("illumos"), "zhost", ADDRESS, "zones", keys / "client_key.pub")
    try:
        yield host
    finally:
        host.server.stop()


FOREIGN_CFG = "create -b\nset zonepath=/zones/{0}\nset autoboot=true\ncommit\n"


@pytest.fixture
def seeded(illumos: FakeHost, tmp_path: Path) -> FakeHost:
    """Fresh simulator state with two zones that are not labtui's: they must always survive."""
    for path in illumos.state.glob("*.json"):
        path.unlink()
    illumos.knobs()
    for name in ("webzone", "labtui-imposter"):  # the second has the prefix but no labels
        cfg = tmp_path / f"{name}.cfg"
        cfg.write_text(FOREIGN_CFG.format(name))
        assert illumos.tool("zonecfg", "-z", name, "-f", str(cfg)).returncode == 0
        assert illumos.tool("zoneadm", "-z", name, "install").returncode == 0
    assert illumos.tool("zoneadm", "-z", "webzone", "boot").returncode == 0
    return illumos


def foreign_intact(host: FakeHost) -> None:
    listing = parse_zoneadm_list(host.tool("zoneadm", "list", "-cp").stdout)
    states = {e.name: e.state for e in listing}
    assert states.get("webzone") == "running" and states.get("labtui-imposter") == "installed", states
