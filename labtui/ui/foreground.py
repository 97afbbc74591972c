"""Running a program on the console's terminal as its foreground job, as a shell runs one (no Textual).

The Instances view's shell (`s`) runs ``docker exec -it``, ``ssh -t``, ``zlogin`` or ``xl console`` this way
while the app is suspended: in a process group of its own that holds the terminal, so a ctrl+c, ctrl+\\ or
ctrl+z typed before it takes the terminal raw signals it alone, never the console (whose run takes SIGINT
for an abort).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Sequence


def run_in_foreground(argv: Sequence[str]) -> int:
    """Run argv (found on PATH) as the terminal's foreground job until it exits; its exit status (-N: signal N).

    OSError when it cannot be started.  Where standard input is no terminal it simply runs and is waited for.
    """
    tty = sys.__stdin__.fileno() if sys.__stdin__ is not None else -1
    owner = os.tcgetpgrp(tty) if tty >= 0 and os.isatty(tty) else None
    pid = os.posix_spawnp(argv[0], list(argv), os.environ, setpgroup=0)
    # the console gives the terminal back from the background, which SIGTTOU would stop: ignored meanwhile
    # (after the spawn, so the job does not inherit the ignored signal)
    ttou = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    try:
        if owner is not None:
            os.tcsetpgrp(tty, pid)
        while True:
            # a job that touched the terminal before it held it was stopped (SIGTTOU, SIGTTIN): go on
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGCONT)
            _, status = os.waitpid(pid, os.WUNTRACED)
            if not os.WIFSTOPPED(status):
                return os.waitstatus_to_exitcode(status)
    finally:
        if owner is not None:
            os.tcsetpgrp(tty, owner)
        signal.signal(signal.SIGTTOU, ttou)
