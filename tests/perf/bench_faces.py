"""Does a run take as long from the console as from the CLI? Both go through the session service.

Runs SUITE (default boot-scaling, --profile quick) alternately through `labtui run` and through the
console's start dialog (a headless Textual Pilot), ROUNDS times each, and prints the median session
duration (sessions.ended_at - started_at, so process start-up is left out) of each face and their
ratio with its spread; the same for the steps alone (from the first step's start to the end, so
without the quiet-host wait at the start of a repetition), and how many rounds found the host busy
(the wait ran out: under load from elsewhere it adds its whole timeout to both faces).
While the console's session runs the bench only looks at the view every 0.25 s: a Pilot.pause
forces a screen update, 20 a second at 0.05 s, which a person at a terminal does not.

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


#: (session seconds, steps seconds, quiet-host wait ran out)
Timing = tuple[float, float, bool]

TIMING_SQL = """
select epoch(s.ended_at) - epoch(s.started_at) as session_s,
       epoch(s.ended_at) - (select epoch(min(started_at)) from steps) as steps_s,
       (select count(*) from events where category = 'busy-host') as busy, s.status
from sessions s
"""


def timing(db: Path) -> Timing:
    from labtui.store import fetch_frame

    frame = fetch_frame(db, TIMING_SQL)
    assert frame["status"].to_list() == ["completed"], frame
    return float(frame["session_s"][0]), float(frame["steps_s"][0]), bool(frame["busy"][0])


def cli_round(suite: str, db: Path) -> Timing:
    argv = [sys.executable, "-m", "labtui", "run", suite, "--profile", "quick", "--db", str(db)]
    subprocess.run(argv, check=True, capture_output=True, cwd=ROOT)
    return timing(db)


async def console_round(suite: str, db: Path) -> Timing:
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
            await asyncio.sleep(0.05)
        while view.active:
            await asyncio.sleep(0.25)
    return timing(db)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="boot-scaling")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    cli: list[Timing] = []
    console: list[Timing] = []
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["LABTUI_RUNTIME_DIR"] = str(Path(tmp) / "runtime")
        os.environ["LABTUI_STATE_DIR"] = str(Path(tmp) / "state")
        for i in range(args.rounds):
            cli.append(cli_round(args.suite, Path(tmp) / f"cli{i}.duckdb"))
            console.append(asyncio.run(console_round(args.suite, Path(tmp) / f"console{i}.duckdb")))
            load.append(os.getloadavg()[0])
            print(f"round {i + 1}: cli {cli[-1][0]:.2f} s (steps {cli[-1][1]:.2f})  console {console[-1][0]:.2f} s "
                  f"(steps {console[-1][1]:.2f})  load {load[-1]:.1f}", flush=True)
    print(f"{args.suite} --profile quick, {args.rounds} interleaved rounds:")
    for label, part in (("session", 0), ("steps", 1)):
        a, b = [t[part] for t in cli], [t[part] for t in console]
        ratios = [y / x for x, y in zip(a, b)]
        print(f"  {label:<8} cli median {statistics.median(a):.2f} s ({min(a):.2f}-{max(a):.2f})  console median "
              f"{statistics.median(b):.2f} s ({min(b):.2f}-{max(b):.2f})  console/cli median "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")
    print(f"  quiet-host wait ran out: cli {sum(t[2] for t in cli)}/{args.rounds}, "
          f"console {sum(t[2] for t in console)}/{args.rounds}")
    print(f"  load average (1 min) {min(load):.1f}-{max(load):.1f}  ({time.strftime('%H:%M:%S')})")


if __name__ == "__main__":
    main()
