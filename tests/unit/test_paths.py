"""labtui's local runtime dir (private, ours, never a symlink) and its private directories."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labtui.core.paths import local_runtime_dir, make_private_dirs


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


def test_private_dirs_are_0700_whatever_the_umask_and_undone_when_one_fails(tmp_path: Path) -> None:
    old = os.umask(0o277)  # would leave the owner without write or search bits
    try:
        made = make_private_dirs(tmp_path / "a" / "b" / "c")
    finally:
        os.umask(old)
    assert made == [tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"]
    assert [d.stat().st_mode & 0o777 for d in made] == [0o700] * 3
    assert make_private_dirs(tmp_path / "a" / "b") == []  # nothing new to make
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file").write_text("in the way")
    with pytest.raises(FileExistsError, match="a file is in the way") as in_the_way:
        make_private_dirs(tmp_path / "x" / "file" / "deeper")
    assert in_the_way.value.filename == str(tmp_path / "x" / "file")
    too_long = tmp_path / "x" / "new" / ("n" * 300)  # ENAMETOOLONG, even for root, after "new" was made
    with pytest.raises(OSError) as failed:
        make_private_dirs(too_long / "deeper")
    assert failed.value.filename == str(too_long)
    assert not (tmp_path / "x" / "new").exists()  # the one it made is removed again
