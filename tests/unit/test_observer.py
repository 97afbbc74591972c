"""labtui's own usage (labtui.core.observer): this process and its helpers, read from /proc."""

from __future__ import annotations

import subprocess
import sys
import time

from labtui.core.events import ObserverSample
from labtui.core.observer import ObserverUsage, own_usage

#: A helper that holds 32 MiB resident, burns 0.3 s of CPU, prints its CPU time (user + system), then waits
#: for its stdin to close.
_HELPER = """
import os, sys, time
held = b"x" * (32 << 20)
began = time.process_time()
while time.process_time() - began < 0.3:
    pass
times = os.times()
print(times.user + times.system, flush=True)
sys.stdin.read()
"""


def _burn(seconds: float) -> None:
    began = time.process_time()
    while time.process_time() - began < seconds:
        pass


def test_own_usage_reads_this_process_resident_memory_and_its_cpu_time_growing() -> None:
    before = own_usage()
    _burn(0.3)
    after = own_usage()
    assert before.rss_bytes > 1 << 20 and after.rss_bytes > 1 << 20
    assert after.cpu_s - before.cpu_s >= 0.25
    assert (after.helper_rss_bytes, after.helper_cpu_s) == (0, 0.0)  # no helpers named


def test_own_usage_sums_a_helpers_memory_and_cpu_apart_from_its_own() -> None:
    helper = subprocess.Popen([sys.executable, "-c", _HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert helper.stdout is not None
        spent = float(helper.stdout.readline())
        usage = own_usage([helper.pid])
        twice = own_usage([helper.pid, helper.pid])
    finally:
        helper.communicate(timeout=30)
    assert usage.helper_rss_bytes >= 32 << 20
    assert spent >= 0.25 and abs(usage.helper_cpu_s - spent) < 0.05  # its user and system time, as it sees them
    assert twice.helper_rss_bytes >= 2 * (32 << 20) and abs(twice.helper_cpu_s - 2 * spent) < 0.1


def test_a_helper_that_is_gone_counts_zero() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    usage = own_usage([gone.pid])
    assert (usage.helper_rss_bytes, usage.helper_cpu_s) == (0, 0.0)
    assert usage.rss_bytes > 1 << 20  # this process is read all the same


def test_a_reading_becomes_the_event_a_session_records() -> None:
    sample = ObserverUsage(64 << 20, 1.5, 8 << 20, 0.25).sample("s1")
    assert isinstance(sample, ObserverSample) and sample.ts > 0
    assert (sample.session_id, sample.rss_bytes, sample.cpu_s, sample.helper_rss_bytes, sample.helper_cpu_s) == (
        "s1", 64 << 20, 1.5, 8 << 20, 0.25)
