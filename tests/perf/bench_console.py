"""Console speed, measured in a real pseudo-terminal (the bytes a terminal would draw).

    python tests/perf/bench_console.py [--quick]

- the Run view's panes, side by side with two Textual apps: `python -m labtui` on a store of
  HISTORY_SESSIONS (100) sessions, a minimal app (a header, one Static, a footer: the issue's
  reference) and a bare app of the console's shape (header, three bordered panes of text,
  footer), started one after another in a rotating order in the same tmux window size, each
  timed from its exec (the launch script stamps the clock just before it execs Python) until
  every pane's text is on the tmux screen (`capture-pane`; labtui: the hosts pane's "CPU free",
  the run pane's "no run yet", the instances pane's "total" row).
  Then the screen is read for HOLD_S more: a pane whose text goes away counts as a blanked pane.
  Target: labtui within 1.5x of the minimal app (median of the per-round ratios), no pane blanked.
- keypress to screen, p95, with 10,000 instances listed and 10 samples/s arriving: < 50 ms.
  The console runs in a pty with the Instances view listing 10,000 instances while a feeder
  publishes 10 host samples per second into the Run view; each `down` key is timed from
  its write to the pty until the redrawn row under the new cursor is read back. Also the
  console's CPU time per press (from /proc, its background measured over 3 s first and
  subtracted): what a press costs when the console has a core to itself.
- SQL result of 100,000 rows: ctrl+r to the grid and its row count on screen (the query,
  the Arrow fetch and the paint), and the paint alone (the grid mounted over the Arrow table
  until the next refresh has drawn it): paint < 0.2 s; and the console's CPU time over that paint.
  On a loaded machine the CPU figures are the ones to read: wall times there wait for a core.
- idle console CPU, `labtui` with nothing running (it samples the host every second): < 5% of a core.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))
from common import report  # noqa: E402

sys.path.insert(0, str(HERE.parent))
from pty_console import Pty  # noqa: E402

SIZE = (160, 50)
ROWS = 10_000
SQL_ROWS = 100_000
DOWN = b"\x1b[B"
CTRL_R = b"\x12"
F5 = b"\x1b[15~"
REFERENCE_ROWS = 100
#: The texts that say a console is useful: the Run view's hosts, run and instances panes, and the bare
#: app's three panes (the same shape from Textual alone).
LAB_PANES = ("CPU free", "no run yet", "total")
BARE_PANES = ("bare pane one", "bare pane two", "bare pane three")
BARE = """
from textual.app import App
from textual.containers import Horizontal
from textual.widgets import Footer, Header, Static


class Bare(App):
    CSS = ".pane { border: round $primary; width: 1fr; height: 10; }"

    def compose(self):
        yield Header()
        with Horizontal():
            for name in ("one", "two", "three"):
                yield Static("bare pane " + name + "\\nsecond line\\nthird line", classes="pane")
        yield Footer()


Bare().run()
"""
#: The issue's reference: the smallest Textual app that shows text (a header, one Static, a footer).
MINIMAL_PANES = ("minimal pane",)
MINIMAL = """
from textual.app import App
from textual.widgets import Footer, Header, Static


class Minimal(App):
    def compose(self):
        yield Header()
        yield Static("minimal pane")
        yield Footer()


