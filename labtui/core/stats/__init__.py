"""Statistics computed from raw samples; nothing is stored only as an aggregate.

Each figure is defined once, in one module of this package; the live panes, the CLI tables, reports and
`labtui compare` call these definitions:

- ``describe``: a sample's summary, slowdown (formula 5.1), Student's t distribution;
- ``intervals``: the intervals of a mean or a difference (t, or a BCa bootstrap), Welch's test, one comparison;
- ``trust``: how far to trust a figure (spread, outliers, modes);
- ``aggregate``: aggregates across instances that ran at once;
- ``trend``: trendlines, a trend's fit and the robust (median) slowdown;
- ``multiple``: many comparisons at once (Benjamini-Hochberg).

scipy is imported on first use, so that `labtui --help` and the console's first frame need not load it.
"""
