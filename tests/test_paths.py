"""labtui's local runtime dir: private, ours, never a symlink."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labtui.core.paths import local_runtime_dir


def test_runtime_dir_is_made_private_and_a_symlink_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o755)
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(loose))
    assert local_runtime_dir() == loose and loose.stat().st_mode & 0o777 == 0o700
    link = tmp_path / "link"
    link.symlink_to(loose)
    monkeypatch.setenv("LABTUI_RUNTIME_DIR", str(link))
    with pytest.raises(PermissionError, match="not a directory of yours"):
        local_runtime_dir()
