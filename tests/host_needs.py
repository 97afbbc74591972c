"""What a test needs of this machine, and why it is missing: shared by the tiers' test modules.

Each check returns the reason a test skips with (what is missing and how to get it), '' or None
when the machine has it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

V1_CPU = Path("/sys/fs/cgroup/cpu")


def cpu_controller_missing() -> str:
    """Why no cgroup cpu controller is writable here (what cpu weights and caps need); '' when one is."""
    uid = os.geteuid()
    if (V1_CPU / "cpu.shares").exists():
        if os.access(V1_CPU, os.W_OK):
            return ""
        return f"the cgroup v1 cpu controller at {V1_CPU} is not writable by uid {uid} (run as root)"
    controllers = Path("/sys/fs/cgroup/cgroup.controllers")
    if not controllers.exists():
        return "no cgroup v1 cpu controller and no cgroup v2 hierarchy at /sys/fs/cgroup"
    enabled = controllers.read_text().split()
    if "cpu" not in enabled:
        return f"the cgroup v2 hierarchy does not offer the cpu controller (cgroup.controllers: {' '.join(enabled)})"
    if not os.access(controllers.parent, os.W_OK):
        return f"the cgroup v2 hierarchy at /sys/fs/cgroup is not writable by uid {uid} (run as root)"
    return ""


def cpu_controller() -> bool:
    """Whether a cgroup cpu controller is writable here."""
    return not cpu_controller_missing()


needs_cpu_controller = pytest.mark.skipif(
    not cpu_controller(), reason=f"needs a writable cgroup cpu controller: {cpu_controller_missing()}")


def docker_missing() -> str | None:
    """Why no Docker daemon answers here, with how to get one; None when one does."""
    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "info"], capture_output=True, timeout=30).returncode != 0:
        return "no Docker daemon answers `docker info` (apt install docker.io; start dockerd)"
    return None