Minimal().run()
"""
#: Sessions in the store the console opens for the paint (a real history: the Run view reads its newest).
HISTORY_SESSIONS = 100
#: After the panes show, the screen is read this long: a pane whose text goes away was blanked.
HOLD_S = 3.0
#: How often the tmux screen is read while waiting for the panes (seconds).
POLL_S = 0.005
TMUX = shutil.which("tmux")


def env_for(tmp: Path) -> dict[str, str]:
    return {"LABTUI_RUNTIME_DIR": str(tmp / "runtime"), "LABTUI_STATE_DIR": str(tmp / "state")}


# --- the console child for the latency benchmark -------------------------------------------------


def child(rows: int) -> None:
    """The console with `rows` listed instances and 10 samples/s, on this process's terminal."""
    from labtui.backends.base import Instance, Labels, open_backend
    from labtui.core.events import ResourceSample, SessionStarted, StepStarted
    from labtui.hosts import get_host
    from labtui.ui.app import LabApp
    from labtui.ui.instances_view import InstancesView
    from labtui.ui.model.inventory import Found

    backend = open_backend("process", get_host("local"))
    now = time.time()
    found = [Found(backend, Instance(Labels("20260101-000000-bench0", "background", f"ba{i:04d}"), f"lab-ba{i:04d}",
                                     "process", "local", "running", now - i), 1_000_000 + i, i % 7 == 0)
             for i in range(rows)]

    class Bench(LabApp):
        def on_mount(self) -> None:
            self.run_worker(self.setup(), group="bench")  # LabApp.on_mount loads the views after this

        async def setup(self) -> None:
            await self.views_loaded.wait()
            queue: asyncio.Queue = asyncio.Queue()
            self.run_view.model.reset("boot-scaling", "process", "local", 1, 101)
            queue.put_nowait(SessionStarted("20260101-000000-bench0", "boot-scaling", "scaling", "process", "local",
                                            {}, os.getpid()))
            queue.put_nowait(StepStarted("20260101-000000-bench0", 1, 0, 101, 0))
            self.run_view.follow(queue)
            view = self.query_one(InstancesView)
            view.show(found, ["process"], [])
            self.call_after_refresh(self.action_show_tab, "tab-instances")  # after LabApp.on_mount's focus
            self.run_worker(self.feed(queue), group="bench")

        async def feed(self, queue: asyncio.Queue) -> None:
            i = 0
            while True:
                await asyncio.sleep(0.1)
                i += 1
                queue.put_nowait(ResourceSample("local", 0.5 + (i % 10) / 40, 0.7, 1.0, 2**30, 0.4,
                                                session_id="20260101-000000-bench0", instances=i))

    Bench(Path(tempfile.gettempdir()) / "labtui-bench-unused.duckdb", idle_sampling=False).run()


def make_history_store(path: Path, sessions: int) -> None:
    """A store of `sessions` completed boot-scaling sessions (3 steps of 20 results each), one a minute."""
    from labtui.core.events import Result, SessionEnded, SessionStarted, StepEnded, StepStarted
    from labtui.store import record_events

    events: list[object] = []
    t0 = time.time() - sessions * 60
    for k in range(sessions):
        sid, start = f"20260101-{k:06d}-hist{k % 100:02d}", t0 + k * 60
        events.append(SessionStarted(sid, "boot-scaling", "scaling", "process", "local", {}, 1, ts=start))
        for step in range(3):
            events.append(StepStarted(sid, 1, step, 3, step * 10, ts=start + step))
            events += [Result(sid, 1, step, step * 10, "local", f"wo{i}", "boot", "boot_time", 0.001 + i * 1e-5,
                              "s", "lower", ts=start + step + 0.5) for i in range(20)]
            events.append(StepEnded(sid, 1, step, step * 10, ts=start + step + 0.9))
        events.append(SessionEnded(sid, "completed", ts=start + 4))
    record_events(path, events)  # type: ignore[arg-type]


def make_results_store(path: Path, rows: int) -> None:
    """A store with one session of `rows` boot results (the SQL benchmark's table)."""
    from labtui.core.events import Result, SessionEnded, SessionStarted, StepEnded, StepStarted
    from labtui.store import StoreWriter

    session, t0 = "20260101-000000-bench1", time.time() - 100
    writer = StoreWriter.open(path)
    writer.add(SessionStarted(session, "boot-scaling", "scaling", "process", "local", {}, 1, ts=t0))
    writer.add(StepStarted(session, 1, 0, 1, 0, ts=t0))
    for i in range(rows):
        writer.add(Result(session, 1, 0, 0, "local", f"wo{i}", "boot", "boot_time", 0.002 + (i % 97) * 1e-5, "s",
                          "lower", ts=t0 + i * 1e-3))
    writer.add(StepEnded(session, 1, 0, 0, ts=t0 + rows * 1e-3))
    writer.add(SessionEnded(session, "completed", ts=t0 + rows * 1e-3 + 1))
    writer.flush()
    writer.close()


