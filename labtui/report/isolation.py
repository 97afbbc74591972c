"""Isolation bars per attacker placement (Fig 5.1 to 5.4 of the Docker/Unikraft study)."""

from __future__ import annotations

import numpy as np
import polars as pl

from labtui.core.units import display_unit
from labtui.figures import METRIC_KEY
from labtui.report.data import SessionData
from labtui.report.plotting import SESSION_COLORS, Chart, better_text, new_figure, slug
from labtui.suites.kinds.isolation import PLACEMENTS

#: How the study names each placement.
PLACEMENT_NAMES = {
    "alone": "single run",
    "same-thread": "same thread",
    "sibling-thread": "same core",
    "other-core": "other core",
    "all-other-cores": "all cores",
}


def placement_name(placement: str) -> str:
    """The study's name of a placement ("sibling-thread" -> "same core")."""
    return PLACEMENT_NAMES.get(placement, placement)


def placement_order(placements: list[str]) -> list[str]:
    """Placements in the order they are measured; unknown ones last, alphabetically."""
    known = [p for p in PLACEMENTS if p in placements]
    return known + sorted(set(placements) - set(known))


def attacker(session: SessionData) -> str:
    """The attacker of an isolation session, from its config (program or image)."""
    spec = session.config.get("attacker") or {}
    return str(spec.get("program") or spec.get("image") or session.session.get("suite"))


def isolation_charts(sessions: list[SessionData]) -> list[Chart]:
    """One chart per metric: bars per placement (absolute, normalized to the single run)."""
    frames = [s.isolation() for s in sessions]
    if all(f.is_empty() for f in frames):
        return []
    keys = pl.concat([f.select(METRIC_KEY) for f in frames]).unique(maintain_order=True)
    return [
        _chart(sessions, key, [f.filter(*(pl.col(k) == v for k, v in key.items())) for f in frames])
        for key in keys.iter_rows(named=True)
    ]


def _chart(sessions: list[SessionData], key: dict, parts: list[pl.DataFrame]) -> Chart:
    metric, better = key["metric"], key["better"]
    attackers = ", ".join(dict.fromkeys(attacker(s) for s, p in zip(sessions, parts) if not p.is_empty()))
    title = f"{key['benchmark']}: {metric} against attacker {attackers} {better_text(better)}"
    fig, (ax_abs, ax_norm) = new_figure(title, panels=2)
    order = placement_order([p for part in parts for p in part["placement"].to_list()])
    shown, factor = display_unit(key["unit"])
    width = 0.8 / max(1, len(parts))
    x = np.arange(len(order))
    for i, (session, part) in enumerate(zip(sessions, parts)):
        if part.is_empty():
            continue
        rows = {r["placement"]: r for r in part.iter_rows(named=True)}
        mean = np.array([rows[p]["mean"] if p in rows else np.nan for p in order], dtype=float)
        std = np.array([(rows[p]["std"] or 0.0) if p in rows else np.nan for p in order], dtype=float)
        norm = np.array([rows[p]["normalized"] if p in rows else np.nan for p in order], dtype=float)
        base = rows[order[0]]["mean"] if order[0] in rows else np.nan
        offset = x + (i - (len(parts) - 1) / 2) * width
        color = SESSION_COLORS[i % len(SESSION_COLORS)]
        label = session.label if len(sessions) > 1 else "mean ± 1 std"
        ax_abs.bar(offset, mean / factor, width, yerr=std / factor, capsize=4, color=color, alpha=0.85, label=label)
        ax_norm.bar(offset, norm, width, yerr=std / base, capsize=4, color=color, alpha=0.85, label=label)
    ax_norm.axhline(1.0, color="#555555", linewidth=0.8, linestyle="--")
    ax_abs.set_title("absolute (mean ± 1 std over repetitions)", fontsize=10)
    ax_norm.set_title("normalized to the single run", fontsize=10)
    ax_abs.set_ylabel(f"{metric} ({shown})")
    ax_norm.set_ylabel(f"{metric} / {metric} of the single run")
    for ax in (ax_abs, ax_norm):
        ax.set_xticks(x, [placement_name(p) for p in order], rotation=15)
        ax.set_xlabel("attacker placement")
        ax.legend(loc="best", fontsize=9)
    return Chart(slug("isolation", key["benchmark"], metric), title, fig)
