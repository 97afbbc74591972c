"""`labtui compare A B`: every metric of session B against session A, from the raw results.

With more sessions (`labtui compare A B C ...`) the table is the studies' side by side, one column per
session (`labtui.commands.compare_side`).

Results are matched on (benchmark, metric, placement, background, unit,
better): the same condition in both sessions, as the store's slowdown view
groups them.  The step index is not part of the match, so a scaling run with
other step sizes still meets the other session at every background count both
have.  Conditions found in one session only are listed as such.

The samples of a condition are independent runs, never the instances of one
step (pseudo-replication: n instances measured at once share the host's state,
so they are not n samples).  With one session a side, a sample is a
repetition: the median of the condition's values in that repetition (every
instance and run of it).  A side may name several sessions (``A1,A2,A3``);
then a sample is a session, the mean of its repetitions, on both sides.  Every
row says which (``samples``) and how many raw values stand behind them.
Welch's test and its interval come from scipy.stats; where both sides have at
least 20 samples and one is skewed, the interval printed is a BCa bootstrap
(scipy.stats.bootstrap) and the row says so (``ci_method``).  Fewer samples
keep Welch's interval, which covers better than a bootstrap of few values.

Many conditions are tested at once (31 or 101 background levels of a scaling
run), so the p-values of one comparison are adjusted together, Benjamini-Hochberg
at a false discovery rate of 5% (labtui.core.stats, "many comparisons"):
``p_value`` is each test's own, ``p_adjusted`` the corrected one, and
``significant`` and the verdict follow ``p_adjusted``.  A condition not found
different is "no difference (within ±5%)" when its interval lies within
EQUIVALENCE_PCT of A's mean, else "too few samples to tell" with how far the
interval reaches.  The table and its text lead with a summary line counting each.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from typing import Any, cast

from labtui.commands.common import db_path
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
from labtui.commands.listing import PipeConsole, write_rows
from labtui.core.errors import UsageError
from labtui.core.stats.describe import summarize
from labtui.core.stats.intervals import BOOTSTRAP_MIN, Comparison, compare_samples
from labtui.core.stats.multiple import CORRECTION, EQUIVALENCE_PCT, FDR, adjust_p_values, no_difference, reach_pct
from labtui.core.units import MISSING, display_unit, interval, number, share_pct, shown, signed_pct
from labtui.figures import sample_figures, sample_values
from labtui.store import UnknownSession, resolve_session

#: The verdicts of a condition not found different after the correction.
NO_DIFFERENCE = f"no difference (within ±{EQUIVALENCE_PCT:g}%)"
TOO_FEW = "too few samples to tell"

COLUMNS = (
    "benchmark", "metric", "placement", "background", "unit", "better", "present",
    "n_a", "mean_a", "std_a", "n_b", "mean_b", "std_b",
    "ratio", "change_pct", "slowdown_pct", "diff", "ci95_low", "ci95_high", "df", "t", "p_value",
    "p_adjusted", "significant", "verdict",
    "samples", "values_a", "values_b", "ci_method", "t_ci95_low", "t_ci95_high",
)


def columns() -> tuple[str, ...]:
    """A row's columns: COLUMNS, then each sample figure (labtui.figures.columns) of A and of B."""
    return (*COLUMNS, *(f"{f.name}_{side}" for f in sample_figures() for side in "ab"))



