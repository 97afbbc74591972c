"""Shared bits of the benchmarks: the report line format and timing helpers."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def report(name: str, value: float, unit: str, reference: str, ratio: float | None = None, ok: bool | None = None) -> None:
    """Print `name: value unit (ratio against its reference)`; mark a missed floor."""
    ratio_text = f"{ratio:.2f}x " if ratio is not None else ""
    verdict = "" if ok is None else ("  ok" if ok else "  MISSED")
    print(f"{name}: {value:,.3f} {unit} ({ratio_text}against {reference}){verdict}", flush=True)


def median_time(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of fn over repeat calls, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
