"""One home for reading results back: each figure of a session with its trust, in one table.

A figure is one slowdown row (benchmark, metric, unit, better, placement, background): its mean,
std, n, normalization and slowdown come from the store's own SQL (the ``slowdown`` view, or the
same SQL over live results); its sample figures (the median, and whatever labtui.figures.columns
registers) come from its repetitions' values, and its 95% interval, CoV, flags, outliers and modes
from labtui.core.stats.trust.trust of them, under one bootstrap policy; its median slowdown against the
baseline, with its interval, from labtui.core.stats.trend.median_slowdown; and its metric's verdict, one line
on whether it moves with the background at all, from labtui.figures.verdict.  The run table,
``compare``, ``report`` and the console draw these columns; none assembles trust or words a trend itself.

The package itself holds what a figure is (its keys, the sample figures), light enough for the
console's first paint; the table (``labtui.figures.table``) needs polars and the store.
"""

from labtui.figures.columns import SampleFigure, sample_figures, sample_values
from labtui.figures.keys import FIGURE_KEY, METRIC_KEY

__all__ = ["FIGURE_KEY", "METRIC_KEY", "SampleFigure", "sample_figures", "sample_values"]
