"""The ui tier: the console, driven by Pilot, tmux or random keys, and the screens it draws.

`lab` is the store path of a console with its runtime and state dirs in tmp_path (nothing
recorded yet); `native_store` is a store holding session `native` (one CSV imported by the CLI)
with the config dir and working directory in tmp_path too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from labtui.cli import main

NATIVE_CSV = Path(__file__).parents[1] / "data" / "compare_brandz_native.csv"


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runtime and state dirs in tmp; returns the store path."""
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "lab.duckdb"


@pytest.fixture
def native_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Runtime, state and config dirs in tmp, the working directory too; a store holding session `native`."""
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.setenv("LABTUI_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LABTUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "lab.duckdb"
    assert main(["--db", str(db), "import", str(NATIVE_CSV), "--session", "native"]) == 0
    return db
