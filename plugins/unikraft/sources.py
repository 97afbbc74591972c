"""Where Unikraft's own source comes from, for building unikernels on the host.

A source directory holds one entry per repository an image needs, either an
archive ``<repo>-<version>.tar.gz`` whose files sit under ``<repo>/`` (what
``git archive --prefix=<repo>/`` makes) or an unpacked checkout ``<repo>/``;
lwIP's own sources are a ``fork-lwip-*.zip`` (what lib-lwip's Makefile.uk
would download).  The default is ``shared/vendor/unikraft`` beside the
repository (``../shared/vendor/unikraft`` from a checkout, or from the working directory's
parents when labtui is installed); ``LABTUI_UNIKRAFT_SOURCES`` names another (a newer release, a
user's own checkouts).
"""

from __future__ import annotations

import hashlib
import os
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

from labtui.backends.kit import ProgramUnavailable, bundled_dir

#: A directory of Unikraft sources to build from, instead of the vendored release.
SOURCES_ENV = "LABTUI_UNIKRAFT_SOURCES"
_VERSION = re.compile(r"^unikraft-(?P<version>[0-9][0-9A-Za-z.+-]*)\.tar\.gz$")


_VENDORED = Path("shared") / "vendor" / "unikraft"


def default_dir() -> Path:
    """``shared/vendor/unikraft`` beside the repository: the checkout labtui runs from, else the one the
    working directory is in (an installed labtui run inside its clone), else the checkout's path for the
    error that names it."""
    candidates = [bundled_dir("suites").resolve().parent.parent / _VENDORED]
    candidates += [parent / _VENDORED for parent in Path.cwd().resolve().parents]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def sources_dir() -> Path:
    """$LABTUI_UNIKRAFT_SOURCES, else the vendored release beside the repository."""
    configured = os.environ.get(SOURCES_ENV)
    return Path(configured).expanduser() if configured else default_dir()


@dataclass(frozen=True, slots=True)
class Source:
    """One repository's source: an archive (``.tar.gz``/``.zip``) or a checkout directory."""

    repo: str
    path: Path

    def digest(self) -> str:
        """sha256 over the archive, or over every file of the checkout (names and contents, .git left out)."""
        digest = hashlib.sha256()
        if self.path.is_dir():
            for file in _files(self.path):
                digest.update(str(file.relative_to(self.path)).encode() + b"\0" + file.read_bytes() + b"\0")
        else:
            digest.update(self.path.read_bytes())
        return digest.hexdigest()

    def pack(self, into: Path) -> Path:
        """The file to copy to the host: the archive itself, or the checkout packed under ``<repo>/`` in into."""
        if not self.path.is_dir():
            return self.path
        packed = into / f"{self.repo}-checkout.tar.gz"
        with tarfile.open(packed, "w:gz") as tar:
            for file in _files(self.path):
                tar.add(file, arcname=f"{self.repo}/{file.relative_to(self.path)}", recursive=False)
        return packed


def find(repo: str, directory: Path | None = None) -> Source:
    """The source of repo in directory (default sources_dir()); ProgramUnavailable saying what is missing."""
    where = directory or sources_dir()
    if (where / repo).is_dir():
        return Source(repo, where / repo)
    pattern = "fork-lwip-*.zip" if repo == "fork-lwip" else f"{repo}-*.tar.gz"
    found = sorted(where.glob(pattern))
    if len(found) == 1:
        return Source(repo, found[0])
    problem = f"{len(found)} archives match" if found else "not found"
    raise ProgramUnavailable(
        f"Unikraft source {repo!r} in {where}: {problem} (expected {repo}/ or one {pattern}); "
        f"set {SOURCES_ENV} to a directory holding Unikraft's sources (docs/backend-unikraft.md)"
    )


def release(directory: Path | None = None) -> str:
    """Unikraft's version as its archive names it (``0.16.3``), or ``checkout`` for a source directory."""
    source = find("unikraft", directory)
    match = _VERSION.match(source.path.name)
    return match["version"] if match else "checkout"


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts)
