"""`d` in the Instances view: the store's times stand in for what the backend does not report."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from store_events import full_session

from labtui.backends.base import Instance, Labels
from labtui.store import record_events
from labtui.ui.model.describe import describe
from labtui.ui.model.inventory import Found


def found(ready_at: float | None, boot_s: float | None) -> Found:
    instance = Instance(Labels("s1", "probe", "i1"), "probe-1", "process", "local", "running",
                        created_at=1_700_000_002.0, ready_at=ready_at, boot_s=boot_s)
    return Found(SimpleNamespace(name="process"), instance, None, False)  # type: ignore[arg-type]


def test_a_ready_time_the_backend_forgot_comes_from_the_store_and_says_so(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, full_session())  # i1 ready 1.5 s after its creation, at T0 + 3.5
    text = describe(found(None, None), db)
    assert "ready:      2023-11-14T22:13:23.500+00:00 (from the store)" in text
    assert "boot:       1.500000 s (from the store)" in text
    own = describe(found(1_700_000_010.0, 2.0), db)  # the backend's own figures win
    assert "ready:      2023-11-14T22:13:30.000+00:00\n" in own and "boot:       2.000000 s\n" in own


def test_an_instance_the_store_does_not_know_keeps_its_dashes(tmp_path: Path) -> None:
    db = tmp_path / "lab.duckdb"
    record_events(db, full_session()[:1])
    text = describe(found(None, None), db)
    assert "ready:      -\n" in text and "no instances row" in text
