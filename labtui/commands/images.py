"""`labtui images build`: build the docker backend's probe and service images on a host's engine."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, cast

from rich.console import Console
from rich.table import Table
from rich.text import Text

from labtui.backends.base import BackendError, open_backend
from labtui.commands.listing import PipeConsole
from labtui.core.units import size
from labtui.hosts import get_host


class _ImageBuilder(Protocol):
    """The docker backend (a plugin, so not typed here) builds its images."""

    async def build_images(self, *, force: bool = False) -> list[Any]: ...


def cmd_images(args) -> int:
    """Build (or confirm current) every ``labtui/<probe>``, ``labtui/nginx`` and ``labtui/redis`` image on the host's engine."""
    host = get_host(args.host)
    backend = cast(_ImageBuilder, open_backend("docker", host))
    try:
        built = asyncio.run(backend.build_images(force=args.force))
    except BackendError as exc:
        Console(stderr=True).print(f"labtui images build: {exc}", style="red", highlight=False, markup=False)
        return 1
    table = Table("image", "id", "size", "status", title=Text(f"labtui images on {host.name}"), title_justify="left")
    for image in built:
        status = f"skipped: {image.skipped}" if image.skipped else "built" if image.built else "up to date"
        table.add_row(*(Text(cell) for cell in (image.name, image.image_id.removeprefix("sha256:")[:12],
                                                 size(image.size_bytes), status)))
    PipeConsole().print(table)
    return 0

