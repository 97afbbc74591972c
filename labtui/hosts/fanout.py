"""Fan-out: pick hosts by name and tag, and run one argv on all of them at once.

One host's failure (unreachable, refused key, timeout) is recorded in its own
outcome and never stops the others.  Hosts with ``persist_s`` go through the
background mux (``labtui.hosts.mux``), which is started after a run that found
none, so that the next run finds their connections open.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from labtui.core.words import name_list
from labtui.hosts import get_host
from labtui.hosts.base import CommandResult, CommandTimeout, HostError
from labtui.hosts.config import LabConfig, load_lab_config
from labtui.hosts.mux_client import ask, mux_socket, start_mux


class SelectionError(HostError):
    """--host/--tag name a host or tag the lab config does not have."""

    exit_status = 2


def select_hosts(lab: LabConfig, names: Sequence[str] = (), tags: Sequence[str] = ()) -> list[str]:
    """Hosts named, plus hosts carrying any of tags, in config order (``local`` first when named).

    With neither names nor tags: every host of the config (``local`` is never implied).
    """
    known = ["local", *lab.hosts]
    for name in names:
        if name not in known:
            where = f" in {lab.path}" if lab.path else " (no lab config: --config or LABTUI_CONFIG names one)"
            raise SelectionError(f"unknown host {name!r}; known hosts: {name_list(known, '`labtui hosts`')}{where}")
    all_tags = sorted({t for h in lab.hosts.values() for t in h.tags})
    for tag in tags:
        if tag not in all_tags:
            raise SelectionError(f"no host has tag {tag!r}; tags in the lab config: {', '.join(all_tags) or 'none'}")
    if not names and not tags:
        return list(lab.hosts)
    wanted = set(names)
    return [n for n in known if n in wanted or (n != "local" and set(lab.hosts[n].tags) & set(tags))]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one host did: its result, or why there is none (error), and how long it took."""

    host: str
    result: CommandResult | None
    error: str
    duration_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.result is not None and self.result.ok


async def run_one(name: str, argv: Sequence[str], timeout: float) -> Outcome:
    """Run argv on host name (connecting first); every failure becomes the outcome's error."""
    started = time.monotonic()
    host = None
    try:
        host = get_host(name)
        result = await host.run(argv, timeout=timeout)
        return Outcome(name, result, "", time.monotonic() - started)
    except CommandTimeout as exc:
        return Outcome(name, None, str(exc), time.monotonic() - started, timed_out=True)
    except HostError as exc:
        return Outcome(name, None, str(exc), time.monotonic() - started)
    finally:
        if host is not None:
            await host.close()


async def run_on_hosts(
    names: Sequence[str],
    argv: Sequence[str],
    *,
    timeout: float,
    on_done: Callable[[Outcome], None] | None = None,
    lab: LabConfig | None = None,
) -> list[Outcome]:
    """Run argv on every host concurrently; on_done sees each outcome as it completes.

    lab is the lab config the names came from (read again when not given).
    Returns the outcomes in the order of names.
    """
    lab = lab or load_lab_config()
    persisted = {n for n in names if n in lab.hosts and lab.hosts[n].persist_s > 0}
    socket = mux_socket(lab.path) if persisted and lab.path else None
    unserved: list[str] = []

    async def one(name: str) -> Outcome:
        outcome = await _through_mux(socket, name, argv, timeout) if name in persisted else None
        if outcome is None:
            if name in persisted:
                unserved.append(name)
            outcome = await run_one(name, argv, timeout)
        if on_done is not None:
            on_done(outcome)
        return outcome

    outcomes = list(await asyncio.gather(*(one(n) for n in names)))
    if unserved and socket is not None and lab.path is not None:
        start_mux(lab.path, socket, unserved)
    return outcomes


async def _through_mux(socket: Path | None, name: str, argv: Sequence[str], timeout: float) -> Outcome | None:
    """The outcome of argv on name run by the background mux, or None when no mux took it."""
    if socket is None:
        return None
    started = time.monotonic()
    answer = await ask(socket, {"host": name, "argv": list(argv), "timeout": timeout})
    if answer is None:
        return None
    duration = time.monotonic() - started
    if "error" in answer:
        return Outcome(name, None, answer["error"], duration, timed_out=bool(answer.get("timed_out")))
    result = CommandResult(tuple(argv), answer["returncode"], answer["stdout"], answer["stderr"], duration)
    return Outcome(name, result, "", duration)
