"""Mutation testing of labtui's core with cosmic-ray, one target module at a time.

Each target names a source file (or the lines of one function in it) and the
fast tests that guard it.  The committed tree (``git archive HEAD``) is copied
to a work dir first, so the mutants never touch a working tree someone edits.
For every target: ``cosmic-ray init``, the operator filter (a core set, see
OPERATORS), the line filter where only one function is in scope, ``cosmic-ray
exec``, then a summary: mutants, killed, survived, and each survivor's diff.

    python tests/mutation/run.py                 # every target
    python tests/mutation/run.py stats cleanup   # some
    python tests/mutation/run.py --list
    python tests/mutation/run.py --sample 40 --budget 900 stats-core   # a seeded sample, cut at 15 min

Needs cosmic-ray (``pip install cosmic-ray``).  docs/testing.md has the figures
of the last run and why each survivor left is equivalent or harmless.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: The operators applied: one plausible slip per construct (a flipped or off-by-one comparison, a swapped
#: arithmetic operator, a dropped or added `not`, swapped and/or, a changed constant, a loop that never runs,
#: an exception class replaced).  The other 150-odd operator variants (x << y for x + y, and so on) mostly add
#: mutants any test kills and that no one would write by mistake.
OPERATORS = (
    r"ReplaceComparisonOperator_(Eq_NotEq|NotEq_Eq|Lt_LtE|LtE_Lt|Gt_GtE|GtE_Gt|Is_IsNot|IsNot_Is)",
    r"ReplaceBinaryOperator_(Add_Sub|Sub_Add|Mul_Div|Div_Mul)",
    r"ReplaceUnaryOperator_(USub_UAdd|Delete_Not)",
    r"AddNot", r"ReplaceTrueWithFalse", r"ReplaceFalseWithTrue", r"ReplaceAndWithOr", r"ReplaceOrWithAnd",
    r"ReplaceBreakWithContinue", r"ExceptionReplacer", r"NumberReplacer", r"ZeroIterationForLoop",
)


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    #: pytest arguments: fast, in-process tests of this module
    tests: tuple[str, ...]
    #: only mutate these functions (qualified names, Class.method); all of the file when empty
    functions: tuple[str, ...] = field(default=())
    #: seconds one test run of a mutant may take before it counts as killed (a hang)
    timeout: float = 120.0


RECONCILE_UNIT = (
    "tests/e2e/test_reconcile.py::test_reconcile_judges_a_session_only_when_its_lock_is_free",
    "tests/e2e/test_reconcile.py::test_reconcile_leaves_an_ended_session_alone_while_its_lock_is_held",
)

#: the journal's and the feed's in-process tests (not the feeder's, which wait on timers and a held store)
JOURNAL_UNIT = ("tests/unit/test_journal.py", "-k", "not feeder and not cannot_take_a_sample")

#: the parsers, one target per module; their tests read real outputs of the tools (tests/data/parsers)
PARSERS = ("common", "probe", "wrk", "redis_benchmark", "stream", "unixbench", "aim9", "lmbench", "sysbench",
           "stress_ng")
PARSER_TESTS = ("tests/unit/test_parsers.py", "tests/unit/test_edges.py::test_every_wrk_time_suffix_is_read_in_ms",
                "tests/unit/test_edges.py::test_every_wrk_size_suffix_is_read_in_mib",
                "tests/unit/test_edges.py::test_every_stress_ng_duration_unit_is_read_in_seconds")

TARGETS = {t.name: t for t in (
    # labtui.core.stats, one target per module (the bootstraps' tests take seconds each)
    *(Target(f"stats-{name}", f"labtui/core/stats/{name}.py",
             ("tests/unit/test_stats.py", "tests/unit/test_stats_edges.py", "tests/unit/test_trust.py",
              "tests/unit/test_stats_many.py", "tests/unit/test_verdict.py", "tests/unit/test_aggregates.py"))
      for name in ("describe", "intervals", "trust", "aggregate", "trend", "multiple")),
    # the figures table every face draws: trust columns added to slowdown rows, one interval policy
    Target("figures", "labtui/figures/table.py", ("tests/unit/test_figures_table.py", "tests/unit/test_trust.py")),
    Target("reconcile", "labtui/lifecycle/reconcile.py",
           (*RECONCILE_UNIT, "tests/unit/test_cleanup_selection.py")),
    Target("reconcile-selection", "labtui/lifecycle/reconcile.py", (*RECONCILE_UNIT, "tests/unit/test_cleanup_selection.py"),
           functions=("StoreView.ended", "reconcile", "_active", "_row_finding")),
    Target("cleanup", "labtui/lifecycle/cleanup.py",
           ("tests/unit/test_cleanup_selection.py", "tests/unit/test_cleanup_store_busy.py")),
    Target("suite-validator", "labtui/suites/model.py",
           ("tests/unit/test_suites.py", "tests/unit/test_suite_model.py", "-k", "not run_with and not suites_command")),
    # the loader's checks of values, keys and overrides (the tests that start no run)
    Target("suite-keys", "labtui/suites/key_types.py",
           ("tests/unit/test_suites.py", "-k", "not run_with and not suites_command"),
           functions=("is_int", "is_number", "is_cpu_list", "printable")),
    Target("suite-loader", "labtui/suites/loader.py",
           ("tests/unit/test_suites.py", "-k", "not run_with and not suites_command"),
           functions=("_value", "_check_kind_tables", "_build")),
    # each kind's own checks across keys (creation's scale and worker, fairshare's weights, caps and timeout)
    *(Target(f"suite-kind-{name}", f"labtui/suites/kinds/{name}.py",
             ("tests/unit/test_suites.py", "tests/unit/test_suite_model.py", "-k", "not run_with and not suites_command"))
      for name in ("creation", "fairshare")),
    Target("suite-overrides", "labtui/suites/overrides.py",
           ("tests/unit/test_suites.py", "-k", "not run_with and not suites_command"),
           functions=("parse_override", "apply_overrides")),
    # the store's flush (buffer, one transaction, when to flush) and its intent journal (the instance rows
    # opened before a create and closed after a destroy)
    Target("store-writer", "labtui/store/writer.py", ("tests/unit/test_store.py",),
           functions=("StoreWriter.add", "StoreWriter.flush", "StoreWriter._write", "StoreWriter._upsert",
                      "StoreWriter._session_started", "StoreWriter._session_ended", "StoreWriter._step_started",
                      "StoreWriter._step_ended", "StoreWriter._instance_creating", "StoreWriter._instance_ready",
                      "StoreWriter._instance_destroyed", "StoreWriter._instance_destroying")),
    # a session's journal: encoding, appends, reading back, adoption, deletion, and what the journals tell
    # reconcile and cleanup (pending); the feeder tests (a held store, a timer) are left out: seconds each
    Target("store-journal", "labtui/store/journal.py", JOURNAL_UNIT),
    # moving journals into the store exactly once (watermarks, batches, sync of finished journals)
    Target("store-feed", "labtui/store/feed.py", JOURNAL_UNIT),
    # crash marking: this machine's running sessions whose running-lock nobody holds
    Target("store-crashes", "labtui/store/crashes.py",
           ("tests/unit/test_store.py", "tests/unit/test_journal.py", "-k", "crashed or killed_writer or round_trip")),
    *(Target(f"parser-{name}", f"labtui/parsers/{name}.py", PARSER_TESTS) for name in PARSERS),
    # the engine's measuring: the adaptive-runs loop, the worker's spec, the backend check, the CV, one run's results
    Target("engine-worker-runs", "labtui/engine/worker_runs.py",
           ("tests/unit/test_adaptive_repetitions.py", "tests/unit/test_measure.py",
            "tests/backends/test_real_tools.py::test_every_real_tool_output_has_a_parser_that_names_the_tool",
            "tests/backends/test_real_tools.py::test_a_backend_that_cannot_run_the_tool_is_refused_before_anything_starts"),
           functions=("measure_worker", "worker_spec", "check_worker_runs", "worst_cv", "record_run")),
    Target("docker-label-filter", "plugins/docker/__init__.py",
           ("tests/backends/test_docker_backend.py::test_the_listing_asks_the_engine_for_lab_labels_and_keeps_only_fully_"
            "labelled_containers",), functions=("DockerBackend.list",)),
    Target("docker-labels", "plugins/docker/containers.py",
           ("tests/backends/test_docker_backend.py::test_the_listing_asks_the_engine_for_lab_labels_and_keeps_only_fully_"
            "labelled_containers",), functions=("labels_of", "lab_labels")),
)}


def cosmic(tool: str) -> str:
    """The path of a cosmic-ray console script beside this Python (a pyenv shim may not know it yet)."""
    beside = Path(sys.executable).parent / tool
    return str(beside) if beside.exists() else tool


def function_lines(source: Path, names: tuple[str, ...]) -> list[str]:
    """'first-last' line ranges of the named functions (Class.method or function)."""
    tree = ast.parse(source.read_text())
    found: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found[f"{node.name}.{item.name}"] = item
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found[node.name] = node
    missing = [n for n in names if n not in found]
    if missing:
        raise SystemExit(f"{source}: no function {', '.join(missing)}")
    return [f"{found[n].lineno}-{found[n].end_lineno}" for n in names]


def toml_str(value: str) -> str:
    return json.dumps(value)


def write_config(target: Target, work: Path, cfg: Path, server: Path) -> None:
    tests = " ".join(toml_quote_arg(a) for a in target.tests)
    # through the fork server (forkserver.py): scipy and friends are imported once, not once per mutant
    command = (f"{sys.executable} tests/mutation/forkserver.py run {server} {max(1.0, target.timeout - 5)} -- "
               f"-x -q -p no:cacheprovider -p no:randomly {tests}")
    lines = [
        "[cosmic-ray]",
        f"module-path = {toml_str(target.path)}",
        f"timeout = {target.timeout}",
        "excluded-modules = []",
        f"test-command = {toml_str(command)}",
        "",
        "[cosmic-ray.distributor]",
        'name = "local"',
        "",
        "[cosmic-ray.filters.operators-filter]",
        # excluded: every core operator but those listed in OPERATORS
        f"exclude-operators = [{toml_str('core/(?!(' + '|'.join(OPERATORS) + ')$)')}]",
    ]
    if target.functions:
        ranges = function_lines(work / target.path, target.functions)
        lines += ["", "[cosmic-ray.filters.line-filter.lines]", f"{toml_str(target.path)} = {json.dumps(ranges)}"]
    cfg.write_text("\n".join(lines) + "\n")


def toml_quote_arg(arg: str) -> str:
    return f"'{arg}'" if " " in arg else arg


def prepare(work: Path) -> None:
    """The committed tree, with the tests and this script as they are in the working tree."""
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(work)], input=archive, check=True)
    (work / COMMIT_FILE).write_text(commit + "\n")
    print(f"mutating the tree of {commit[:10]}", flush=True)
    shutil.copytree(ROOT / "tests", work / "tests", dirs_exist_ok=True)


@dataclass(frozen=True)
class Limits:
    """How much of a target to run: a seeded random sample of its mutants, and a time budget for the run."""

    #: run this many of the mutants that pass the filters (all when None), chosen with the target's name as seed
    sample: int | None = None
    #: seconds `cosmic-ray exec` may take; the mutants not reached by then stay pending and are reported as such
    budget: float | None = None


NOT_SAMPLED = "Not in the sample"
#: the commit the copy of the tree was taken from, written into the copy
COMMIT_FILE = ".mutation-commit"


def keep_sample(session: Path, size: int, seed: str) -> None:
    """Mark all but a seeded random `size` of the pending mutants skipped: an unbiased estimate of the score
    (a cut by time alone runs the top of the file only)."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    with use_db(str(session), WorkDB.Mode.open) as db:
        # in the order of the mutations, not of their job ids (fresh uuids at each init): a rerun on the same
        # file draws the same mutants
        items = sorted(db.pending_work_items, key=lambda item: [(m.start_pos, m.operator_name, m.occurrence)
                                                                 for m in item.mutations])
        if len(items) <= size:
            return
        kept = {item.job_id for item in random.Random(seed).sample(items, size)}
        for job in (item.job_id for item in items):
            if job not in kept:
                db.set_result(job, WorkResult(output=NOT_SAMPLED, worker_outcome=WorkerOutcome.SKIPPED))