@dataclass(frozen=True, slots=True)
class Row:
    """One condition: compared when both sessions have it, else the one side's values."""

    key: Key
    a: Samples | None
    b: Samples | None
    comparison: Comparison | None
    verdict: str
    p_adjusted: float | None = None  # Welch's p adjusted over the comparison's tests (Benjamini-Hochberg)
    significant: bool | None = None  # p_adjusted < FDR; None without a test

    @property
    def present(self) -> str:
        return "both" if self.comparison else ("A only" if self.a else "B only")

    def record(self) -> dict[str, Any]:
        """The row as plain values (None where there is nothing), in columns() order."""
        benchmark, metric, placement, background, unit, better = self.key
        c = self.comparison
        sa = c.a if c else (summarize(self.a.values) if self.a else None)
        sb = c.b if c else (summarize(self.b.values) if self.b else None)
        w = c.welch if c else None
        ci = c.ci if c else None
        values = [
            benchmark, metric, placement, background, unit, better, self.present,
            sa and sa.n, sa and sa.mean, sa and sa.sample_std, sb and sb.n, sb and sb.mean, sb and sb.sample_std,
            c and c.ratio, c and c.change_pct, c and c.slowdown_pct, c and c.diff,
            ci and ci.low, ci and ci.high, w and w.df, w and w.t, w and w.p,
            self.p_adjusted, self.significant, self.verdict,
            cast(Samples, self.a or self.b).unit, self.a.raw if self.a else None, self.b.raw if self.b else None,
            ci and ci.method, w and w.ci_low, w and w.ci_high,
        ]
        found = dict(zip(COLUMNS, values))
        for side, samples in (("a", self.a), ("b", self.b)):
            found |= {f"{name}_{side}": v for name, v in sample_values(samples.values if samples else []).items()}
        return {column: finite(found[column]) for column in columns()}


