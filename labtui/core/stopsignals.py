"""The signals that stop `labtui run`, and what they do before the run's event loop takes them over.

From the first line of the command until the run's loop handles them (``LabRun.signals``), nothing
has been created: INT, TERM and HUP are then noted, and the command ends at the next point where
nothing is half done (``raise_if_stopped``: after the imports, the suite, the hosts and backends)
with StopSignal, 128 + the signal's number, or at the latest NOTED_EXIT_S after the signal.  They
are noted even when the command started with one of them ignored: a script's ``labtui run ... &``
starts with SIGINT ignored (POSIX shells ignore INT in the background jobs of a non-interactive
shell), and Python and asyncio keep an ignored SIGINT ignored.  SIGHUP is the exception: a command
started with it ignored (``nohup labtui run ...``) was asked to outlive its terminal, and keeps it
ignored throughout (``stop_signals()``).  Noted, not raised where they land:
an exception raised inside the import of a native module (seen: SIGTERM amid pyarrow's or polars')
can abort the interpreter (SIGABRT) instead of unwinding.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: The signals that end a run in order; the console's ctrl+c and a closed terminal arrive as these.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: A second one of these during teardown forces it.
FORCE_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: Whether labtui started with SIGHUP ignored (nohup), read when this module is first imported: at main's
#: first line, before any handler of labtui's own.
_HANGUP_IGNORED = signal.getsignal(signal.SIGHUP) == signal.SIG_IGN


def stop_signals() -> tuple[signal.Signals, ...]:
    """The stop signals this process acts on: STOP_SIGNALS, less SIGHUP when it started ignored (nohup)."""
    return tuple(s for s in STOP_SIGNALS if not (s == signal.SIGHUP and _HANGUP_IGNORED))


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


#: A noted stop signal that nothing acted on (an import that takes long on a loaded machine) ends the
#: command this long after it came, at once: nothing has been created before the run acts on signals.
NOTED_EXIT_S = 3.0

#: The first stop signal noted in the current stop_signals_noted block, and the timer of its exit.
_noted: list[int] = []
_exits: list[threading.Timer] = []


def _note(signum: int, frame: FrameType | None) -> None:
    if _noted:
        return
    _noted.append(signum)
    timer = threading.Timer(NOTED_EXIT_S, _exit_now, (signum,))
    timer.daemon = True
    timer.start()
    _exits.append(timer)


def _exit_now(signum: int) -> None:
    with contextlib.suppress(OSError):
        os.write(2, f"stopped by {signal.Signals(signum).name}\n".encode())
    os._exit(128 + signum)


def take_noted_stop_signal() -> int | None:
    """The stop signal noted since the stop_signals_noted block began, if one was; the caller acts on it
    (its timed exit is called off)."""
    for timer in _exits:
        timer.cancel()
    return _noted[0] if _noted else None


def raise_if_stopped() -> None:
    """Raise StopSignal for the stop signal noted since the block began, if one was; from then on the
    command ignores a repeat until it exits, as a run stopped by a signal does."""
    signum = take_noted_stop_signal()
    if signum is None:
        return
    for each in stop_signals():
        if signal.getsignal(each) is _note:
            signal.signal(each, signal.SIG_IGN)
    raise StopSignal(signum)


@contextlib.contextmanager
def stop_signals_noted() -> Iterator[None]:
    """In the block, INT, TERM and HUP (stop_signals) are noted for raise_if_stopped, whatever else was inherited.

    At its end the handlers before it come back where the block's own is still in place: a run that
    took the signals over keeps its choice (a run stopped by a signal ignores a repeat until it exits).
    Outside the main thread (where Python delivers signals) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {signum: signal.getsignal(signum) for signum in stop_signals()}
    _noted.clear()
    for signum in stop_signals():
        signal.signal(signum, _note)
    try:
        yield
    finally:
        take_noted_stop_signal()
        _noted.clear()
        _exits.clear()
        for signum, handler in before.items():
            if signal.getsignal(signum) is _note:
                signal.signal(signum, handler)