def sql_child(db: Path, times: Path) -> None:
    """The console on the SQL editor holding `select * from results`.

    It appends to `times` the moment (time.monotonic, one clock for every process) each result
    is handed to the grid, and its CPU time so far; the parent reads when the grid shows up on the
    terminal, and the console's CPU time then (from /proc).
    """
    from textual.binding import Binding
    from textual.widgets import TextArea

    from labtui.ui.app import LabApp
    from labtui.ui.sql_tabs import QueryTab

    show = QueryTab.show_result

    async def timed_show(self, backend, truncated, cap, seconds=None) -> None:
        with times.open("a") as out:
            out.write(f"{time.monotonic()} {time.process_time()}\n")
        await show(self, backend, truncated, cap, seconds)

    QueryTab.show_result = timed_show

    queries = ["select * from results", f"select * from results limit {REFERENCE_ROWS}"]

    class Bench(LabApp):
        BINDINGS = [Binding("f5", "other_query", priority=True)]

        def on_mount(self) -> None:
            self.run_worker(self.setup(), group="bench")

        async def setup(self) -> None:
            await self.views_loaded.wait()
            self.action_sql()
            self.query_one("#sql", TextArea).text = queries[0]
            self.notify("sql bench ready")

        def action_other_query(self) -> None:
            """F5: the editor holds the other query (the full table, or the reference's 100 rows)."""
            queries.reverse()
            self.query_one("#sql", TextArea).text = queries[0]

    Bench(db, idle_sampling=False, sql_row_cap=SQL_ROWS).run()


# --- measurements -------------------------------------------------------------------------------------


def keypress_latency(presses: int, tmp: Path, rows: int) -> tuple[list[float], float]:
    """Per press, seconds from the key's write to the redrawn row; and the console's CPU seconds per press,
    its background (samples, drains) measured over an idle window first and subtracted."""
    term = Pty([sys.executable, str(Path(__file__).resolve()), "--child", str(rows)], env_for(tmp))
    try:
        term.wait_for(f"{rows} instance(s)".encode(), 120)
        term.drain(1.0)
        cpu, start = term.cpu_seconds(), time.perf_counter()
        term.drain(3.0)
        background = (term.cpu_seconds() - cpu) / (time.perf_counter() - start)
        latencies = []
        cpu, start = term.cpu_seconds(), time.perf_counter()
        for k in range(1, presses + 1):
            term.drain(0.05 + (k % 7) * 0.013)  # vary the phase against the 100 ms drain and the samples
            os.write(term.master, DOWN)
            latencies.append(term.wait_for(f"lab-ba{k:04d}".encode(), 5))
        term.drain(0.3)  # the last press's frame is written
        spent = term.cpu_seconds() - cpu - background * (time.perf_counter() - start)
        return latencies, max(spent, 0.0) / presses
    finally:
        term.close()


_WINDOWS = itertools.count()


class Tmux:
    """One tmux server of this benchmark's own (-L socket), one window of SIZE, read by capture-pane."""

    def __init__(self, tmp: Path) -> None:
        if TMUX is None:
            raise SystemExit("the pane benchmark needs tmux (apt-get install tmux)")
        # a socket per window: a server just told to end may still hold the last one
        self.socket, self.tmp = f"labtui-bench-{os.getpid()}-{next(_WINDOWS)}", tmp

    def tmux(self, *args: str) -> str:
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=10)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def start(self, argv: list[str], env: dict[str, str]) -> Path:
        """Start argv in a new window; returns the file where its launch script stamps the exec time."""
        stamp = self.tmp / "exec-time"
        stamp.unlink(missing_ok=True)
        script = self.tmp / "launch.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        script.write_text(f"unset COLUMNS LINES\n{exports}export TERM=xterm-256color\n"
                          f"date +%s.%N > {shlex.quote(str(stamp))}\nexec {shlex.join(argv)}\n")
        self.tmux("new-session", "-d", "-s", "bench", "-x", str(SIZE[0]), "-y", str(SIZE[1]), "-c", str(REPO),
                  "sh", str(script))
        return stamp

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "bench")

    def pid(self) -> int:
        """The window's process: the launch script's shell, then (the same pid) the Python it execs."""
        return int(self.tmux("display-message", "-p", "-t", "bench", "#{pane_pid}"))

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


