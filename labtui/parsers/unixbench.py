"""UnixBench 5.1.x (byte-unixbench ``Run``): per-test scores and index values.

Reads every ``Benchmark Run`` section of a report, one per parallel-copy count::

    2 CPUs in system; running 2 parallel copies of tests

    Execl Throughput                               2053.5 lps   (30.0 s, 2 samples)
    ...
    System Benchmarks Index Values               BASELINE       RESULT    INDEX
    Execl Throughput                                 43.0       2053.5    477.6
    ...
    System Benchmarks Index Score                                         407.4

A run of selected tests (``./Run syscall``) prints a ``System Benchmarks
Partial Index`` and an ``Index Score (Partial Only)``, read the same way.
Metric names carry the copy count: ``execl_throughput_p1`` (the score, in the
test's unit), ``execl_throughput_index_p1`` and ``index_score_p1``.  Every
UnixBench figure is a rate or an index: higher is better.
"""

from __future__ import annotations

import re

from labtui.parsers.common import ParseError, Reading, number

_RUN = re.compile(r"running (\d+) parallel cop(?:y|ies) of tests")
_SCORE = re.compile(r"^(\S.*?)\s+([\d.]+) (lps|lpm|KBps|MWIPS|MFLOPS)\s+\(\s*[\d.]+ s, \d+ samples?\)\s*$", re.M)
_INDEX_HEADER = re.compile(r"^System Benchmarks (?:Index Values|Partial Index)\s+BASELINE", re.M)
_INDEX_ROW = re.compile(r"^(\S.*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$")
_INDEX_SCORE = re.compile(r"^System Benchmarks Index Score(?: \(Partial Only\))?\s+([\d.]+)\s*$", re.M)


def unixbench_slug(name: str) -> str:
    """'Shell Scripts (8 concurrent)' -> 'shell_scripts_8_concurrent'; the metric stem of a test."""
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def parse_unixbench(text: str) -> list[Reading]:
    """Scores, index values and the index score of every run (1 copy, N copies) in a report."""
    starts = [(m.start(), int(m[1])) for m in _RUN.finditer(text)]
    if not starts:
        raise ParseError("UnixBench: no 'running N parallel copies of tests' line")
    readings: list[Reading] = []
    for i, (start, copies) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        readings += _section(text[start:end], copies)
    return readings


def _section(section: str, copies: int) -> list[Reading]:
    suffix = f"_p{copies}"
    header = _INDEX_HEADER.search(section)
    scores_part, index_part = (section[: header.start()], section[header.end() :]) if header else (section, "")
    readings = [
        Reading("unixbench", unixbench_slug(name) + suffix, number(value, name), unit, "higher")
        for name, value, unit in _SCORE.findall(scores_part)
    ]
    if not readings:
        raise ParseError(f"UnixBench: the run with {copies} parallel copies has no test score lines")
    for line in index_part.splitlines():
        if row := _INDEX_ROW.match(line):
            name = row[1]
            readings.append(Reading("unixbench", unixbench_slug(name) + "_index" + suffix, number(row[4], f"{name} index"),
                                    "index", "higher"))
    if score := _INDEX_SCORE.search(index_part):
        readings.append(Reading("unixbench", "index_score" + suffix, number(score[1], "Index Score"), "index", "higher"))
    return readings
