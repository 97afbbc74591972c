"""The bundled probes a suite may name (``suites/probes/<name>.c``, which every backend builds)."""

from __future__ import annotations

from labtui.core.paths import bundled_dir
from labtui.core.words import name_list
from labtui.suites.source import KeyPath, Source


def check_probe(program: str | None, path: KeyPath, src: Source) -> None:
    """A program must be one of the bundled probes; SuiteError at ``path`` listing them otherwise."""
    probes = bundled_dir("suites") / "probes"
    if program is not None and not (probes / f"{program}.c").is_file():
        known = name_list(sorted(p.stem for p in probes.glob("*.c")), "suites/probes/") or "none"
        raise src.error(path, f"no probe {program!r}; known probes: {known}")
