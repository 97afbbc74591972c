"""The end-of-run table of a fairshare session: CPU share achieved against requested (Table 3 of study 004)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import polars as pl
from rich.console import Console
from rich.table import Table
from rich.text import Text

from labtui.store import fetch_frame

_SHARES = """
SELECT r.step, coalesce(i.role, '') AS role, r.repetition, r.instance_id, r.metric, r.value
FROM results r LEFT JOIN instances i ON i.session_id = r.session_id AND i.instance_id = r.instance_id
WHERE r.session_id = ? AND r.benchmark = 'fairshare'
  AND r.metric IN ('achieved_share', 'requested_share', 'achieved_share_sum')
"""


def render_fairshare(console: Console, db: Path, session_id: str) -> bool:
    """Print the share table of a fairshare session; False when the session recorded no shares."""
    rows = fetch_frame(db, _SHARES, [session_id])
    shares = rows.filter(pl.col("metric") != "achieved_share_sum")
    if shares.is_empty():
        return False
    fair = _fairshare_config(db, session_id)
    names = ["equal", *fair.get("methods", [])]
    per_instance = shares.pivot(on="metric", index=["step", "role", "repetition", "instance_id"], values="value",
                                aggregate_function="mean").drop_nulls().sort(["step", "role"])
    per_instance = per_instance.with_columns(
        of_all=pl.col("achieved_share") / pl.col("achieved_share").sum().over(["step", "repetition"]))
    where = f"CPUs {fair['cpus']}" if fair.get("cpus") else "all CPUs"
    table = Table(title=Text(f"fairshare: share of {where} achieved against requested"), title_justify="left")
    for col in ("configuration", "instances", "requested", "achieved", "min - max", "achieved / requested",
                "of all received", "n"):
        table.add_column(col, justify="left" if col in ("configuration", "instances") else "right")
    for (step, role), group in per_instance.group_by(["step", "role"], maintain_order=True):
        # polars types a Series' aggregates as any scalar: these columns hold floats, the count an int
        achieved, requested = group["achieved_share"], cast(float, group["requested_share"].mean())
        mean, low, high = (cast(float, achieved.mean()), cast(float, achieved.min()), cast(float, achieved.max()))
        count = cast(int, group.group_by("repetition").len()["len"].max())
        who = "reserved" if role == "reserved" else ("each" if step == 0 else "each other")
        table.add_row(
            Text(str(names[step]) if step < len(names) else str(step)),
            f"{who} ({count})" if who != "reserved" else who,
            _pct(requested),
            _pct(mean),
            f"{_pct(low)} - {_pct(high)}",
            f"{mean / requested:.3f}",
            _pct(cast(float, group["of_all"].mean())),
            str(achieved.len()),
        )
    console.print(table)
    sums = rows.filter(pl.col("metric") == "achieved_share_sum").group_by("step").agg(pl.col("value").mean()).sort("step")
    together = ", ".join(f"{names[s] if s < len(names) else s} {_pct(v)}" for s, v in sums.iter_rows())
    console.print(f"all instances together received: {together} of the set", highlight=False, markup=False)
    return True


def _fairshare_config(db: Path, session_id: str) -> dict:
    found = fetch_frame(db, "SELECT config FROM sessions WHERE session_id = ?", [session_id])
    if found.is_empty() or found["config"][0] is None:
        return {}
    config = found["config"][0]
    return (json.loads(config) if isinstance(config, str) else config).get("fairshare", {})


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f}%"
