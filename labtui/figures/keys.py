"""What identifies a metric and a figure."""

from __future__ import annotations

#: Metric identity: one chart and one table per key.
METRIC_KEY = ["benchmark", "metric", "unit", "better"]
#: A figure's identity: a slowdown row, and the key of its repetitions' samples.
FIGURE_KEY = (*METRIC_KEY, "placement", "background")