def restore(work: Path, path: str) -> None:
    """Put the committed `path` back in the copy of the tree (the commit `prepare` copied)."""
    commit = (work / COMMIT_FILE).read_text().strip()
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"], check=True, capture_output=True)
    (work / path).write_bytes(source.stdout)


def run_target(target: Target, work: Path, out: Path, limits: Limits = Limits()) -> dict:
    cfg, session, sock = out / f"{target.name}.toml", out / f"{target.name}.sqlite", out / f"{target.name}.sock"
    session.unlink(missing_ok=True)
    sock.unlink(missing_ok=True)
    write_config(target, work, cfg, sock)
    env = {**os.environ, "LABTUI_RUNTIME_DIR": str(out / "runtime"), "LABTUI_LOCK_DIR": str(out / "locks")}
    started = time.monotonic()
    server = subprocess.Popen([sys.executable, "tests/mutation/forkserver.py", "serve", str(sock)], cwd=work, env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready", "the fork server did not start"
        return _run_target(target, work, cfg, session, env, started, limits)
    finally:
        server.kill()
        server.wait()
        sock.unlink(missing_ok=True)


def _run_target(target: Target, work: Path, cfg: Path, session: Path, env: dict[str, str], started: float,
                limits: Limits) -> dict:
    def step(*argv: str) -> None:
        subprocess.run(argv, cwd=work, env=env, check=True)

    step(cosmic("cosmic-ray"), "init", str(cfg), str(session))
    step(cosmic("cr-filter-operators"), str(session), str(cfg))
    if target.functions:
        step(cosmic("cr-filter-lines"), "--config", str(cfg), str(session))
    if limits.sample is not None:
        keep_sample(session, limits.sample, target.name)
    base = subprocess.run(f"{json.loads(toml_cmd(cfg))}", shell=True, cwd=work, env=env, capture_output=True, text=True)
    if base.returncode != 0:
        log = Path(str(cfg.with_suffix(".sock")) + ".last.log")
        shown = log.read_text()[-3000:] if log.exists() else ""
        raise SystemExit(f"{target.name}: the tests fail without any mutation:\n{shown}{base.stdout[-2000:]}"
                         f"{base.stderr[-2000:]}")
    execute = subprocess.Popen([cosmic("cosmic-ray"), "exec", str(cfg), str(session)], cwd=work, env=env,
                               start_new_session=True)
    try:
        execute.wait(timeout=limits.budget)
    except subprocess.TimeoutExpired:  # the budget is spent: stop the mutant under test and cosmic-ray with it
        os.killpg(execute.pid, 9)
        execute.wait()
        restore(work, target.path)  # cosmic-ray may have been cut with a mutant in the file
    if execute.returncode not in (0, -9):
        raise SystemExit(f"{target.name}: cosmic-ray exec failed with status {execute.returncode}")
    summary = summarize(target, session)
    summary["seconds"] = round(time.monotonic() - started)
    return summary


def toml_cmd(cfg: Path) -> str:
    for line in cfg.read_text().splitlines():
        if line.startswith("test-command = "):
            return line.split(" = ", 1)[1]
    raise AssertionError(cfg)


def summarize(target: Target, session: Path) -> dict:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    counts = {"mutants": 0, "killed": 0, "survived": 0, "incompetent": 0, "skipped": 0, "not_sampled": 0}
    survivors = []
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, result in db.completed_work_items:
            if result.worker_outcome == WorkerOutcome.SKIPPED:
                counts["not_sampled" if result.output == NOT_SAMPLED else "skipped"] += 1
                continue
            counts["mutants"] += 1
            if result.test_outcome == TestOutcome.SURVIVED:
                counts["survived"] += 1
                m = item.mutations[0]
                survivors.append({"line": m.start_pos[0], "operator": m.operator_name.removeprefix("core/"),
                                  "occurrence": m.occurrence, "diff": result.diff})
            elif result.test_outcome == TestOutcome.INCOMPETENT:
                counts["incompetent"] += 1
            else:
                counts["killed"] += 1
        pending = sum(1 for _ in db.pending_work_items)
    return {"target": target.name, "path": target.path, "functions": list(target.functions), **counts,
            "pending": pending, "survivors": sorted(survivors, key=lambda s: s["line"])}


def report(summary: dict) -> str:
    scored = summary["mutants"] - summary["incompetent"]
    score = 100.0 * (scored - summary["survived"]) / scored if scored else 100.0
    where = summary["path"] + (f" ({', '.join(summary['functions'])})" if summary["functions"] else "")
    left = summary["pending"] + summary["not_sampled"]
    of = f" of {summary['mutants'] + left} ({summary['not_sampled']} not sampled, {summary['pending']} not reached)"
    head = (f"{summary['target']}: {where}: {summary['mutants']}{of if left else ''} mutants, {summary['killed']} killed, "
            f"{summary['survived']} survived, {summary['incompetent']} incompetent, score {score:.1f}% "
            f"in {summary.get('seconds', '?')} s")
    body = [f"  line {s['line']}: {s['operator']}\n" + "".join(f"      {d}\n" for d in s["diff"].splitlines()
                                                             if d.startswith(("+", "-")) and not d.startswith(("+++", "---")))
            for s in summary["survivors"]]
    return "\n".join([head, *body])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="target names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the targets and their tests")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "labtui-mutation",
                        help="where the copy of the tree and the sessions go")
    parser.add_argument("--sample", type=int, metavar="N",
                        help="run a seeded random N of each target's mutants (all by default)")
    parser.add_argument("--budget", type=float, metavar="SECONDS",
                        help="stop each target's run after this long; mutants not reached are reported as such")
    args = parser.parse_args()
    if args.list:
        for t in TARGETS.values():
            print(f"{t.name}: {t.path} {' '.join(t.functions)} <- {' '.join(t.tests)}")
        return 0
    unknown = [n for n in args.targets if n not in TARGETS]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(TARGETS)}")
    tree, out = args.work / "tree", args.work / "sessions"
    prepare(tree)
    out.mkdir(parents=True, exist_ok=True)
    summaries = []
    for name in args.targets or list(TARGETS):
        summary = run_target(TARGETS[name], tree, out, Limits(args.sample, args.budget))
        (out / f"{name}.json").write_text(json.dumps(summary, indent=1))
        print(report(summary), flush=True)
        summaries.append(summary)
    return 1 if any(s["survived"] for s in summaries) else 0


if __name__ == "__main__":
    sys.exit(main())
