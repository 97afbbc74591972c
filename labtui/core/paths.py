"""Where labtui finds its bundled files and keeps its data."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # labtui/, this file is labtui/core/paths.py


def bundled_dir(name: str) -> Path:
    """The built-in ``plugins`` or ``suites`` directory.

    In an installed wheel they live in ``labtui/_bundled``; in a source checkout
    (or an editable install) they sit beside the package.
    """
    installed = _PACKAGE / "_bundled" / name
    if installed.is_dir():
        return installed
    return _PACKAGE.parent / name


def local_runtime_dir() -> Path:
    """labtui's private directory on this machine ($LABTUI_RUNTIME_DIR or /tmp/labtui-UID), created 0700.

    An existing one must be a real directory of ours (it is made 0700 again);
    anything else is refused, since sockets and programs are kept there.
    """
    path = Path(os.environ.get("LABTUI_RUNTIME_DIR") or f"/tmp/labtui-{os.getuid()}")
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise PermissionError(f"labtui runtime dir {path} is not a directory of yours (a symlink, or another "
                              "user's): remove it or set LABTUI_RUNTIME_DIR")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def config_dir() -> Path:
    """labtui's own settings (keys.toml, ...): $LABTUI_CONFIG_DIR, else $XDG_CONFIG_HOME/labtui, else ~/.config/labtui."""
    if env := os.environ.get("LABTUI_CONFIG_DIR"):
        return Path(env)
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "labtui"


def default_db_path() -> Path:
    """The store: --db wins, then LABTUI_DB, then sessions/lab.duckdb here."""
    return Path(os.environ.get("LABTUI_DB") or Path.cwd() / "sessions" / "lab.duckdb")


def make_private_dirs(directory: Path) -> list[Path]:
    """Create `directory` and its missing parents, each 0700 whatever the umask; the ones created, outermost first.

    When one cannot be made, those this call created are removed again and the
    OSError is raised with that directory as its filename ("a file is in the way"
    when a file holds its name).
    """
    missing = []
    for parent in (directory, *directory.parents):
        if parent.is_dir():
            break
        missing.append(parent)
    created: list[Path] = []
    for parent in reversed(missing):
        try:
            parent.mkdir(mode=0o700)
        except FileExistsError:
            if parent.is_dir():
                continue  # made by someone else meanwhile
            remove_dirs(created)
            raise FileExistsError(errno.EEXIST, "a file is in the way", str(parent)) from None
        except OSError as exc:
            remove_dirs(created)
            raise OSError(exc.errno, exc.strerror or str(exc), str(parent)) from None
        created.append(parent)
        parent.chmod(0o700)  # mkdir's mode is filtered by the umask
    return created


def remove_dirs(created: list[Path]) -> None:
    """Remove directories make_private_dirs created, innermost first, each only if empty."""
    for directory in reversed(created):
        with contextlib.suppress(OSError):
            directory.rmdir()
