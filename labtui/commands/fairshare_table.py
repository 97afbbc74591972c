"""The end-of-run table of a fairshare session: CPU share achieved against requested (Table 3 of study 004).

The rows and their unit are the report's (``labtui.report.data.share_points``): one row per configuration
and requested share, weight and cap apart, in % of one CPU, so an SMP run states its shares per CPU as the
paper does (a quarter of two CPUs, 200%, is 50%).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from labtui.report.data import load_session, share_points, share_unit, together_points
from labtui.report.tables import share_instances


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
