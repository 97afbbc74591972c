"""The host's clock, read on the host: the clock start times given to backends are on.

A common start (``InstanceSpec.start_at``, ``labtui-runat AT_NS``) is awaited on the
host, so it must be chosen on the host's clock, not the controller's: the two can be
seconds apart on an SSH host.  ``labtui-runat --now`` (``runat.c``, built on the host
like the probes) prints the host's CLOCK_REALTIME.
"""

from __future__ import annotations

from labtui.backends.base import BackendError
from labtui.hosts.base import Host, HostError
from labtui.programs import runat

#: Seconds a clock reading may take (an SSH round trip, not a build: the build is bounded on its own).
READ_TIMEOUT_S = 30.0


async def host_clock_ns(host: Host) -> int:
    """The host's CLOCK_REALTIME in nanoseconds since the epoch, read there by labtui-runat.

    Builds labtui-runat on the host on first use; raises BackendError naming the host
    when it cannot be built, run or understood.
    """
    try:
        path = await runat.build(host)
        result = await host.run([path, "--now"], timeout=READ_TIMEOUT_S)
        return int(result.check().stdout.strip())
    except (HostError, ValueError) as exc:
        raise BackendError(f"reading the clock on host {host.name} with {runat.NAME}: {exc}") from exc
