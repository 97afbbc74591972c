"""The signals that stop `labtui run`, and what they do before the run's event loop takes them over.

From the first line of the command until the run's loop handles them (``LabRun.signals``), nothing
has been created: INT, TERM and HUP then raise StopSignal, which ends the command at once with
128 + the signal's number.  They do so even when the command started with one of them ignored: a
script's ``labtui run ... &`` starts with SIGINT ignored (POSIX shells ignore INT and QUIT in the
background jobs of a non-interactive shell), and Python and asyncio keep an ignored SIGINT ignored.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: The signals that end a run in order; the console's ctrl+c and a closed terminal arrive as these.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: A second one of these during teardown forces it.
FORCE_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopSignal(KeyboardInterrupt):
    """A stop signal that arrived before the run took signals over: nothing was created.

    A KeyboardInterrupt, so that asyncio lets it through its callbacks and tasks as it does Ctrl-C.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_status(self) -> int:
        """128 + the signal's number, as a shell reports a command a signal ended (130, 143, 129)."""
        return 128 + self.signum


def _raise(signum: int, frame: FrameType | None) -> None:
    raise StopSignal(signum)


@contextlib.contextmanager
def stop_at_once() -> Iterator[None]:
    """In the block, INT, TERM and HUP raise StopSignal, whatever was inherited; the handlers before it are
    restored at its end.  Outside the main thread (where Python delivers signals) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise)
    try:
        yield
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
