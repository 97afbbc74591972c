"""Reading a past session's host availability per background level from the store."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from labtui.store import fetch_frame
from labtui.ui.model.series import availability

REPLAY_SQL = """
select r.host, s.background, r.cpu_avail, r.mem_avail, r.swap_avail
from resources r
join steps s on s.session_id = r.session_id and r.ts between s.started_at and s.ended_at
where r.session_id = ?
"""


def replay_availability(db: Path, session_id: str) -> pl.DataFrame:
    """Mean CPU/RAM/swap availability per background count of one session."""
    return availability(fetch_frame(db, REPLAY_SQL, [session_id]))