def panes_time(argv: list[str], panes: tuple[str, ...], tmp: Path) -> tuple[float, float, int]:
    """Seconds from exec until every text of `panes` is on the screen; the process's CPU seconds by then (read
    as the screen is, so it can hold up to a poll's worth of what the process did after drawing them); and how
    many of the screens read over HOLD_S after that missed one of them (a pane drawn, then blanked)."""
    term = Tmux(tmp)
    try:
        stamp = term.start(argv, env_for(tmp))
        pid = term.pid()
        deadline = time.monotonic() + 60
        while True:
            screen = term.screen()
            seen = time.time()
            if all(text in screen for text in panes):
                cpu = cpu_seconds(pid)
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{panes} not all on screen within 60 s; the screen:\n{screen}")
            time.sleep(POLL_S)
        shown = seen - float(stamp.read_text())
        blanked, end = 0, time.monotonic() + HOLD_S
        while time.monotonic() < end:
            screen = term.screen()
            if not all(text in screen for text in panes):
                blanked += 1
                print(f"a pane was blanked; the screen:\n{screen}", file=sys.stderr)
            time.sleep(0.05)
        return shown, cpu, blanked
    finally:
        term.kill()


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def panes_rounds(tmp: Path, rounds: int) -> list[dict[str, tuple[float, float, int]]]:
    """Per round, the three started one after another in a rotating order: labtui on a store of
    HISTORY_SESSIONS sessions, the bare app of its shape and the minimal app, each (seconds from exec to its
    panes' text, CPU seconds by then, screens on which a pane it had drawn was missing)."""
    db = tmp / "history.duckdb"
    if not db.exists():
        make_history_store(db, HISTORY_SESSIONS)
    # labtui's bytecode written as pip writes it at install (Textual's is): under PYTHONDONTWRITEBYTECODE a
    # checkout's edited modules would otherwise be compiled again at every start
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "labtui")], check=True,
                   stdout=subprocess.DEVNULL)
    apps = [("lab", [sys.executable, "-m", "labtui", "--db", str(db)], LAB_PANES),
            ("bare", [sys.executable, "-c", BARE], BARE_PANES),
            ("minimal", [sys.executable, "-c", MINIMAL], MINIMAL_PANES)]
    out = []
    for k in range(rounds):
        order = apps[k % 3:] + apps[:k % 3]  # none always goes first, after another's exit
        out.append({name: panes_time(argv, panes, tmp) for name, argv, panes in order})
    return out


def spread(values: list[float]) -> str:
    """Median, then the range."""
    return f"median {statistics.median(values):.3f} s (min {min(values):.3f}, max {max(values):.3f}, n={len(values)})"


def sql_paint(tmp: Path, runs: int) -> tuple[list[float], list[float], list[float], list[float]]:
    """Per run, in seconds: ctrl+r to the 100,000-row grid on screen; from the grid's hand-over to it on
    screen; the same for a 100-row result (the reference: the grid draws only the rows on screen); and the
    console's CPU time over the 100,000-row paint (what it takes when it has a core to itself)."""
    db, times = tmp / "sql.duckdb", tmp / "paint-times"
    if not db.exists():
        make_results_store(db, SQL_ROWS)
    times.unlink(missing_ok=True)
    term = Pty([sys.executable, str(Path(__file__).resolve()), "--sql-child", str(db), str(times)], env_for(tmp))
    on_screen, seen, cpu = [], [], []
    try:
        term.wait_for(b"sql bench ready", 60)
        term.drain(1.0)
        for _k in range(runs):
            for rows in (SQL_ROWS, REFERENCE_ROWS):  # alternately, so that load drifts fall on both
                start = time.perf_counter()
                os.write(term.master, CTRL_R)
                term.wait_for(f"{rows:,} rows · row cap".encode(), 30)
                seen.append(time.monotonic())
                cpu.append(term.cpu_seconds())
                on_screen.append(time.perf_counter() - start)
                term.drain(0.5)
                os.write(term.master, F5)
                term.drain(0.2)
        handed = [tuple(map(float, line.split())) for line in times.read_text().splitlines()]
        paints = [s - h[0] for s, h in zip(seen, handed)]
        paint_cpu = [c - h[1] for c, h in zip(cpu, handed)]
        return on_screen[::2], paints[::2], paints[1::2], paint_cpu[::2]
    finally:
        term.close()


