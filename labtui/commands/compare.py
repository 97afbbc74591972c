"""`labtui compare A B`: every metric of session B against session A, from the raw results.

Results are matched on (benchmark, metric, placement, background, unit,
better): the same condition in both sessions, as the store's slowdown view
groups them.  The step index and the repetition are not part of the match, so
a scaling run with other step sizes still meets the other session at every
background count both have; all values of a condition (every repetition,
step and instance) are its samples.  Conditions found in one session only
are listed as such.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labtui.commands.common import UsageError, db_path
from labtui.stats import Comparison, compare_samples, summarize
from labtui.store import StoreError, fetch_frame, resolve_session
from labtui.suites.model import PLACEMENTS

ALPHA = 0.05
#: How results are matched between the sessions.
Key = tuple[str, str, str, int, str, str]  # benchmark, metric, placement, background, unit, better

COLUMNS = (
    "benchmark", "metric", "placement", "background", "unit", "better", "present",
    "n_a", "mean_a", "std_a", "n_b", "mean_b", "std_b",
    "ratio", "change_pct", "slowdown_pct", "diff", "ci95_low", "ci95_high", "df", "t", "p_value",
    "significant", "verdict",
)


@dataclass(frozen=True, slots=True)
class Row:
    """One condition: compared when both sessions have it, else the one side's values."""

    key: Key
    a: list[float] | None
    b: list[float] | None
    comparison: Comparison | None
    verdict: str

    @property
    def present(self) -> str:
        return "both" if self.comparison else ("A only" if self.a else "B only")

    def record(self) -> dict[str, Any]:
        """The row as plain values (None where there is nothing), in COLUMNS order."""
        benchmark, metric, placement, background, unit, better = self.key
        c = self.comparison
        sa = c.a if c else (summarize(self.a) if self.a else None)
        sb = c.b if c else (summarize(self.b) if self.b else None)
        w = c.welch if c else None
        values = [
            benchmark, metric, placement, background, unit, better, self.present,
            sa and sa.n, sa and sa.mean, sa and sa.std, sb and sb.n, sb and sb.mean, sb and sb.std,
            c and c.ratio, c and c.change_pct, c and c.slowdown_pct, c and c.diff,
            w and w.ci_low, w and w.ci_high, w and w.df, w and w.t, w and w.p,
            c.significant if c else None, self.verdict,
        ]
        return dict(zip(COLUMNS, (_finite(v) for v in values)))


def cmd_compare(args) -> int:
    path = db_path(args)
    try:
        ids = [resolve_session(path, s) for s in (args.a, args.b)]
    except StoreError as exc:
        raise UsageError(f"{exc} (see `labtui sessions`)") from None
    if ids[0] == ids[1]:
        raise UsageError(f"A and B are both session {ids[0]}; give two different sessions")
    try:
        sessions = [_session(path, sid) for sid in ids]
        rows = compare_sessions(load_samples(path, ids[0]), load_samples(path, ids[1]))
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "csv":
        out = csv.writer(sys.stdout)
        out.writerow(COLUMNS)
        out.writerows(["" if v is None else v for v in r.record().values()] for r in rows)
    elif args.format == "json":
        json.dump({"a": sessions[0], "b": sessions[1], "alpha": ALPHA, "rows": [r.record() for r in rows]},
                  sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        _print_table(sessions, rows)
    if not any(r.comparison for r in rows):
        print(f"labtui compare: {ids[0]} and {ids[1]} have no benchmark/metric/background in common",
              file=sys.stderr)
        return 1
    return 0


def load_samples(path: Path, session_id: str) -> dict[Key, list[float]]:
    """The session's raw result values (finite ones) by condition, in the order they were measured."""
    import polars as pl

    frame = fetch_frame(path, "SELECT * FROM results WHERE session_id = ? AND isfinite(value) ORDER BY ts, step",
                        [session_id])
    placement = pl.col("placement").fill_null("") if "placement" in frame.columns else pl.lit("")  # schema 1: none
    frame = frame.select(
        pl.col("benchmark"), pl.col("metric"), placement.alias("placement"), pl.col("background").fill_null(0),
        pl.col("unit").fill_null(""), pl.col("better"), pl.col("value"),
    )
    groups = frame.group_by(["benchmark", "metric", "placement", "background", "unit", "better"], maintain_order=True)
    return {tuple(r[:6]): r[6] for r in groups.agg(pl.col("value")).iter_rows()}


def compare_sessions(a: dict[Key, list[float]], b: dict[Key, list[float]]) -> list[Row]:
    """One row per condition of either session, ordered by benchmark, metric, placement, background."""
    rows = []
    for key in sorted(a.keys() | b.keys(), key=_order):
        va, vb = a.get(key), b.get(key)
        if va and vb:
            c = compare_samples(va, vb, key[5], ALPHA)
            rows.append(Row(key, va, vb, c, _verdict(c, key[5])))
        else:
            rows.append(Row(key, va, vb, None, _only_verdict(key, "A" if va else "B", b if va else a)))
    return rows


def _order(key: Key) -> tuple:
    benchmark, metric, placement, background, unit, better = key
    rank = PLACEMENTS.index(placement) if placement in PLACEMENTS else len(PLACEMENTS)
    return benchmark, metric, unit, better, placement != "", rank, placement, background


def _verdict(c: Comparison, better: str) -> str:
    if c.welch is None:
        return "no test: one sample each" if c.a.n == c.b.n == 1 else f"no test: n=1 in {'A' if c.a.n == 1 else 'B'}"
    if not c.significant:
        return "not significant"
    worse = (c.diff < 0) if better == "higher" else (c.diff > 0)
    return f"B {'worse' if worse else 'better'}, significant"


def _only_verdict(key: Key, side: str, other: dict[Key, list[float]]) -> str:
    """'A only', naming how the other session records the same metric when it does so differently."""
    elsewhere = sorted({(k[4], k[5]) for k in other if k[:4] == key[:4]})
    if not elsewhere:
        return f"only in {side}"
    how = ", ".join(f"{unit or 'no unit'}, {better} is better" for unit, better in elsewhere)
    return f"only in {side}; {'B' if side == 'A' else 'A'} records it as {how}"


def _session(path: Path, session_id: str) -> dict[str, Any]:
    frame = fetch_frame(path, "SELECT session_id, suite, kind, backend, host, status, started_at "
                        "FROM sessions WHERE session_id = ?", [session_id])
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in frame.row(0, named=True).items()}


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _print_table(sessions: list[dict[str, Any]], rows: list[Row]) -> None:
    """One rich table (a section per benchmark), or a few lines per row when the terminal is too narrow.

    Significant rows are red (B worse) or green (B better); rows of one session only are dim.
    """
    from rich.console import Console

    console = Console()
    for name, s in zip("AB", sessions):
        about = ", ".join(str(s[k]) for k in ("suite", "backend", "host") if s[k])
        console.print(f"{name}: {s['session_id']} ({about}; {s['status']})", highlight=False)
    records = [(r.record(), _style(r)) for r in rows]
    table, width = _wide_table(records)
    if width <= console.width:
        console.print(table)
    else:
        _print_lines(console, records)
    console.print(
        "change % = (B/A − 1)·100 of the means; slowdown % > 0 means B is worse "
        "(↑ higher is better: (1 − B/A)·100; ↓ lower is better: (B/A − 1)·100). "
        f"p: Welch's two-sided t-test of B − A; significant when p < {ALPHA}; no test with a single sample.",
        highlight=False, style="dim",
    )


