"""What a host raises when it cannot do what was asked (imported by every hosts module, importing none)."""

from __future__ import annotations

from labtui.core.errors import LabError


class HostError(LabError):
    """A host could not do what was asked (unreachable, command missing, ...)."""


class CommandTimeout(HostError):
    """A command ran past its timeout and was killed."""
