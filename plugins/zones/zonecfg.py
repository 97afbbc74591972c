"""The zonecfg command file labtui writes for each zone (``zonecfg -z NAME -f FILE``).

The study configured each zone with one command string (create; set zonepath; set
autoboot; add fs; add net; end); labtui adds ``attr`` resources that carry the lab
labels, which is how ``list`` recognises its zones and ``destroy`` proves ownership,
and the resource controls an instance asks for: ``cpu-shares`` (the zone's share
under the FSS scheduler), ``capped-cpu`` (ncpus, in CPUs) and ``capped-memory``
(physical).
"""

from __future__ import annotations

from dataclasses import dataclass

from labtui.backends.kit import BackendError, Labels

#: attr resource names holding the labels (zonecfg attr names are free-form strings).
ATTR_SESSION, ATTR_ROLE, ATTR_INSTANCE = "labtui-session", "labtui-role", "labtui-instance"
_UNSAFE = set('";#\n\r\t\\') | {" "}


@dataclass(frozen=True, slots=True)
class Fs:
    """A loopback (lofs) mount of a global-zone directory into the zone."""

    dir: str
    special: str
    type: str = "lofs"
    options: str = "ro"


@dataclass(frozen=True, slots=True)
class Net:
    """A shared-IP network interface (``physical`` is a NIC of the global zone)."""

    physical: str
    address: str | None = None


@dataclass(frozen=True, slots=True)
class ZoneConfig:
    zonepath: str
    labels: Labels
    autoboot: bool = False
    fss: tuple[Fs, ...] = ()
    nets: tuple[Net, ...] = ()
    #: zone.cpu-shares (1-65535; only the FSS scheduler honours it); None: the default.
    cpu_shares: int | None = None
    #: capped-cpu ncpus, e.g. 0.25 for a quarter of one CPU.
    capped_cpus: float | None = None
    #: capped-memory physical, in MiB.
    capped_memory_mib: int | None = None


def _value(key: str, value: str) -> str:
    """A zonecfg value, refused when it could break out of its command."""
    if not value or _UNSAFE & set(value):
        raise BackendError(f"zones backend: {key} value {value!r} is empty or holds a space, quote, ';', '#' "
                           "or control character")
    return value


def command_file(cfg: ZoneConfig) -> str:
    """The zonecfg commands that configure one zone, ending in commit."""
    lines = [
        "create -b",
        f"set zonepath={_value('zonepath', cfg.zonepath)}",
        f"set autoboot={'true' if cfg.autoboot else 'false'}",
    ]
    if cfg.cpu_shares is not None:
        lines.append(f"set cpu-shares={int(cfg.cpu_shares)}")
    if cfg.capped_cpus is not None:
        lines += ["add capped-cpu", f"set ncpus={float(cfg.capped_cpus):.2f}", "end"]
    if cfg.capped_memory_mib is not None:
        lines += ["add capped-memory", f"set physical={int(cfg.capped_memory_mib)}m", "end"]
    for fs in cfg.fss:
        lines += ["add fs", f"set dir={_value('fs dir', fs.dir)}", f"set special={_value('fs special', fs.special)}",
                  f"set type={_value('fs type', fs.type)}"]
        if fs.options:
            lines.append(f"add options {_value('fs options', fs.options)}")
        lines.append("end")
    for net in cfg.nets:
        lines += ["add net", f"set physical={_value('net physical', net.physical)}"]
        if net.address:
            lines.append(f"set address={_value('net address', net.address)}")
        lines.append("end")
    for name, value in ((ATTR_SESSION, cfg.labels.session), (ATTR_ROLE, cfg.labels.role),
                        (ATTR_INSTANCE, cfg.labels.instance)):
        lines += ["add attr", f"set name={name}", "set type=string", f"set value={_value(name, value)}", "end"]
    lines.append("commit")
    return "\n".join(lines) + "\n"


def parse_attrs(text: str) -> dict[str, str]:
    """``zonecfg -z NAME info attr`` as {attr name: value}."""
    attrs: dict[str, str] = {}
    current: dict[str, str] = {}
    for line in [*text.splitlines(), "attr:"]:
        if line.strip() == "attr:":
            if "name" in current and "value" in current:
                attrs[current["name"]] = current["value"]
            current = {}
        elif line.startswith("\t") and ":" in line:
            key, _, value = line.strip().partition(":")
            current[key.strip()] = value.strip()
    return attrs


def labels_from_attrs(attrs: dict[str, str]) -> Labels | None:
    """The lab labels a zone's attrs carry, None unless all three are there."""
    values = [attrs.get(k) for k in (ATTR_SESSION, ATTR_ROLE, ATTR_INSTANCE)]
    return Labels(*values) if all(values) else None  # type: ignore[arg-type]