#: Width the table gives the metric and verdict columns at least; longer text wraps.
_TEXT_WIDTH = 22


def _wide_table(records: list[tuple[dict[str, Any], str | None]]):
    """The table and the width it needs with every number on one line."""
    from rich import box
    from rich.cells import cell_len
    from rich.table import Table

    placed = any(r["placement"] for r, _ in records)
    scaled = any(r["background"] for r, _ in records)
    headers = ["metric (unit, better)", *(["placement"] if placed else []), *(["background"] if scaled else []),
               "A mean (n)", "B mean (n)", "B/A", "change %", "slowdown %", "95% CI of B−A", "p", f"verdict ({ALPHA:.0%})"]
    cells = [
        [f"  {r['metric']} ({r['unit'] or '-'}, {_arrow(r['better'])})",
         *([r["placement"]] if placed else []), *([str(r["background"])] if scaled else []),
         _mean(r["mean_a"], r["n_a"]), _mean(r["mean_b"], r["n_b"]),
         _fmt(r["ratio"], "{:.3f}"), _fmt(r["change_pct"], "{:+.1f}"), _fmt(r["slowdown_pct"], "{:+.1f}"),
         _ci(r), _fmt(r["p_value"], "{:.3g}"), r["verdict"]]
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
            table.add_row(f"[bold]{benchmark}[/]")
        table.add_row(*row, style=style)
    return table, width


def _print_lines(console, records: list[tuple[dict[str, Any], str | None]]) -> None:
    """The narrow layout: a heading per benchmark, three lines per condition."""
    benchmark = None
    for r, style in records:
        if r["benchmark"] != benchmark:
            benchmark = r["benchmark"]
            console.print(benchmark, style="bold", highlight=False)
        where = "".join(f", {k} {r[k]}" for k in ("placement", "background") if r[k])
        console.print(f"  {r['metric']} ({r['unit'] or '-'}, {r['better']} is better{where})", highlight=False)
        parts = [f"{side} {_num(r['mean_' + x])} (n={r['n_' + x]})" for side, x in (("A", "a"), ("B", "b")) if r["n_" + x]]
        if r["present"] == "both":
            parts += [f"B/A {_fmt(r['ratio'], '{:.3f}')}", f"change {_fmt(r['change_pct'], '{:+.1f}')} %",
                      f"slowdown {_fmt(r['slowdown_pct'], '{:+.1f}')} %"]
        console.print("    " + "  ".join(parts), highlight=False, style=style)
        test = f"95% CI of B−A {_ci(r)}  p {_fmt(r['p_value'], '{:.3g}')}  " if r["p_value"] is not None else ""
        console.print(f"    {test}{r['verdict']}", highlight=False, style=style)


def _arrow(better: str) -> str:
    return "↑" if better == "higher" else "↓"


def _ci(r: dict[str, Any]) -> str:
    return f"{_num(r['ci95_low'], 4)} … {_num(r['ci95_high'], 4)}" if r["ci95_low"] is not None else "-"


def _style(row: Row) -> str | None:
    if row.comparison is None:
        return "dim"
    if row.comparison.significant:
        return "red" if row.verdict.startswith("B worse") else "green"
    return None


def _mean(mean: float | None, n: int | None) -> str:
    return "-" if mean is None else f"{_num(mean)} ({n})"


def _num(value: float | None, digits: int = 5) -> str:
    if value is None:
        return "-"
    if 10**digits <= abs(value) < 10 ** (digits + 2):
        return f"{value:.0f}"  # 123456 rather than 1.2346e+05
    return f"{value:.{digits}g}"


def _fmt(value: float | None, pattern: str) -> str:
    return "-" if value is None else pattern.format(value)
