"""Holding a container's program until ``InstanceSpec.start_at``, with labtui-runat.

A container cannot be told to start at a given moment, so its command is
wrapped: the entrypoint becomes ``labtui-runat AT_NS --`` (``runat.c``, built
static on the host and staged into the created container before it starts) and
the command is the program the container would have run.  labtui-runat sleeps
until AT_NS on CLOCK_REALTIME, which containers share with their host (the
clock ``start_at`` is chosen on), runs the program and writes its closing line
``labtui-runat<TAB>START_NS<TAB>END_NS<TAB>STATUS`` on stderr, never on the
stdout that ``capture_output`` returns.
"""

from __future__ import annotations

from typing import Any

from labtui.backends.kit import BackendError, runat


def entrypoint(runat_inside: str, start_at: float) -> list[str]:
    """The entrypoint that holds the command until start_at: ``RUNAT AT_NS --``."""
    return [runat_inside, str(runat.at_ns(start_at)), "--"]


def command_of(image: str, config: dict[str, Any], cmd: list[str] | None) -> list[str]:
    """What a container of image runs: its Entrypoint then cmd (None: the image's Cmd), as the engine would.

    ``config`` is the image's ``Config`` from an image inspect.  BackendError
    when that is nothing: there would be no program to hold.
    """
    entry = config.get("Entrypoint") or []
    command = [*entry, *(cmd if cmd is not None else config.get("Cmd") or [])]
    if not command:
        raise BackendError(
            f"docker backend: image {image!r} has no Entrypoint or Cmd and the spec gives no args, "
            "so there is no program to hold until start_at"
        )
    return command


def runat_times(stderr: str, where: str) -> tuple[int, int, int] | None:
    """labtui-runat's closing line from a container's stderr; None when it wrote none (it was killed).

    A program labtui-runat could not execute is a BackendError quoting its
    message (``where`` names the container), as the engine's own refusal to
    start a missing program would be without the hold.
    """
    if complaint := runat.complaint(stderr):
        raise BackendError(f"docker backend: {where}: {complaint}")
    return runat.closing_line(stderr)
