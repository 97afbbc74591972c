"""What the start-run dialog offers and returns (no Textual): backends with their usability, the request."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from labtui.backends.base import backend_names, open_backend
from labtui.core.errors import LabError
from labtui.hosts import HostError, get_host
from labtui.suites import Suite

#: The suite keys the dialog overrides, in the order of its inputs.
OVERRIDE_KEYS = ("scale.steps", "scale.per_step", "suite.repetitions")


@dataclass(frozen=True, slots=True)
class BackendChoice:
    """A backend as the dialog lists it: usable on the chosen host or not, and why."""

    name: str
    usable: bool
    reason: str

    @property
    def label(self) -> str:
        return f"{self.name}  {'✔' if self.usable else '✘ unusable:'} {self.reason}"


@dataclass(frozen=True, slots=True)
class StartRequest:
    """A checked suite and where and how to run it."""

    suite: Suite
    backend: str
    host: str
    manual: bool
    overrides: tuple[str, ...] = ()
    profile: str | None = None


async def backend_choices(host_name: str) -> list[BackendChoice]:
    """Every listed backend with the verdict of its check() on host_name (imports run in a thread)."""
    try:
        host = get_host(host_name)
    except HostError as exc:
        return [BackendChoice(name, False, str(exc)) for name in backend_names()]

    async def one(name: str) -> BackendChoice:
        try:
            backend = await asyncio.to_thread(open_backend, name, host)
            verdict = await backend.check()
        except (LabError, OSError) as exc:
            return BackendChoice(name, False, str(exc))
        return BackendChoice(name, verdict.usable, verdict.reason or ("usable" if verdict.usable else "unusable"))

    return list(await asyncio.gather(*(one(name) for name in backend_names())))


def overrides_from(values: dict[str, str]) -> list[str]:
    """`key=value` overrides for the non-empty dialog inputs (key -> typed text)."""
    return [f"{key}={values[key].strip()}" for key in OVERRIDE_KEYS if values.get(key, "").strip()]
