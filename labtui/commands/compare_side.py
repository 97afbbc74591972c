"""`labtui compare A B C ...`: the studies' side-by-side table, one column per session.

One row per condition (benchmark, metric, placement, background, unit,
better) and one column per session named, labelled by its backend, host and
the isolation the backend recorded (hosts.isolation: Docker's runtime and
security options), and, from the second column on, the relative difference of
the mean against the first column's: (X / first − 1)·100, as study 003's blog
post prints its "relative performance" beside the native score and study
004's Table 2 sets Linux-UP, VServer-UP and Xen3-UP side by side.  The
samples are those of the two-session comparison (`labtui.commands.compare`:
a repetition each, or a session each where a column names several), and a
difference whose Welch test is significant after the same correction as the
two-session comparison's (Benjamini-Hochberg over every test in the table,
false discovery rate FDR) carries a star.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labtui.commands.compare_samples import (
    ALPHA,
    REPETITIONS,
    SESSIONS,
    Key,
    Samples,
    condition_order,
    finite,
    load_samples,
    session_about,
)
from labtui.commands.listing import PipeConsole, print_uncut, write_rows
from labtui.core.errors import UsageError
from labtui.core.stats.describe import summarize
from labtui.core.stats.intervals import Comparison, compare_samples
from labtui.core.stats.multiple import CORRECTION, FDR, adjust_p_values
from labtui.core.units import MISSING, display_unit, number, signed_pct
from labtui.figures import sample_figures, sample_values
from labtui.store import fetch_frame

_KEY = ("benchmark", "metric", "placement", "background", "unit", "better")
_PER_COLUMN = ("mean", "n", "std", "change_pct", "p_value", "p_adjusted", "significant")


def per_column() -> tuple[str, ...]:
    """A cell's fields: _PER_COLUMN, then each sample figure (labtui.figures.columns) of the column's samples."""
    return (*_PER_COLUMN, *(f.name for f in sample_figures()))


@dataclass(frozen=True, slots=True)
class Cell:
    """One condition in one column: its samples, and the comparison with the first column's (None for the
    first column itself, or when either lacks the condition)."""

    samples: Samples | None
    against_first: Comparison | None
    p_adjusted: float | None = None  # Welch's p adjusted over every test of the table (Benjamini-Hochberg)

    @property
    def significant(self) -> bool | None:
        """p_adjusted < FDR; None without a test."""
        return None if self.p_adjusted is None else self.p_adjusted < FDR

    def record(self) -> dict[str, Any]:
        """The per_column() fields: mean, n, std, change_pct, p_value, p_adjusted, significant, then the sample
        figures (None where there is nothing)."""
        s = summarize(self.samples.values) if self.samples else None
        c = self.against_first
        values = [s and s.mean, s and s.n, s and s.sample_std, c and c.change_pct, c and c.welch and c.welch.p,
                  self.p_adjusted, self.significant]
        found = dict(zip(_PER_COLUMN, values)) | sample_values(self.samples.values if self.samples else [])
        return {field: finite(found[field]) for field in per_column()}


def side_by_side(columns: list[dict[Key, Samples]]) -> list[tuple[Key, list[Cell]]]:
    """One row per condition of any column, in compare's order; each column's cell against the first, its
    Welch p adjusted over every test of the table (Benjamini-Hochberg)."""
    first = columns[0]
    found = []
    for key in sorted(set().union(*columns), key=condition_order):
        cells = []
        for i, column in enumerate(columns):
            here, base = column.get(key), first.get(key)
            cells.append((here, compare_samples(base.values, here.values, key[5], ALPHA) if i and here and base
                          else None))
        found.append((key, cells))
    adjusted = iter(adjust_p_values([c.welch.p if c and c.welch else None for _, cells in found for _, c in cells]))
    return [(key, [Cell(here, c, next(adjusted)) for here, c in cells]) for key, cells in found]


def column_label(path: Path, session_ids: list[str]) -> str:
    """backend@host (kind@host for an import), and the isolation the host facts record (Docker: runtime and
    security options)."""
    frame = fetch_frame(path, "SELECT s.session_id, s.backend, s.kind, s.host, h.isolation FROM sessions s "
                        "LEFT JOIN hosts h ON h.session_id = s.session_id", [])
    found = {r["session_id"]: r for r in frame.iter_rows(named=True)}
    labels = []
    for sid in session_ids:
        r = found.get(sid, {})
        label = f"{r.get('backend') or r.get('kind') or '?'}@{r.get('host') or '?'}"
        label += f" ({r['isolation']})" if r.get("isolation") else ""
        if label not in labels:
            labels.append(label)
    return " + ".join(labels)


def sample_unit(columns: list[list[str]]) -> str:
    """What one sample is: a repetition when every column names one session, else a session."""
    return SESSIONS if max(map(len, columns)) > 1 else REPETITIONS


def load_side_by_side(path: Path, columns: list[list[str]]) -> tuple[list[str], list[tuple[Key, list[Cell]]]]:
    """The columns' labels and the side-by-side rows; UsageError for a session named twice."""
    seen: set[str] = set()
    for column in columns:
        for sid in column:
            if sid in seen:
                raise UsageError(f"session {sid} is named twice; give each session once")
            seen.add(sid)
    unit = sample_unit(columns)
    rows = side_by_side([load_samples(path, ids, unit) for ids in columns])
    return [column_label(path, ids) for ids in columns], rows


