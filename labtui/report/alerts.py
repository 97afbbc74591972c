"""Warnings a reader of a session's figures should see first."""

from __future__ import annotations

import polars as pl

from labtui.core.stats.trust import OUTLIER_Z, SINGLE, SPREAD_LIMIT
from labtui.core.units import quantity, share_pct
from labtui.report.data import SessionData

#: Coefficient of variation above which a step's numbers are flagged.
CV_LIMIT = SPREAD_LIMIT
_LISTED = 6


def session_warnings(data: SessionData) -> list[str]:
    """Status, failed steps, figures of one repetition, high coefficient of variation, outliers, two modes,
    swap use and logged problems, as sentences."""
    found: list[str] = []
    status = data.session.get("status")
    if status != "completed":
        message = data.session.get("message") or ""
        found.append(f"session status is {status}" + (f": {message}" if message else ""))
    failed = data.steps.filter(pl.col("ok").not_() | pl.col("ok").is_null())
    if not failed.is_empty():
        where = [
            f"repetition {r['repetition']} step {r['step']} (background {r['background']})"
            + (" never ended" if r["ok"] is None else "")
            for r in failed.iter_rows(named=True)
        ]
        found.append(f"{len(where)} failed step(s): " + _listing(where))
    figures = data.figures
    cv = figures.filter(pl.col("cv") > CV_LIMIT)
    if not cv.is_empty():
        where = [
            f"{r['benchmark']}/{r['metric']} at {_at(r)}: {share_pct(r['cv'])}"
            for r in cv.iter_rows(named=True)
        ]
        found.append(
            f"coefficient of variation above {CV_LIMIT:.0%} at {len(where)} step(s): " + _listing(where)
        )
    found += _single(data.slowdown)
    found += _doubtful(figures)
    if data.min_swap is not None and data.min_swap < 1.0:
        found.append(f"swap in use: swap availability fell to {data.min_swap * 100:.1f}%")
    for r in data.problems.head(_LISTED).iter_rows(named=True):
        found.append(f"logged {r['level']} ({r['category']}): {r['message']}")
    if len(data.problems) > _LISTED:
        found.append(f"and {len(data.problems) - _LISTED} more logged warnings or errors (see the events table)")
    return found


def _single(slowdown: pl.DataFrame) -> list[str]:
    """The figures of one repetition (n = 1): no spread, interval, outlier or CV check can judge them."""
    one = slowdown.filter(pl.col("n") == 1)
    if one.is_empty():
        return []
    where = [f"{r['benchmark']}/{r['metric']} at {_at(r)}" for r in one.iter_rows(named=True)]
    return [f"{SINGLE} at {len(where)} of {slowdown.height} figure(s), from one repetition each: no interval, CV, "
            "outlier or mode check is possible (run more repetitions): " + _listing(where)]


def _doubtful(figures: pl.DataFrame) -> list[str]:
    """Outliers (modified Z-score) and bimodal samples among the figures' per-repetition values (their trust)."""
    odd, split = [], []
    for r in figures.iter_rows(named=True):
        name = f"{r['benchmark']}/{r['metric']} at {_at(r)}"
        if far := r["outliers"]:
            odd.append(f"{name}: " + ", ".join(quantity(v, r["unit"]) for v in far))
        if two := r["modes"]:
            split.append(f"{name}: around {quantity(two[0], r['unit'])} and {quantity(two[1], r['unit'])}")
    found = []
    if odd:
        found.append(f"outliers (modified Z-score above {OUTLIER_Z}) at {len(odd)} step(s): " + _listing(odd))
    if split:
        found.append(f"two modes (bimodal samples) at {len(split)} step(s): " + _listing(split))
    return found


def _at(row: dict) -> str:
    return f"placement {row['placement']}" if row.get("placement") else f"background {row['background']}"


def _listing(items: list[str]) -> str:
    shown = "; ".join(items[:_LISTED])
    return shown + (f"; and {len(items) - _LISTED} more" if len(items) > _LISTED else "")
