"""`labtui trend`: the Zones study's trendlines, Δ% and d%, of each metric against the background count.

Study 000 (section 5.1.2, Tables 5-3 to 5-10) fits a line y = a·x + b to each AIM9
figure against the number of zones; Δ% = a·x_max / b is how much the figure moves
as zones are added, and d% the average distance of a scenario's line from the
baseline global zone's line, over b0.  Here x is a session's background count and
y each repetition's finite value at it (the store's REPETITION_VALUES); the definitions are labtui.core.stats.trend.trendline,
trend_delta_pct and trend_distance_pct.

The study's figures are AIM9 rates, higher is better, and it reads the signs as performance
(section 5.1.2: "A positive value of d% indicates the performance of tested zone is better than
the baseline global zone"; Δ% is "System performance impact as the number of zones increases").  A
lower-is-better figure (a time such as fork_us) would read the other way round, so its Δ% and
d% have their sign turned (``SIGN_TURNED``): positive is better for every metric, and the
``sign`` column says which were turned.

Under each session's printed table, each metric's verdict (labtui.figures.verdict) from the same points:
whether the slope's 95% interval leaves 0 out, in the metric's own direction, as ``labtui run`` words it.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

from labtui.commands.common import db_path
from labtui.commands.listing import PipeConsole, print_uncut, write_rows
from labtui.core.errors import UsageError
from labtui.core.stats.trend import Trendline, trend_delta_ci_pct, trend_delta_pct, trend_distance_pct, trendline
from labtui.core.units import display_unit, number
from labtui.figures.verdict import verdict
from labtui.store import REPETITION_VALUES, UnknownSession, fetch_frame, resolve_session

COLUMNS = ["session_id", "role", "benchmark", "metric", "unit", "better", "n", "levels", "slope", "intercept",
           "r2", "delta_pct", "delta_ci95_pct", "d_pct", "sign"]
#: The ``sign`` column: Δ% and d% as the line gives them (higher is better), or turned (lower is better).
AS_MEASURED, SIGN_TURNED = "as measured", "turned"

#: One point per repetition and background count: the repetition's value there (REPETITION_VALUES), so the
#: runs of one step are not fitted as independent points (their number would narrow the line's interval).
_POINTS = f"""
SELECT benchmark, metric, unit, better, background, value FROM ({REPETITION_VALUES})
WHERE session_id = ? AND isfinite(value) AND background IS NOT NULL AND placement = ''
ORDER BY benchmark, metric, background, repetition
"""

Key = tuple[str, str, str, str]  # benchmark, metric, unit, better


@dataclass(frozen=True, slots=True)
class TrendRow:
    session_id: str
    role: str  # "baseline" or "tested"
    key: Key
    line: Trendline
    baseline: Trendline | None  # the baseline's line for the same metric; None without one
    verdict: str = ""  # the metric's verdict (labtui.figures.verdict) in this session, printed under its table

    @property
    def sign(self) -> float:
        """+1, or -1 for a lower-is-better metric: Δ% and d% are positive when the figure got better."""
        return -1.0 if self.key[3] == "lower" else 1.0

    @property
    def delta_pct(self) -> float:
        """Δ% (study 000, Table 5-2), positive when the figure gets better as the background grows."""
        return self.sign * trend_delta_pct(self.line) + 0.0  # never -0.0

    @property
    def d_pct(self) -> float | None:
        """d% (study 000, section 5.1.2) from the baseline's line, positive when better than it; None without one."""
        # + 0.0: a turned sign of 0 is 0, not the -0.0 a CSV would print for the baseline
        return None if self.baseline is None else self.sign * trend_distance_pct(self.line, self.baseline) + 0.0

    def record(self) -> dict[str, object]:
        benchmark, metric, unit, better = self.key
        values = [self.session_id, self.role, benchmark, metric, unit, better, self.line.n, len(self.line.xs),
                  self.line.slope, self.line.intercept, self.line.r2, self.delta_pct,
                  trend_delta_ci_pct(self.line), self.d_pct, SIGN_TURNED if self.sign < 0 else AS_MEASURED]
        return dict(zip(COLUMNS, values))


