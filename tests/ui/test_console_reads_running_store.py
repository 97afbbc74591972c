"""A console opened on the store of a run in another process lists that session as running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from labtui.store import run_sql

REPO = Path(__file__).resolve().parents[2]


async def test_a_console_on_the_same_store_shows_the_running_session(tmp_path: Path, runtime_dir: Path) -> None:
    from textual.widgets import DataTable

    from labtui.ui.app import LabApp

    db = tmp_path / "lab.duckdb"
    env = {**os.environ, "COLUMNS": "200", "LABTUI_STATE_DIR": str(tmp_path / "state")}
    # --step keeps the session running after its first step until Enter (or a) comes on stdin
    run = subprocess.Popen([sys.executable, "-m", "labtui", "run", "boot-scaling", "--profile", "quick", "--step",
                            "--set", "sampling.quiet_timeout_s=0", "--db", str(db)], cwd=REPO, env=env,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (db.exists() and run_sql(db, "select count(*) from steps").rows[0][0] >= 1):
            assert run.poll() is None and time.monotonic() < deadline, "the run never finished a step"
            time.sleep(0.2)
        app = LabApp(db, idle_sampling=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.press("3")
            table = app.query_one("#sessions", DataTable)
            deadline = time.monotonic() + 60
            while not any("running" in " ".join(str(c) for c in table.get_row_at(i)) for i in range(table.row_count)):
                assert time.monotonic() < deadline, "the console never listed the running session"
                await pilot.pause(0.2)
        assert run.poll() is None  # the run went on while the console read its store
    finally:
        out, err = run.communicate("a\n", timeout=300)
    assert run.returncode == 0, err
    assert run_sql(db, "select status from sessions").rows == [("completed",)]
