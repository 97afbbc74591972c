"""Does a run take as long from the console as from the CLI? Both go through the session service.

Runs SUITE (default boot-scaling, --profile quick) alternately through `labtui run` and through the
console's start dialog (a headless Textual Pilot), ROUNDS times each, and prints the median session
duration (sessions.ended_at - started_at, so process start-up is left out) of each face and their
ratio with its spread.

    python tests/perf/bench_faces.py [--suite NAME] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Seconds the console is left to settle (its views load in a thread after the first frame).
SETTLE_S = 3.0
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def session_seconds(db: Path) -> float:
    from labtui.store import fetch_frame

    frame = fetch_frame(db, "select epoch(ended_at) - epoch(started_at) as s, status from sessions")
    assert frame["status"].to_list() == ["completed"], frame
    return float(frame["s"][0])


def cli_round(suite: str, db: Path) -> float:
    argv = [sys.executable, "-m", "labtui", "run", suite, "--profile", "quick", "--db", str(db)]
    subprocess.run(argv, check=True, capture_output=True, cwd=ROOT)
    return session_seconds(db)


async def console_round(suite: str, db: Path) -> float:
    from textual.widgets import Select

    from labtui.ui.app import LabApp
    from labtui.ui.start_dialog import StartDialog

    app = LabApp(db, idle_sampling=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause(SETTLE_S)  # as a person would: the console has drawn and settled before s
        await pilot.press("s")
        while not isinstance(app.screen, StartDialog):
            await pilot.pause(0.05)
        dialog = app.screen
        dialog.query_one("#suite", Select).value = suite
        profile = dialog.query_one("#profile", Select)
        while ("quick", "quick") not in list(profile._options):
            await pilot.pause(0.05)
        profile.value = "quick"
        while not dialog.choices:
            await pilot.pause(0.05)
        await pilot.press("ctrl+s")
        view = app.run_view
        while view.model.session_id == "":
            await pilot.pause(0.05)
        while view.active:
            await pilot.pause(0.05)
    return session_seconds(db)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="boot-scaling")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cli, console = [], []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LABTUI_RUNTIME_DIR"] = str(Path(tmp) / "runtime")
        os.environ["LABTUI_STATE_DIR"] = str(Path(tmp) / "state")
        for i in range(args.rounds):
            cli.append(cli_round(args.suite, Path(tmp) / f"cli{i}.duckdb"))
            console.append(asyncio.run(console_round(args.suite, Path(tmp) / f"console{i}.duckdb")))
            print(f"round {i + 1}: cli {cli[-1]:.2f} s  console {console[-1]:.2f} s", flush=True)
    ratios = [b / a for a, b in zip(cli, console)]
    print(f"{args.suite} --profile quick, {args.rounds} interleaved rounds, session duration:")
    print(f"  cli     median {statistics.median(cli):.2f} s  (min {min(cli):.2f}, max {max(cli):.2f})")
    print(f"  console median {statistics.median(console):.2f} s  (min {min(console):.2f}, max {max(console):.2f})")
    print(f"  console/cli ratio: median {statistics.median(ratios):.3f}  (min {min(ratios):.3f}, max {max(ratios):.3f})")
    print(f"  load average at the end: {os.getloadavg()[0]:.1f}  ({time.strftime('%H:%M:%S')})")


if __name__ == "__main__":
    main()
