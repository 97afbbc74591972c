"""`labtui` as a user runs it: the CLI in a subprocess of this checkout, its output captured as text."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def labtui(*args: str, env: dict[str, str] | None = None, timeout: float = 300, check: bool = False,
           cwd: Path | str | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run `python -m labtui ARGS` (in `cwd`, with `input` on its stdin); with `check`, a non-zero exit fails the
    test showing what it printed."""
    proc = subprocess.run([sys.executable, "-m", "labtui", *args], env=env, cwd=cwd, input=input, capture_output=True,
                          text=True, timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError(f"labtui {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc
