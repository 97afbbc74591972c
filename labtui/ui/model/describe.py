"""What `d` (describe) and `l` (log) show of one instance in the Instances view (no Textual here).

Describe: the instance as its backend lists it (labels, name, handle, host,
state, times, details) and the store's rows for it (its `instances` row and a
count of its results).  Log: the end of the backend's `logs(instance)`, or one
line saying the backend keeps none (Backend.logs returns None).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labtui.backends.base import Instance
from labtui.store import StoreError, fetch_frame
from labtui.ui.model.inventory import Found

#: The store's columns of an instance's row, in the order shown.
STORE_COLUMNS = ("state", "created_at", "ready_at", "destroyed_at", "boot_s")
#: The log window shows at most this many lines, the last ones.
LOG_LINES = 2000


def labels_line(instance: Instance) -> str:
    """`session=S role=R instance=I`: the lab labels, the title of both windows."""
    labels = instance.labels
    return f"session={labels.session} role={labels.role} instance={labels.instance}"


def _when(epoch: float | None) -> str:
    return "-" if epoch is None else datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def describe(found: Found, db_path: Path) -> str:
    """Plain text: the instance as listed, then the store's rows for it (blocking: run it in a thread).

    A time or boot the backend does not report (the process backend forgets when an instance became
    ready) is taken from the store's row, and says so.
    """
    i = found.instance
    row, store_lines = store_rows(i, db_path)
    ready = _when(i.ready_at)
    if i.ready_at is None and row and row["ready_at"] is not None:
        ready = f"{row['ready_at'].isoformat(timespec='milliseconds')} (from the store)"
    boot = '-' if i.boot_s is None else f'{i.boot_s:.6f} s'
    if i.boot_s is None and row and row["boot_s"] is not None:
        boot = f"{row['boot_s']:.6f} s (from the store)"
    lines = [
        f"name:       {i.name}",
        f"labels:     {labels_line(i)}",
        f"backend:    {found.backend.name}",
        f"handle:     {i.handle or '-'}",
        f"host:       {i.host}",
        f"state:      {i.state}" + (f" (exit code {i.exit_code})" if i.exit_code is not None else ""),
        f"created:    {_when(i.created_at)}",
        f"ready:      {ready}",
        f"boot:       {boot}",
        f"memory:     {'-' if found.memory is None else f'{found.memory} bytes'}",
        f"orphan:     {'yes: no process runs its session' if found.orphan else 'no'}",
    ]
    if i.details:
        lines.append("details:    " + json.dumps(i.details, sort_keys=True, default=str))
    lines += ["", f"store ({db_path}):", *store_lines]
    return "\n".join(lines)


def store_rows(instance: Instance, db_path: Path) -> tuple[dict[str, Any] | None, list[str]]:
    """The store's `instances` row of the instance (None when there is none) and the lines that show it with
    its count of results, or one line saying why not."""
    if not db_path.exists():
        return None, ["  no store file"]
    key = [instance.labels.session, instance.labels.instance]
    try:
        rows = fetch_frame(db_path, f"SELECT {', '.join(STORE_COLUMNS)} FROM instances "
                           "WHERE session_id = ? AND instance_id = ?", key)
        results = fetch_frame(db_path, "SELECT count(*) AS n FROM results WHERE session_id = ? AND instance_id = ?",
                              key)
    except (StoreError, OSError) as exc:
        return None, [f"  cannot read the store: {exc}"]
    if rows.is_empty():
        return None, ["  no instances row (not created by a session recorded in this store)"]
    row = rows.row(0, named=True)
    shown = [f"  instances.{column}: {'-' if row[column] is None else row[column]}" for column in STORE_COLUMNS]
    return row, [*shown, f"  results: {results['n'][0]} row(s)"]


async def instance_log(found: Found) -> str:
    """The end of the instance's log or console output (Backend.logs), or one line saying the backend keeps none."""
    text = await found.backend.logs(found.instance)
    if text is None:
        return f"the {found.backend.name} backend keeps no log of its instances"
    lines = text.splitlines()
    if len(lines) > LOG_LINES:
        lines = [f"(the last {LOG_LINES} of {len(lines)} lines)", *lines[-LOG_LINES:]]
    return "\n".join(lines) or "(the log is empty)"