def cmd_trend(args) -> int:
    path = db_path(args)
    try:
        baseline = resolve_session(path, args.baseline) if args.baseline else None
        tested = [resolve_session(path, s) for s in args.sessions]
    except UnknownSession as exc:  # not a store that cannot be read: the session list would not help then
        raise UsageError(f"{exc} (see `labtui sessions`)") from None
    named_twice = sorted({s for s in tested if tested.count(s) > 1 or s == baseline})
    if named_twice:  # its d% against itself is 0 by construction: a typo, as compare A A is
        said = f"session {named_twice[0]} is" if len(named_twice) == 1 else f"sessions {', '.join(named_twice)} are"
        raise UsageError(f"{said} named twice; give each session once")
    base_lines = session_trendlines(path, baseline, args.metric) if baseline else {}
    rows = []
    if baseline:
        lines = session_verdicts(path, baseline, args.metric)
        rows = [TrendRow(baseline, "baseline", key, line, line, lines.get(key, "")) for key, line in base_lines.items()]
    for session_id in tested:
        lines = session_verdicts(path, session_id, args.metric)
        for key, line in session_trendlines(path, session_id, args.metric).items():
            rows.append(TrendRow(session_id, "tested", key, line, base_lines.get(key), lines.get(key, "")))
    if not rows:
        what = f"metric {args.metric!r}" if args.metric else "any metric"
        print(f"labtui trend: no session has {what} at two or more background counts", file=sys.stderr)
        return 1
    if args.format in ("csv", "json"):  # a missing figure is empty in CSV, null in JSON
        write_rows(args.format, COLUMNS, [[None if _blank(v) else v for v in r.record().values()] for r in rows])
    else:
        _print_table(rows, baseline)
    return 0


def session_trendlines(path: Path, session_id: str, metric: str | None) -> dict[Key, Trendline]:
    """The trendline of every (benchmark, metric) the session measured at two or more background counts."""
    frame = fetch_frame(path, _POINTS, [session_id])
    lines: dict[Key, Trendline] = {}
    for (benchmark, metric_name, unit, better), part in frame.group_by(
            ["benchmark", "metric", "unit", "better"], maintain_order=True):
        if metric and metric_name != metric:
            continue
        xs, ys = part["background"].to_list(), part["value"].to_list()
        if len(set(xs)) >= 2:
            lines[(str(benchmark), str(metric_name), str(unit or ""), str(better))] = trendline(xs, ys)
    return lines


def session_verdicts(path: Path, session_id: str, metric: str | None) -> dict[Key, str]:
    """The verdict line (labtui.figures.verdict) of every (benchmark, metric) of the session, from the same points
    as its trendline: each repetition's finite value at each background count."""
    frame = fetch_frame(path, _POINTS, [session_id])
    found: dict[Key, str] = {}
    for (benchmark, metric_name, unit, better), part in frame.group_by(
            ["benchmark", "metric", "unit", "better"], maintain_order=True):
        if metric and metric_name != metric:
            continue
        levels: dict[float, list[float]] = {}
        for background, value in part.select("background", "value").iter_rows():
            levels.setdefault(background, []).append(value)
        found[(str(benchmark), str(metric_name), str(unit or ""), str(better))] = verdict(
            str(metric_name), str(unit or ""), levels).line
    return found


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _print_table(rows: list[TrendRow], baseline: str | None) -> None:
    """A heading per session, then one row per metric: n, levels, the line, r², Δ% with its CI, d%."""
    from rich.table import Table

    console = PipeConsole()
    for session_id in dict.fromkeys(r.session_id for r in rows):
        mine = [r for r in rows if r.session_id == session_id]
        console.print(f"{session_id}" + (" (baseline)" if mine[0].role == "baseline" else ""), style="bold",
                      highlight=False, markup=False)
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("benchmark/metric (unit)", no_wrap=True)
        for header in ("n", "levels", "a", "b", "r²", "Δ%", "±95%", "d%", "sign"):
            table.add_column(header, justify="right", no_wrap=True)
        for r in mine:
            rec = r.record()
            ci = rec["delta_ci95_pct"]
            d = "" if r.d_pct is None or r.role == "baseline" else "-" if _blank(r.d_pct) else f"{r.d_pct:+.2f}"
            unit = r.key[2]  # a and b in the metric's display unit, as every table shows it
            table.add_row(f"{r.key[0]}/{r.key[1]} ({display_unit(unit)[0]})", str(r.line.n),
                          f"{r.line.xs[0]:g}-{r.line.xs[-1]:g}", number(r.line.slope, unit), number(r.line.intercept, unit),
                          f"{r.line.r2:.3f}",
                          "-" if _blank(rec["delta_pct"]) else f"{rec['delta_pct']:+.2f}",
                          "" if _blank(ci) else f"{ci:.2f}", d, str(rec["sign"]))
        print_uncut(console, table)
        for r in mine:
            if r.verdict:
                console.print(f"{r.key[0]}/{r.verdict}", highlight=False, markup=False)  # boot/boot_time grows ...
    note = ("Trendline y = a·x + b over the background counts x. Δ% = a·x_max / b: its change over the counts "
            "measured, over its value at 0 (study 000, Table 5-2); ±95%: from the slope's standard error.")
    if baseline:
        note += (f" d% = mean over the session's counts of (y − y0) / b0, y0 = the baseline {baseline}'s line: "
                 "positive is better than it.")
    note += (" Positive Δ% and d% are better, as in the study: a lower-is-better metric (a time) has both signs "
             f"turned (sign: {SIGN_TURNED}).")
    console.print(note, style="dim", highlight=False, markup=False)
