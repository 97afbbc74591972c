"""The qemu-system-x86_64 command line of one instance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from labtui.backends.kit import BackendError, Labels

from .state import StateDir, vm_name

QEMU = "qemu-system-x86_64"
#: isa-debug-exit: a guest write of CODE to port 0xf4 ends QEMU with status (CODE << 1) | 1.
DEBUG_EXIT = "isa-debug-exit,iobase=0xf4,iosize=0x04"


@dataclass(frozen=True, slots=True)
class Launch:
    """What to boot and how: a kernel plus the machine around it."""

    kernel: str
    initrd: str | None = None
    #: Kernel arguments; application arguments follow after " -- ".
    append: str = ""
    memory: str = "64M"
    smp: int = 1
    machine: str = "pc"
    #: QEMU -cpu; "" for QEMU's default (the ELF loader's paging needs 1 GiB pages: "max").
    cpu: str = ""
    #: TCP ports the guest serves; each is forwarded from a free port on 127.0.0.1.
    ports: tuple[int, ...] = ()
    #: Console regex that means ready; "" means ready as soon as QEMU runs.
    ready: str = ""
    #: The application's command (a Kraftfile's ``cmd``), before the suite's args.
    cmd: tuple[str, ...] = ()


def command_line(append: str, args: Sequence[str]) -> str:
    """Unikraft's -append form: kernel arguments, then ``--`` and the application's.

    Without kernel arguments the application's come alone: ukboot drops the
    stop sequence only after at least one library parameter (lib/ukboot/boot.c
    in 0.16.3), so a leading ``--`` would reach the application as its argv[1].
    """
    if not args:
        return append
    words = " ".join(map(_quoted, args))
    return f"{append} -- {words}" if append else words


def _quoted(arg: str) -> str:
    """arg as Unikraft's ukargparse splits it back: bare, or in single quotes (empty, spaces, quotes)."""
    if arg and not any(c in arg for c in " \t\n'\"\\"):
        return arg
    if "'" in arg:
        raise BackendError(f"unikraft backend: argument {arg!r} contains a single quote, which -append cannot carry")
    return f"'{arg}'"


def qemu_argv(launch: Launch, state: StateDir, labels: Labels, *, accel: str, args: Sequence[str],
              daemonize: bool, ports: Sequence[int] = ()) -> list[str]:
    """The argv that boots launch with labels in -name, its state files under state.

    Each guest port in ports is forwarded from 127.0.0.1 port 0: the host's
    kernel picks a free port as QEMU binds it, and labtui-qemu asks QMP which.
    """
    for value in (state.path, launch.kernel, launch.initrd or ""):
        if "," in value:
            raise BackendError(f"unikraft backend: path {value!r} contains a comma, which QEMU options cannot take")
    argv = [
        QEMU,
        "-name", vm_name(labels),
        "-accel", accel,
        "-machine", launch.machine,
        "-m", launch.memory,
        "-smp", str(launch.smp),
        "-display", "none", "-nodefaults", "-no-reboot",
        "-kernel", launch.kernel,
        "-serial", f"file:{state.console}",
        # relative to the state directory, QEMU's working directory (socket paths max 107 bytes)
        "-qmp", "unix:qmp.sock,server=on,wait=off",
        "-pidfile", state.pidfile,
        "-device", DEBUG_EXIT,
    ]
    if launch.cpu:
        argv += ["-cpu", launch.cpu]
    append = command_line(launch.append, [*launch.cmd, *args])
    if append:
        argv += ["-append", append]
    if launch.initrd:
        argv += ["-initrd", launch.initrd]
    if ports:
        forwards = ",".join(f"hostfwd=tcp:127.0.0.1:0-:{port}" for port in ports)
        # microvm has no PCI bus: its virtio devices sit on virtio-mmio
        device = "virtio-net-device" if launch.machine.startswith("microvm") else "virtio-net-pci"
        argv += ["-netdev", f"user,id=net0,{forwards}", "-device", f"{device},netdev=net0"]
    if daemonize:
        argv.append("-daemonize")
    return argv


def decode_exit(status: int, stderr: str) -> int:
    """The guest's exit code from QEMU's exit status; BackendError when QEMU itself failed.

    isa-debug-exit makes QEMU exit with (code << 1) | 1; 0 is an orderly
    power-off.  QEMU's own errors also exit 1, but say why on stderr.
    """
    errors = [line for line in stderr.splitlines() if line.strip() and "warning:" not in line]
    if status == 0:
        return 0
    if status % 2 == 1 and not errors:
        return status >> 1
    raise BackendError(f"qemu exited {status}: {errors[-1] if errors else 'no error message'}")
