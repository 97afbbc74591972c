"""CPU lists as Linux writes them (cpuset, taskset -c): "0", "0-1", "0,2-3"."""

from __future__ import annotations


def cpu_list_size(cpus: str) -> int:
    """How many CPUs a CPU list such as "0", "0-1" or "0,2-3" names."""
    count = 0
    for part in cpus.split(","):
        first, _, last = part.partition("-")
        count += int(last or first) - int(first) + 1
    return count
