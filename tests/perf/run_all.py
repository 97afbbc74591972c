"""Run every benchmark in tests/perf/ and print their figures.

    python tests/perf/run_all.py [--quick]

Each benchmark prints lines `name: value unit (ratio against its reference)`;
a line ending in MISSED names a floor that was not met.  Exit status 1 when
any floor was missed or a benchmark failed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    flags = [a for a in sys.argv[1:] if a == "--quick"]
    failed = False
    for bench in sorted(HERE.glob("bench_*.py")):
        print(f"# {bench.name}", flush=True)
        done = subprocess.run([sys.executable, str(bench), *flags], capture_output=True, text=True)
        sys.stdout.write(done.stdout)
        if done.returncode != 0:
            failed = True
            print(f"{bench.name} failed (exit {done.returncode}):\n{done.stderr[-2000:]}", flush=True)
        failed |= "MISSED" in done.stdout
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
