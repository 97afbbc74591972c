"""Domain names carrying the lab labels, and the xl/xm domain config labtui writes.

The config has the keys of the study's guest file (name, memory, kernel, extra, ramdisk,
on_shutdown..., disk, vif) in xl's syntax (xl.cfg(5)): ``key = value`` with quoted strings
and ``[...]`` lists.  Comment lines repeat the labels for a person reading the file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from labtui.backends.kit import BackendError, Labels

#: Every domain labtui creates is named PREFIX + session + "." + role + "." + instance.
PREFIX = "labtui."
_LABEL = re.compile(r"[A-Za-z0-9_-]+")
_UNSAFE = set("\"'\\\n\r")


def domain_name(labels: Labels) -> str:
    """The domain name for labels; BackendError when a label cannot be carried in it."""
    for key, value in (("session", labels.session), ("role", labels.role), ("instance", labels.instance)):
        if not _LABEL.fullmatch(value):
            raise BackendError(f"xen backend: label {key}={value!r} must be letters, digits, '-' or '_'")
    name = f"{PREFIX}{labels.session}.{labels.role}.{labels.instance}"
    if len(name) > 64:
        raise BackendError(f"xen backend: domain name {name!r} is longer than 64 characters")
    return name


def labels_from_name(name: str) -> Labels | None:
    """The labels a labtui domain name carries, None for any other domain."""
    if not name.startswith(PREFIX):
        return None
    parts = name[len(PREFIX):].split(".")
    if len(parts) != 3 or not all(_LABEL.fullmatch(p) for p in parts):
        return None
    return Labels(*parts)


@dataclass(frozen=True, slots=True)
class DomainConfig:
    name: str
    labels: Labels
    kernel: str
    memory_mb: int = 128
    vcpus: int = 1
    ramdisk: str | None = None
    extra: str = ""
    disks: tuple[str, ...] = ()
    vifs: tuple[str, ...] = ()
    cpus: str | None = None
    extra_keys: dict[str, str] = field(default_factory=dict)


def _q(key: str, value: str) -> str:
    if _UNSAFE & set(value):
        raise BackendError(f"xen backend: {key} value {value!r} holds a quote, backslash or newline")
    return f'"{value}"'


def render(cfg: DomainConfig) -> str:
    """The domain config file text."""
    if cfg.memory_mb < 1 or cfg.vcpus < 1:
        raise BackendError(f"xen backend: memory ({cfg.memory_mb} MiB) and vcpus ({cfg.vcpus}) must be positive")
    lines = [
        f"# labtui-session={cfg.labels.session}",
        f"# labtui-role={cfg.labels.role}",
        f"# labtui-instance={cfg.labels.instance}",
        f"name = {_q('name', cfg.name)}",
        f"memory = {cfg.memory_mb}",
        f"vcpus = {cfg.vcpus}",
        f"kernel = {_q('kernel', cfg.kernel)}",
        f"extra = {_q('extra', cfg.extra)}",
    ]
    if cfg.ramdisk:
        lines.append(f"ramdisk = {_q('ramdisk', cfg.ramdisk)}")
    if cfg.cpus:
        lines.append(f"cpus = {_q('cpus', cfg.cpus)}")
    lines += [
        'on_poweroff = "destroy"',
        'on_reboot = "restart"',
        'on_crash = "destroy"',
        "disk = [" + ", ".join(_q("disk", d) for d in cfg.disks) + "]",
        "vif = [" + ", ".join(_q("vif", v) for v in cfg.vifs) + "]",
    ]
    return "\n".join(lines) + "\n"
