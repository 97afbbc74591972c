"""The samples `labtui compare` tests: each condition's independent samples of one or more sessions.

Shared by the two-session comparison (labtui.commands.compare) and the side by side of more
(labtui.commands.compare_side).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labtui.store import fetch_frame
from labtui.store.frames import repetition_table
from labtui.suites.kinds.isolation import PLACEMENTS

ALPHA = 0.05  # Welch's test and the 95% interval of each condition
#: How results are matched between the sessions.
Key = tuple[str, str, str, int, str, str]  # benchmark, metric, placement, background, unit, better
#: What one sample is, by how many sessions a side names.
REPETITIONS, SESSIONS = "repetitions", "sessions"


@dataclass(frozen=True, slots=True)
class Samples:
    """A condition's independent samples on one side, and the raw values behind them."""

    values: list[float]  # one per repetition (one session a side) or per session
    unit: str  # REPETITIONS or SESSIONS
    raw: int  # raw result values behind them (instances x runs x ...)

    def __bool__(self) -> bool:
        return bool(self.values)

    def __len__(self) -> int:
        return len(self.values)


_CONDITION = ["benchmark", "metric", "placement", "background", "unit", "better"]


def load_samples(path: Path, session_ids: str | list[str], unit: str = REPETITIONS) -> dict[Key, Samples]:
    """The independent samples of each condition of the sessions (finite values only).

    REPETITIONS (one session): one sample per repetition, the median of the condition's values
    in it (all instances and runs of the step: the store's REPETITION_VALUES); SESSIONS: one per
    session, the mean of its repetitions' values.  Samples are in the order of repetition (or of `session_ids`).
    """
    import polars as pl

    ids = [session_ids] if isinstance(session_ids, str) else list(session_ids)
    if unit == REPETITIONS and len(ids) != 1:
        raise ValueError("samples by repetition come from one session")
    marks = ", ".join("?" for _ in ids)
    frame = fetch_frame(path, f"SELECT * FROM results WHERE session_id IN ({marks}) AND isfinite(value) "
                        "ORDER BY ts, step", ids)
    frame = frame.select(
        pl.col("session_id"), pl.col("repetition").fill_null(0), pl.col("step"), pl.col("run"),
        pl.col("benchmark"), pl.col("metric"), pl.col("placement").fill_null(""), pl.col("background").fill_null(0),
        pl.col("unit").fill_null(""), pl.col("better"), pl.col("value"),
    )
    # one value per repetition: the instances (and runs) of one step are not independent samples
    reps = repetition_table(frame).sort(["session_id", "repetition"]).select(
        [*_CONDITION, "session_id", "repetition", "value", "raw"])
    if unit == SESSIONS:
        order = {sid: i for i, sid in enumerate(ids)}
        reps = reps.group_by([*_CONDITION, "session_id"], maintain_order=True).agg(
            pl.col("value").mean(), pl.col("raw").sum()
        ).with_columns(pl.col("session_id").replace_strict(order, return_dtype=pl.Int64).alias("repetition"))
    reps = reps.sort("repetition", maintain_order=True)
    groups = reps.group_by(_CONDITION, maintain_order=True).agg(pl.col("value"), pl.col("raw").sum())
    return {tuple(r[:6]): Samples(list(r[6]), unit, int(r[7])) for r in groups.iter_rows()}


def condition_order(key: Key) -> tuple:
    benchmark, metric, placement, background, unit, better = key
    rank = PLACEMENTS.index(placement) if placement in PLACEMENTS else len(PLACEMENTS)
    return benchmark, metric, unit, better, placement != "", rank, placement, background


def session_about(path: Path, session_id: str) -> dict[str, Any]:
    frame = fetch_frame(path, "SELECT s.session_id, s.suite, s.kind, s.backend, s.host, h.isolation, s.status, "
                        "s.started_at, s.tags, s.note FROM sessions s LEFT JOIN hosts h USING (session_id) "
                        "WHERE s.session_id = ? LIMIT 1", [session_id])
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in frame.row(0, named=True).items()}


def finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value