def cmd_compare(args) -> int:
    path = db_path(args)
    try:
        sides = [[resolve_session(path, s) for s in _names(arg)] for arg in (args.a, args.b, *(args.more or []))]
    except UnknownSession as exc:  # not a store that cannot be read: the session list would not help then
        raise UsageError(f"{exc} (see `labtui sessions`)") from None
    if len(sides) > 2:
        from labtui.commands.compare_side import cmd_side_by_side

        return cmd_side_by_side(path, sides, args.format)
    for side, name in zip(sides, "AB"):
        if len(set(side)) < len(side):
            raise UsageError(f"{name} names session {next(s for s in side if side.count(s) > 1)} twice")
    if set(sides[0]) & set(sides[1]):
        both = ", ".join(sorted(set(sides[0]) & set(sides[1])))
        raise UsageError(f"A and B are both session {both}; give two different sessions")
    unit = SESSIONS if max(map(len, sides)) > 1 else REPETITIONS
    sessions = [[session_about(path, sid) for sid in side] for side in sides]
    rows = compare_sessions(load_samples(path, sides[0], unit), load_samples(path, sides[1], unit))
    ids = [",".join(side) for side in sides]
    if args.format == "csv":
        write_rows("csv", columns(), [tuple(r.record().values()) for r in rows])
    elif args.format == "json":
        doc = {"a": _one(sessions[0]), "b": _one(sessions[1]), "alpha": ALPHA, "samples": unit,
               "correction": CORRECTION, "fdr": FDR, "tested": sum(r.p_adjusted is not None for r in rows),
               "equivalence_pct": EQUIVALENCE_PCT, "summary": summary(rows),
               "rows": [r.record() for r in rows]}
        json.dump(doc, sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        _print_table(sessions, rows, unit)
    if not any(r.comparison for r in rows):
        print(f"labtui compare: {ids[0]} and {ids[1]} have no benchmark/metric/background in common",
              file=sys.stderr)
        return 1
    return 0


def _names(arg: str) -> list[str]:
    """The sessions one side names: an id (or prefix), or several joined by commas."""
    names = [s.strip() for s in arg.split(",") if s.strip()]
    if not names:
        raise UsageError(f"no session named in {arg!r}")
    return names


def _one(sessions: list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
    return sessions[0] if len(sessions) == 1 else sessions


def compare_sessions(a: dict[Key, Samples], b: dict[Key, Samples]) -> list[Row]:
    """One row per condition of either side, ordered by benchmark, metric, placement, background.

    Welch's p-values of all the conditions tested are adjusted together (Benjamini-Hochberg), and
    each row's significance and verdict follow its adjusted p."""
    keys = sorted(a.keys() | b.keys(), key=condition_order)
    tests = {key: compare_samples(a[key].values, b[key].values, key[5], ALPHA) for key in keys
             if a.get(key) and b.get(key)}
    adjusted = dict(zip(tests, adjust_p_values([c.welch.p if c.welch else None for c in tests.values()])))
    rows = []
    for key in keys:
        va, vb = a.get(key), b.get(key)
        if va and vb:
            c, p = tests[key], adjusted[key]
            significant = None if p is None else p < FDR
            rows.append(Row(key, va, vb, c, _verdict(c, key[5], va.unit, significant), p, significant))
        else:
            rows.append(Row(key, va, vb, None, _only_verdict(key, "A" if va else "B", b if va else a)))
    return rows


def _verdict(c: Comparison, better: str, unit: str = REPETITIONS, significant: bool | None = None) -> str:
    """The row's verdict; `significant` is the test's after the correction (Comparison.significant without one)."""
    one = unit[:-1]  # "repetition", "session"
    if c.welch is None:
        return f"no test: one {one} each" if c.a.n == c.b.n == 1 else f"no test: one {one} in {'A' if c.a.n == 1 else 'B'}"
    if significant is None:
        significant = c.significant
    boot = c.ci if c.ci is not None and c.ci.method == "bootstrap" else None  # the CI, when bootstrapped
    if not significant:
        return _not_different(c) + (
            "; the bootstrap CI excludes 0" if boot is not None and not boot.contains(0.0) else "")
    worse = (c.diff < 0) if better == "higher" else (c.diff > 0)
    return f"B {'worse' if worse else 'better'}, significant" + (
        "; the bootstrap CI includes 0" if boot is not None and boot.contains(0.0) else "")


def _not_different(c: Comparison) -> str:
    """NO_DIFFERENCE when the interval of B − A lies within ±EQUIVALENCE_PCT % of A's mean, else TOO_FEW with how
    far it reaches; "not significant" where no percentage of A's mean can be given (a mean of 0)."""
    if c.ci is None:
        return "not significant"
    if no_difference(c.ci.low, c.ci.high, c.a.mean):
        return NO_DIFFERENCE
    reach = reach_pct(c.ci.low, c.ci.high, c.a.mean)
    return f"{TOO_FEW} (CI ±{share_pct(reach / 100.0)})" if reach == reach else "not significant"


def summary(rows: list[Row]) -> str:
    """One line on the whole comparison: how many conditions differ after the correction (and the largest
    difference), and how many of the others show no difference or have too few samples to tell."""
    tested = [r for r in rows if r.p_adjusted is not None]
    untested = sum(r.comparison is not None and r.p_adjusted is None for r in rows)
    alone = sum(r.comparison is None for r in rows)
    how = f"{CORRECTION}, FDR {FDR:.0%}"
    differ = [r for r in tested if r.significant]
    if not tested:
        text = "no condition could be tested (a test needs two samples a side)"
    elif differ:
        text = f"{len(differ)} of {len(tested)} conditions tested differ after correction ({how})"
        text += "; the largest: " + _largest(differ, scaled=any(r.key[3] for r in rows))
    else:
        text = f"no condition differs after correction ({how}, over {len(tested)} conditions tested)"
    rest = [r for r in tested if not r.significant]
    if rest:
        kinds = {NO_DIFFERENCE: 0, TOO_FEW: 0, "not significant": 0}
        for r in rest:
            kinds[next(k for k in kinds if r.verdict.startswith(k))] += 1
        said = [f"{n} {kind}" for kind, n in kinds.items() if n]
        text += f"; {'of the other ' + str(len(rest)) if differ else 'of them'}: {', '.join(said)}"
    if untested:
        text += f"; {untested} not tested (one sample on a side)"
    if alone:
        text += f"; {alone} in one session only"
    return text


def _largest(differ: list[Row], scaled: bool) -> str:
    """The significant condition with the largest change, its direction and interval in percent of A's mean."""
    def size(r: Row) -> float:
        change = cast(Comparison, r.comparison).change_pct
        return abs(change) if math.isfinite(change) else -1.0

    r = max(differ, key=size)
    c = cast(Comparison, r.comparison)
    benchmark, metric, placement, background = r.key[:4]
    where = f"{benchmark}/{metric}" + (f" {placement}" if placement else "") + (
        f" at background {background}" if scaled else "")
    worse = (c.diff < 0) if r.key[5] == "higher" else (c.diff > 0)
    text = f"{where}, {signed_pct(c.change_pct, '%')} (B {'worse' if worse else 'better'}"
    if c.ci is not None and c.a.mean:
        low, high = (c.ci.low / c.a.mean * 100.0, c.ci.high / c.a.mean * 100.0)
        text += f"; 95% CI {signed_pct(min(low, high), '%')} … {signed_pct(max(low, high), '%')} of A's mean"
    return text + ")"


def _only_verdict(key: Key, side: str, other: dict[Key, Samples]) -> str:
    """'A only', naming how the other session records the same metric when it does so differently."""
    elsewhere = sorted({(k[4], k[5]) for k in other if k[:4] == key[:4]})
    if not elsewhere:
        return f"only in {side}"
    how = ", ".join(f"{unit or 'no unit'}, {better} is better" for unit, better in elsewhere)
    return f"only in {side}; {'B' if side == 'A' else 'A'} records it as {how}"


def _print_table(sides: list[list[dict[str, Any]]], rows: list[Row], unit: str = REPETITIONS) -> None:
    """One rich table (a section per benchmark), or a few lines per row when the terminal is too narrow.

    A summary line (`summary`) leads.  Significant rows (after the correction) are red (B worse) or green
    (B better); rows of one session only are dim.
    """
    console = PipeConsole()
    for name, sessions in zip("AB", sides):
        for s in sessions:
            about = ", ".join(str(s[k]) for k in ("suite", "backend", "host", "isolation") if s[k])  # tcg-emulation
            labels = "".join(f"  {key}={value}" for key, value in sorted(json.loads(s["tags"] or "{}").items()))
            note = f"  note: {s['note']}" if s["note"] else ""
            console.print(f"{name}: {s['session_id']} ({about}; {s['status']}){labels}{note}", highlight=False,
                          markup=False)
    console.print(summary(rows), highlight=False, markup=False, style="bold")
    records = [(r.record(), _style(r)) for r in rows]
    table, width = _wide_table(records)
    if width <= console.width:
        console.print(table)
    else:
        _print_lines(console, records)
    console.print(
        "change % = (B/A − 1)·100 of the means; slowdown % > 0 means B is worse "
        "(↑ higher is better: (1 − B/A)·100; ↓ lower is better: (B/A − 1)·100). "
        f"p: Welch's two-sided t-test of B − A, no test with a single sample; p adj: p adjusted by {CORRECTION} "
        f"over the {sum(r.p_adjusted is not None for r in rows)} conditions tested (false discovery rate "
        f"{FDR:.0%}); significant when p adj < {FDR}. Not significant: \"{NO_DIFFERENCE}\" when the whole 95% CI "
        f"of B − A lies within ±{EQUIVALENCE_PCT:g}% of A's mean, else \"{TOO_FEW}\" with how far the CI "
        "reaches (± % of A's mean). "
        + _SAMPLES_NOTE[unit]
        + f" CI: Welch's t interval (t), or a BCa bootstrap (boot) where both sides have {BOOTSTRAP_MIN} samples or "
        "more and one is skewed.",
        highlight=False, markup=False, style="dim",
    )


_SAMPLES_NOTE = {
    REPETITIONS: "n = repetitions: each sample is one repetition's value at its step, the median over the worker's "
                 "runs of the mean over instances measured at once (those are not independent samples).",
    SESSIONS: "n = sessions: each sample is one session's mean over its repetitions.",
}


#: Width the table gives the metric and verdict columns at least; longer text wraps.
_TEXT_WIDTH = 22


def _wide_table(records: list[tuple[dict[str, Any], str | None]]):
    """The table and the width it needs with every number on one line."""
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table
    from rich.text import Text

    placed = any(r["placement"] for r, _ in records)
    scaled = any(r["background"] for r, _ in records)
    headers = ["metric (unit, better)", *(["placement"] if placed else []), *(["background"] if scaled else []),
               "A mean (n)", "B mean (n)", "B/A", "change %", "slowdown %", "95% CI of B−A", "p", "p adj",
               f"verdict (FDR {FDR:.0%})"]
    cells = [
        [f"  {r['metric']} ({display_unit(r['unit'])[0] or MISSING}, {_arrow(r['better'])})",
         *([r["placement"]] if placed else []), *([str(r["background"])] if scaled else []),
         _mean(r["mean_a"], r["n_a"], r["unit"]), _mean(r["mean_b"], r["n_b"], r["unit"]),
         shown(r["ratio"]), signed_pct(r["change_pct"]), signed_pct(r["slowdown_pct"]),
         _ci(r), _p(r["p_value"]), _p(r["p_adjusted"]), r["verdict"]]
        for r, _ in records
    ]
    widths = [max(cell_len(str(c)) for c in column) for column in zip(headers, *cells)]
    # each column: its text, padding 1 either side and a divider
    width = sum(min(w, _TEXT_WIDTH) for w in (widths[0], widths[-1])) + sum(widths[1:-1]) + 3 * len(headers)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    for i, header in enumerate(headers):
        wraps = i in (0, len(headers) - 1)
        table.add_column(header, justify="left" if wraps or header == "placement" else "right", no_wrap=not wraps)
    benchmark = None
    for (r, style), row in zip(records, cells):
        if r["benchmark"] != benchmark:
            benchmark = r["benchmark"]
            table.add_row(Text(benchmark, style="bold"))
        table.add_row(*(Text(str(c)) for c in row), style=style)
    return table, width


def _print_lines(console, records: list[tuple[dict[str, Any], str | None]]) -> None:
    """The narrow layout: a heading per benchmark, then per condition its name, the means, the test (where one
    was made) and the verdict, a line each."""
    benchmark = None
    for r, style in records:
        if r["benchmark"] != benchmark:
            benchmark = r["benchmark"]
            console.print(benchmark, style="bold", highlight=False, markup=False)
        where = "".join(f", {k} {r[k]}" for k in ("placement", "background") if r[k])
        console.print(f"  {r['metric']} ({display_unit(r['unit'])[0] or MISSING}, {r['better']} is better{where})",
                      highlight=False,
                      markup=False)
        parts = [f"{side} {number(r['mean_' + x], r['unit'])} (n={r['n_' + x]})" for side, x in (("A", "a"), ("B", "b"))
                 if r["n_" + x]]
        if r["present"] == "both":
            parts += [f"B/A {shown(r['ratio'])}", f"change {signed_pct(r['change_pct'])} %",
                      f"slowdown {signed_pct(r['slowdown_pct'])} %"]
        console.print("    " + "  ".join(parts), highlight=False, markup=False, style=style)
        if r["p_value"] is not None:
            console.print(f"    95% CI of B−A {_ci(r)}  p {_p(r['p_value'])}  p adj {_p(r['p_adjusted'])}",
                          highlight=False, markup=False, style=style)
        console.print(f"    {r['verdict']}", highlight=False, markup=False, style=style)


def _arrow(better: str) -> str:
    return "↑" if better == "higher" else "↓"


def _ci(r: dict[str, Any]) -> str:
    if r["ci95_low"] is None:
        return MISSING
    how = " boot" if r["ci_method"] == "bootstrap" else " t"
    return interval(r["ci95_low"], r["ci95_high"], r["unit"]) + how


def _style(row: Row) -> str | None:
    if row.comparison is None:
        return "dim"
    if row.significant:
        return "red" if row.verdict.startswith("B worse") else "green"
    return None


def _mean(mean: float | None, n: int | None, unit: str) -> str:
    """A side's mean in the figure's display unit, with its number of samples."""
    return MISSING if mean is None else f"{number(mean, unit)} ({n})"


def _p(value: float | None) -> str:
    """A p-value: three significant digits."""
    return MISSING if value is None else f"{value:.3g}"
