"""What a face asks the session service for: a checked suite, where to run it, and how to step."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from labtui.core.errors import UsageError
from labtui.suites.model import Suite

#: The backend a run uses when neither the request nor the suite names one.
DEFAULT_BACKEND = "process"


@dataclass(frozen=True, slots=True)
class RunRequest:
    """One suite to run on one or more hosts (a session each), recorded in one store."""

    suite: Suite
    db: Path
    hosts: tuple[str, ...] = ("local",)
    #: None: the suite's own backend, else the process backend.
    backend: str | None = None
    #: Pause after every step until next / auto / abort.
    manual: bool = False
    #: The user's labels for each session (`--tag KEY=VALUE`) and a note (`--note TEXT`).
    tags: tuple[tuple[str, str], ...] = ()
    note: str = ""

    @property
    def backend_name(self) -> str:
        return self.backend or self.suite.backend or DEFAULT_BACKEND

    @property
    def host_names(self) -> tuple[str, ...]:
        """The hosts, each once, in the order given (local when none)."""
        return tuple(dict.fromkeys(self.hosts or ("local",)))


def parse_tags(values: list[str]) -> tuple[tuple[str, str], ...]:
    """`--tag KEY=VALUE` arguments as (key, value) pairs, the last value of a key winning; UsageError names a
    value that is not KEY=VALUE with a non-empty key."""
    tags: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--tag {value!r}: expected KEY=VALUE, e.g. --tag kernel=6.1")
        tags[key.strip()] = text
    return tuple(tags.items())
