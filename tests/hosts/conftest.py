"""The hosts tier: labtui's hosts, the local one and SSH hosts against real sshd processes.

SSHHost, many hosts at once, a host lost mid-run, `labtui exec` and `cleanup` across hosts.
Each module starts its own sshds on loopback addresses of its own (tests/sshd_fixture.py);
`keys`, `illumos` and `seeded` are the simulated illumos host of tests/zones_host.py.
"""

from zones_host import illumos, keys, seeded  # noqa: F401
