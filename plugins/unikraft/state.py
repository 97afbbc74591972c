"""Where an instance's state lives on its host.

``{runtime_dir}/unikraft/<session>/<instance>/`` holds ``qemu.pid`` (QEMU's
-pidfile), ``qmp.sock`` (the QMP socket, bound relative to the
directory, QEMU's working directory), ``console.log`` (the serial
console), ``labels.json`` (labels and launch details, for people) and
``name`` (the exact -name value, which labtui-qemu checks against the
process's command line before touching it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from labtui.backends.kit import BackendError, Labels

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_NAME = re.compile(r"labtui,,session=([^,]+),,role=([^,]+),,instance=([^,]+)")


def check_labels(labels: Labels) -> None:
    """Refuse labels that cannot be a path component or a -name field."""
    for key in ("session", "role", "instance"):
        value = getattr(labels, key)
        if not _LABEL.fullmatch(value):
            raise BackendError(
                f"unikraft backend: label {key}={value!r} must be 1-64 characters of A-Z a-z 0-9 _ . - "
                "(it names a directory and goes into QEMU's -name)"
            )


def vm_name(labels: Labels) -> str:
    """The -name value carrying the labels; QEMU reads ',,' as a literal comma."""
    return f"labtui,,session={labels.session},,role={labels.role},,instance={labels.instance}"


def labels_from_name(name: str) -> Labels | None:
    """The labels in a -name value, or None when it is not one of labtui's."""
    match = _NAME.fullmatch(name)
    return Labels(*match.groups()) if match else None


def root(runtime_dir: str) -> str:
    """The directory holding every session's instance directories."""
    return f"{runtime_dir}/unikraft"


@dataclass(frozen=True, slots=True)
class StateDir:
    """The files of one instance on its host."""

    path: str

    @classmethod
    def of(cls, runtime_dir: str, labels: Labels) -> StateDir:
        return cls(f"{root(runtime_dir)}/{labels.session}/{labels.instance}")

    @property
    def pidfile(self) -> str:
        return f"{self.path}/qemu.pid"

    @property
    def console(self) -> str:
        return f"{self.path}/console.log"

    @property
    def labels_json(self) -> str:
        return f"{self.path}/labels.json"

    @property
    def name_file(self) -> str:
        return f"{self.path}/name"
