"""The fairshare kind's figure and end-of-run table: CPU share achieved against requested (study 004, Table 3).

The table's rows and unit are the figure's (``labtui.report.data.share_points``): one row per configuration and
requested share, weight and cap apart, in % of one CPU, so an SMP run states its shares per CPU as the paper does
(a quarter of two CPUs, 200%, is 50%).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from labtui.report.data import SessionData, load_session, share_points, share_unit, together_points
from labtui.report.plotting import SESSION_COLORS, Chart, new_figure
from labtui.report.tables import share_instances

#: One marker per fairshare configuration, so that weight and cap stay apart where they request the same share.
_MARKERS = {"equal": "o", "weight": "s", "cap": "^"}


def share_charts(sessions: list[SessionData]) -> list[Chart]:
    """Achieved against requested CPU share, one series per configuration (equal, weight, cap), with the diagonal."""
    usable = [s for s in sessions if not s.shares.is_empty()]
    if not usable:
        return []
    title = "achieved against requested CPU share (closer to the diagonal is better)"
    fig, (ax,) = new_figure(title)
    top = 0.0
    for i, session in enumerate(usable):
        points = share_points(session)
        color = SESSION_COLORS[i % len(SESSION_COLORS)]
        for (configuration,), part in points.group_by("configuration", maintain_order=True):
            name = str(configuration)
            label = f"{name} · {session.label}" if len(usable) > 1 else f"{name} (mean ± 1 std)"
            ax.errorbar(part["requested"].to_numpy(), part["achieved"].to_numpy(),
                        yerr=part["achieved_std"].fill_null(0.0).to_numpy(), fmt=_MARKERS.get(name, "D"),
                        capsize=4, color=color, label=label, fillstyle="none" if name == "cap" else "full")
        top = max(top, float(points["requested"].max()),  # type: ignore[arg-type]
                  float((points["achieved"] + points["achieved_std"].fill_null(0.0)).max()))  # type: ignore[arg-type]
    ax.plot([0, top * 1.05], [0, top * 1.05], "--", color="#555555", linewidth=0.8, label="requested = achieved")
    ax.set_xlim(0, top * 1.05)
    ax.set_ylim(0, top * 1.05)
    ax.set_title(f"study 004 §5.1, Table 3; {share_unit(usable[0])}", fontsize=9)
    ax.set_xlabel("requested CPU share (% of one CPU)")
    ax.set_ylabel("achieved CPU share (% of one CPU)")
    ax.legend(loc="upper left", fontsize=9)
    return [Chart("cpu-share", title, fig)]


def render_fairshare(console: Console, db: Path, session_id: str) -> bool:
    """Print the share table of a fairshare session; False when the session recorded no shares."""
    session = load_session(db, session_id)
    if session.shares.is_empty():
        return False
    cpus = session.config.get("fairshare", {}).get("cpus")
    where = f"CPUs {cpus}" if cpus else "all CPUs"
    title = f"fairshare on {where}: CPU share achieved against requested, in {share_unit(session)}"
    table = Table(title=Text(title), title_justify="left")
    for col in ("configuration", "instances", "requested", "achieved", "min - max", "achieved / requested",
                "of all received", "n"):
        table.add_column(col, justify="left" if col in ("configuration", "instances") else "right")
    for r in share_points(session).iter_rows(named=True):
        who = share_instances(r["configuration"], r["role"])
        who += "" if r["role"] == "reserved" else f" ({r['instances']})"
        table.add_row(
            Text(r["configuration"]), who, _pct(r["requested"]), _pct(r["achieved"]),
            f"{_pct(r['achieved_min'])} - {_pct(r['achieved_max'])}", f"{r['achieved'] / r['requested']:.3f}",
            _pct(r["of_all"] * 100), str(r["n"]),
        )
    console.print(table)
    together = ", ".join(f"{r['configuration']} {_pct(r['achieved'])}" for r in together_points(session).iter_rows(
        named=True))
    total = f"{session.shared_cpus() * 100}% of {where}"
    console.print(f"all instances together received: {together} (of {total})", highlight=False, markup=False)
    return True


def _pct(value: float | None) -> str:
    """A value already in % with two decimals and a % sign; "-" for none."""
    return "-" if value is None else f"{value:.2f}%"
