"""The backends tier: one backend at a time against a real engine or simulator.

Process (the agent on this machine), docker (the engine on /var/run/docker.sock), unikraft
(QEMU), xen and zones (the simulators of tests/simulators behind a real sshd), and the programs
they run (probes, labtui-runat, native builds, real tools).

`lab` is a Lab (tests/backend_lab.py) for the module's ``BACKEND`` (or the test's parameter);
`keys`, `illumos` and `seeded` are the simulated illumos host of tests/zones_host.py.
"""

from backend_lab import lab  # noqa: F401
from zones_host import illumos, keys, seeded  # noqa: F401
