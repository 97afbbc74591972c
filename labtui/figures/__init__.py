"""One home for reading results back: each figure of a session with its trust, in one table.

A figure is one slowdown row (benchmark, metric, unit, better, placement, background): its mean,
std, n, normalization and slowdown come from the store's own SQL (the ``slowdown`` view, or the
same SQL over live results), and its median, 95% interval, CoV, flags, outliers and modes from
labtui.core.stats.trust of its repetitions' values, under one bootstrap policy.  The run table,
``compare``, ``report`` and the console draw these columns; none assembles trust itself.
"""

from labtui.figures.keys import FIGURE_KEY, METRIC_KEY
from labtui.figures.table import (
    TRUST_SCHEMA,
    bootstrap_allowed,
    live_figures,
    repetition_samples,
    session_figures,
    with_trust,
)

__all__ = [
    "FIGURE_KEY",
    "METRIC_KEY",
    "TRUST_SCHEMA",
    "bootstrap_allowed",
    "live_figures",
    "repetition_samples",
    "session_figures",
    "with_trust",
]
