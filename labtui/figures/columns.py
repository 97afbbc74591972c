"""The figures each face draws beside a condition's mean, computed from its independent samples.

A sample figure is one number of a condition's samples (its repetitions' values; in ``compare``, a
side's samples), shown in the metric's display unit.  The run table, ``report``'s tables and the
console's slowdown pane draw every entry of SAMPLE_FIGURES as a column, in this order, by its name;
``compare A B`` gives each side's as NAME_a and NAME_b in its JSON and CSV rows, ``compare A B C`` each
column's as NAME (NAME_N in CSV); their printed tables compare the means.  Adding a figure here (say a
95th percentile) adds it to all of them, and nothing in the faces changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from labtui.core.stats.describe import summarize


@dataclass(frozen=True, slots=True)
class SampleFigure:
    """A named figure of a condition's samples: its column in every frame and its heading in every table."""

    name: str
    compute: Callable[[Sequence[float]], float]


def _median(values: Sequence[float]) -> float:
    return summarize(values).median


#: The sample figures, in the order the faces show them after the mean.
SAMPLE_FIGURES: tuple[SampleFigure, ...] = (SampleFigure("median", _median),)


def sample_figures() -> tuple[SampleFigure, ...]:
    """The registry as it stands now (read at each call, so a figure registered after import is drawn too)."""
    return SAMPLE_FIGURES


def sample_values(values: Sequence[float]) -> dict[str, float | None]:
    """Every sample figure of `values` by name (None for no values)."""
    return {f.name: (f.compute(values) if values else None) for f in sample_figures()}
