"""Ctrl-C in a command other than `run` ends it with "interrupted" and 130, never a traceback: also when it lands
inside a native module's import, which turns it into an error of its own (duckdb: ImportError)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import labtui.cli
from labtui.cli import main


def test_ctrl_c_while_a_command_waits_ends_it_with_130_and_one_line(tmp_path: Path) -> None:
    """`labtui sql -` reading a query from a terminal that never ends it, then Ctrl-C."""
    proc = subprocess.Popen([sys.executable, "-m", "labtui", "--db", str(tmp_path / "lab.duckdb"), "sql", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3.0)  # well past the interpreter's start and labtui's imports: waiting on standard input
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert (proc.returncode, err) == (130, "interrupted\n")


def test_ctrl_c_turned_into_a_native_modules_import_error_is_still_an_interrupt(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def native_import(args) -> int:
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
        except KeyboardInterrupt:  # what duckdb's extension init does with a KeyboardInterrupt inside it
            raise ImportError("Encountered an error while initializing the extension.") from None
        return 0

    monkeypatch.setattr(labtui.cli, "_run", native_import)
    assert main(["sessions"]) == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back as it was

    def failing(args) -> int:
        raise ImportError("a real missing module")

    monkeypatch.setattr(labtui.cli, "_run", failing)
    with pytest.raises(ImportError, match="a real missing module"):  # without Ctrl-C an error stays an error
        main(["sessions"])