def idle_cpu(seconds: float, tmp: Path) -> float:
    term = Pty([sys.executable, "-m", "labtui", "--db", str(tmp / "lab.duckdb")], env_for(tmp))
    try:
        term.wait_for(b"no run yet", 30)
        term.drain(2.0)
        before, start = term.cpu_seconds(), time.perf_counter()
        term.drain(seconds)
        return (term.cpu_seconds() - before) / (time.perf_counter() - start)
    finally:
        term.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer presses, shorter idle window")
    parser.add_argument("--only", choices=("paint", "keys", "sql", "idle"), action="append",
                        help="run only these measurements (repeatable); paint: the Run view's panes")
    parser.add_argument("--child", type=int, metavar="ROWS", help=argparse.SUPPRESS)
    parser.add_argument("--sql-child", nargs=2, metavar=("DB", "TIMES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return 0
    if args.sql_child:
        sql_child(Path(args.sql_child[0]), Path(args.sql_child[1]))
        return 0
    only = set(args.only or ("paint", "keys", "sql", "idle"))
    with tempfile.TemporaryDirectory(prefix="labtui-bench-") as name:
        tmp = Path(name)
        if "paint" in only:
            rounds = panes_rounds(tmp, 3 if args.quick else 9)
            for name, what in (("lab", f"labtui ({HISTORY_SESSIONS} sessions in its store)"),
                               ("bare", "bare Textual app of its shape"), ("minimal", "minimal Textual app")):
                print(f"{what}, exec to its panes' text: {spread([r[name][0] for r in rounds])}")
            for reference, target in (("minimal", 1.5), ("bare", 1.5)):
                ratios = [r["lab"][0] / r[reference][0] for r in rounds]
                ratio = statistics.median(ratios)
                report(f"labtui Run view panes vs the {reference} app (median of per-round ratios)", ratio, "x",
                       f"target {target}x, ratios {min(ratios):.2f}-{max(ratios):.2f}", ratio / target, ratio <= target)
            print(f"labtui, CPU time by then: {spread([r['lab'][1] for r in rounds])}")
            print(f"minimal Textual, CPU time by then: {spread([r['minimal'][1] for r in rounds])}")
            cpu_ratio = statistics.median(r["lab"][1] / r["minimal"][1] for r in rounds if r["minimal"][1] > 0)
            report("labtui CPU to its panes vs the minimal app's (median of per-round ratios; a loaded machine "
                   "stretches wall times, not this)", cpu_ratio, "x", "no target")
            blanked = sum(r["lab"][2] for r in rounds)
            report(f"screens missing a drawn labtui pane over {HOLD_S:g} s after the panes showed", blanked, "",
                   "target 0", None, blanked == 0)
        if "keys" in only:
            latencies, per_press = keypress_latency(30 if args.quick else 120, tmp, ROWS)
            p95 = statistics.quantiles(latencies, n=20)[-1] * 1000
            report(f"console keypress to screen p95 ({ROWS:,} instances, 10 samples/s)", p95, "ms", "target 50 ms",
                   p95 / 50, p95 < 50)
            report("console keypress to screen median", statistics.median(latencies) * 1000, "ms", "target 50 ms",
                   statistics.median(latencies) * 1000 / 50)
            report("console CPU per keypress, background subtracted (mean)", per_press * 1000, "ms", "target 50 ms",
                   per_press * 1000 / 50)
        if "sql" in only:
            on_screen, paints, reference, paint_cpu = sql_paint(tmp, 3 if args.quick else 9)
            paint = statistics.median(paints)
            report(f"SQL grid paint of {SQL_ROWS:,} rows (measured Arrow table handed to the grid, to drawn), median",
                   paint, "s",
                   "target 0.2 s", paint / 0.2, paint < 0.2)
            report(f"... the same paint of a {REFERENCE_ROWS}-row result, median", statistics.median(reference), "s",
                   f"the {SQL_ROWS:,}-row paint", statistics.median(reference) / paint)
            report("... the console's CPU time over that paint, median", statistics.median(paint_cpu), "s", "target 0.2 s",
                   statistics.median(paint_cpu) / 0.2)
            report(f"SQL ctrl+r to {SQL_ROWS:,} rows on screen (query, fetch, paint), median",
                   statistics.median(on_screen), "s", "no target")
        if "idle" in only:
            share = idle_cpu(5.0 if args.quick else 20.0, tmp) * 100
            report("console idle CPU", share, "% of a core", "target 5%", share / 5, share < 5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