def shows_placement(rows: list[tuple[Key, list[Cell]]]) -> tuple[bool, bool]:
    """Whether the table needs a placement column and a background column."""
    return any(key[2] for key, _ in rows), any(key[3] for key, _ in rows)


def headers(names: list[str], placed: bool, scaled: bool) -> list[str]:
    """The table's header: the condition, then per column (named, numbered from 1) its mean (n) and, from the
    second on, N vs 1 %."""
    found = ["metric (unit, better)", *(["placement"] if placed else []), *(["background"] if scaled else [])]
    for i, name in enumerate(names, 1):
        found.append(f"{name} mean (n)")
        if i > 1:
            found.append(f"{i} vs 1 %")
    return found


def row_cells(key: Key, cells: list[Cell], placed: bool, scaled: bool) -> list[str]:
    """One row as text: the metric with its unit and direction, then each column's mean (n) and change."""
    metric = f"{key[1]} ({display_unit(key[4])[0] or MISSING}, {'↑' if key[5] == 'higher' else '↓'})"
    found = [metric, *([key[2]] if placed else []), *([str(key[3])] if scaled else [])]
    for i, cell in enumerate(cells):
        r = cell.record()
        found.append(MISSING if r["mean"] is None else f"{number(r['mean'], key[4])} ({r['n']})")
        if i:
            star = "*" if r["significant"] else ""
            found.append(MISSING if r["change_pct"] is None else f"{signed_pct(r['change_pct'])}{star}")
    return found


#: What the N vs 1 % columns mean, under every side-by-side table.
LEGEND = (
    "N vs 1 % = (mean N / mean 1 − 1)·100, the relative difference as study 003 prints it: for ↑ (higher is "
    "better) a negative difference is worse, for ↓ (lower is better) a positive one; * Welch's p, adjusted by "
    f"{CORRECTION} over every test of the table, below {FDR} (false discovery rate {FDR:.0%}; no test with a "
    "single sample)."
)


def cmd_side_by_side(path: Path, columns: list[list[str]], fmt: str) -> int:
    """Print the side-by-side table of the columns (each one or more resolved session ids)."""
    unit = sample_unit(columns)
    labels, rows = load_side_by_side(path, columns)
    if fmt == "csv":
        header = [*_KEY, *(f"{k}_{i}" for i in range(1, len(columns) + 1) for k in per_column())]
        write_rows("csv", header, [(*key, *(v for c in cells for v in c.record().values())) for key, cells in rows])
    elif fmt == "json":
        doc = {"columns": [{"label": label, "sessions": [session_about(path, s) for s in ids]}
                           for label, ids in zip(labels, columns)],
               "alpha": ALPHA, "samples": unit, "correction": CORRECTION, "fdr": FDR,
               "rows": [{**dict(zip(_KEY, key)), "columns": [c.record() for c in cells]} for key, cells in rows]}
        json.dump(doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        _print(path, columns, labels, rows)
    if not any(c.against_first for _, cells in rows for c in cells):
        print(f"labtui compare: {', '.join(','.join(c) for c in columns)} have no benchmark/metric/background "
              "in common with the first", file=sys.stderr)
        return 1
    return 0


def _print(path: Path, columns: list[list[str]], labels: list[str], rows: list[tuple[Key, list[Cell]]]) -> None:
    from rich import box
    from rich.table import Table

    console = PipeConsole()
    for i, (ids, label) in enumerate(zip(columns, labels), 1):
        about = "; ".join(f"{s['session_id']} ({s['suite']}, {s['status']})" for s in map(
            lambda sid: session_about(path, sid), ids))
        console.print(f"{i}: {label}: {about}", highlight=False, markup=False)
    placed, scaled = shows_placement(rows)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for i, header in enumerate(headers([str(i) for i in range(1, len(columns) + 1)], placed, scaled)):
        if i == 0:
            table.add_column(header, no_wrap=True)
        elif header == "placement":
            table.add_column(header, no_wrap=True)
        else:
            table.add_column(header, justify="right", no_wrap=True)
    benchmark = None
    for key, cells in rows:
        if key[0] != benchmark:
            benchmark = key[0]
            table.add_row(benchmark, style="bold")
        text = row_cells(key, cells, placed, scaled)
        table.add_row(f"  {text[0]}", *text[1:], style=None if any(c.against_first for c in cells) else "dim")
    print_uncut(console, table)
    console.print(LEGEND, highlight=False, markup=False, style="dim")
