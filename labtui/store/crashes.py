"""Crash marking: this machine's sessions the store calls running whose controller is gone.

A session is alive while a process holds its running-lock (labtui.core.liveness), the one answer
labtui gives everywhere; the recorded pid is kept for the message only (a pid is reused).
"""

from __future__ import annotations

import socket

import duckdb

from labtui.core.liveness import session_is_running


def controller_name() -> str:
    """The hostname recorded as the controller of sessions started here."""
    return socket.gethostname()


_MARK_CRASHED_SQL = """
UPDATE sessions SET
    status = 'crashed',
    ended_at = coalesce((
        SELECT max(t) FROM (
            SELECT max(ts) AS t FROM resources r WHERE r.session_id = sessions.session_id
            UNION ALL SELECT max(ts) FROM observer o WHERE o.session_id = sessions.session_id
            UNION ALL SELECT max(ts) FROM results r WHERE r.session_id = sessions.session_id
            UNION ALL SELECT max(ts) FROM events e WHERE e.session_id = sessions.session_id
            UNION ALL SELECT max(greatest(s.started_at, s.ended_at)) FROM steps s
                WHERE s.session_id = sessions.session_id
        )
    ), now()),
    message = 'controller process ' || pid || ' ended without closing the session'
WHERE session_id = ?
"""


def crashed_sessions(con: duckdb.DuckDBPyConnection) -> list[str]:
    """This machine's 'running' sessions whose running-lock nobody holds (reads only): their controller is gone."""
    candidates = con.sql(
        "SELECT session_id FROM sessions WHERE status = 'running' AND controller = ? ORDER BY session_id",
        params=[controller_name()],
    ).fetchall()
    return [sid for (sid,) in candidates if not session_is_running(sid)]


def mark_crashed_sessions(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Mark this machine's 'running' sessions whose controller is gone (crashed_sessions) as 'crashed'.

    ended_at becomes the last timestamp seen for the session (or now).
    Returns the ids of the sessions marked.
    """
    crashed = crashed_sessions(con)
    for session_id in crashed:
        con.execute(_MARK_CRASHED_SQL, [session_id])
    return crashed
