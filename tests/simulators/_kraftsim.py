"""A simulated KraftKit ``kraft`` (run, ps, rm, version) for labtui's tests, driving a real QEMU.

kraft cannot be installed where labtui's tests run, so this script does what
kraft does on the qemu platform, following kraftkit's sources:

- ``kraft run`` (internal/cli/kraft/run: run.go, utils.go, runner_kernel.go):
  flags --detach/-d, --disable-acceleration/-W, --arch/-m, --plat, --memory/-M
  (default 64Mi, at least 1Mi), --name/-n (refused when in use), --kernel-arg/-a
  (a string slice: values split on commas, each ``lib.param=value``),
  --rootfs and the deprecated --initrd, --port/-p, --rm, --env/-e.  The input
  must be an ELF file with a Unikraft section (.uk_inittab, .uk_ctortab or
  .uk_thread_inittab: unikraft.IsFileUnikraftUnikernel).  The machine
  (machine/qemu/v1alpha1.go Create) gets a UUID and a state directory
  ``$KRAFTKIT_RUNTIME_DIR/<uuid>`` with machine.pid, machine.log (the serial
  console), qemu.log (QEMU's stdout) and the unix sockets qemu_control.sock,
  qemu_events.sock (QMP) and qemu_mon.sock (HMP); QEMU is started daemonized
  and paused (-S) with ``-name <uuid>``, then resumed over QMP (``cont``, the
  Start of start.go), and with --detach kraft prints the machine name.
- ``kraft ps`` (internal/cli/kraft/ps/ps.go): running machines, or all with
  --all; --long adds the machine id, IP and pid columns.  ``-o json`` is
  kraftkit's tableprinter renderJSON: a JSON array of objects of strings keyed
  by the lower-cased column headers with spaces as underscores, keys sorted
  (Go's encoding/json), no trailing newline, and ``null`` when there is no
  machine.  The state comes from the pidfile and QMP query-status (Get).
- ``kraft rm`` (internal/cli/kraft/remove/remove.go): removes the machine named
  by its FIRST argument only (or every machine with --all), "machine(s) not
  found" otherwise; a running machine is stopped first with QMP quit, waiting up
  to 5 s for the pidfile to go.  A stop that fails is only logged, and the
  machine is deleted anyway (its log and QMP sockets removed), so its QEMU can
  be left running: that is what labtui checks for after kraft rm.

Deliberate differences: only --detach runs are simulated (no log following),
and --port is refused rather than forwarded (kraft forwards with
hostfwd=tcp::HOST-:GUEST, on every interface, which labtui's tests must not
do).  Machines are kept in ``kraft.json`` under the simulator state directory
(_simstate); knobs in sim.json: ``fail_stop`` (globs of machine names whose
QMP stop fails in kraft rm).
"""

from __future__ import annotations

import fnmatch
import json
import os
import random
import re
import socket
import struct
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _simstate import err, knobs, locked, state_dir

VERSION = "kraft 0.11.6 (labtui kraft simulator)"
UK_SECTIONS = {".uk_inittab", ".uk_ctortab", ".uk_thread_inittab"}
_QUANTITY = re.compile(r"(\d+)(Ki|Mi|Gi|Ti|k|K|M|G|T)?")
_UNITS = {None: 1, "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
#: Per command, each long flag's shorthand and whether it takes a value, as kraftkit declares them.
FLAGS = {
    "run": {"detach": ("d", False), "disable-acceleration": ("W", False), "arch": ("m", True), "plat": ("", True),
            "memory": ("M", True), "name": ("n", True), "kernel-arg": ("a", True), "rootfs": ("", True),
            "initrd": ("", True), "port": ("p", True), "rm": ("", False), "env": ("e", True)},
    "ps": {"all": ("a", False), "long": ("l", False), "output": ("o", True), "quiet": ("q", False),
           "arch": ("m", True), "plat": ("p", True)},
    "rm": {"all": ("", False), "plat": ("p", True)},
}
REPEATED = {"kernel-arg", "port", "env"}


class KraftError(Exception):
    """What kraft reports before exiting 1."""


def _initial() -> dict:
    return {"machines": {}}


def runtime_dir() -> Path:
    """$KRAFTKIT_RUNTIME_DIR, else the simulator's own state directory."""
    named = os.environ.get("KRAFTKIT_RUNTIME_DIR")
    return Path(named) if named else state_dir() / "runtime"


def parse_flags(command: str, argv: list[str]) -> tuple[dict, list[str]]:
    """pflag-style parsing: --long[=v], -s [v], -sv; positionals may be interspersed; -- ends flags."""
    spec = FLAGS[command]
    shorts = {short: name for name, (short, _) in spec.items() if short}
    flags: dict = {}
    positional: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "--":
            positional += argv[i:]
            break
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        if arg.startswith("--"):
            name, _, value = arg[2:].partition("=")
            inline = "=" in arg
        else:
            name, value = shorts.get(arg[1:2], ""), arg[2:].lstrip("=")
            inline = bool(arg[2:])
            if not name:
                raise KraftError(f"unknown shorthand flag: '{arg[1:2]}' in {arg}")
        if name not in spec:
            raise KraftError(f"unknown flag: --{name}")
        if spec[name][1]:
            if not inline:
                if i >= len(argv):
                    raise KraftError(f"flag needs an argument: --{name}")
                value = argv[i]
                i += 1
            if name in REPEATED:
                # --kernel-arg is a string slice (split on commas); --port and --env are arrays
                flags.setdefault(name, []).extend(value.split(",") if name == "kernel-arg" else [value])
            else:
                flags[name] = value
        else:
            flags[name] = value.lower() not in ("false", "0") if inline else True
    return flags, positional


def quantity(text: str) -> int:
    match = _QUANTITY.fullmatch(text)
    if not match:
        raise KraftError("could not parse memory quantity: quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
    return int(match.group(1)) * _UNITS[match.group(2)]


def elf_sections(path: str) -> tuple[int, set[str]]:
    """The ELF machine and section names of a file; KraftError when it is no ELF file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise KraftError(f"could not determine how to run provided input: {exc.strerror}: {path}") from None
    if data[:4] != b"\x7fELF":
        raise KraftError("could not determine how to run provided input: provided file is not a Unikraft unikernel")
    wide = data[4] == 2
    machine = struct.unpack_from("<H", data, 18)[0]
    if wide:
        shoff, = struct.unpack_from("<Q", data, 40)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 58)
    else:
        shoff, = struct.unpack_from("<I", data, 32)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 46)

    def section(index: int) -> tuple[int, int, int]:
        base = shoff + index * shentsize
        name, = struct.unpack_from("<I", data, base)
        if wide:
            offset, size = struct.unpack_from("<QQ", data, base + 24)
        else:
            offset, size = struct.unpack_from("<II", data, base + 16)
        return name, offset, size

    _, strtab, _ = section(shstrndx)
    names = set()
    for index in range(shnum):
        name, _, _ = section(index)
        names.add(data[strtab + name:data.index(b"\0", strtab + name)].decode(errors="replace"))
    return machine, names


def qmp(sock_path: str, command: str, timeout: float = 2.0) -> dict:
    """Run one QMP command over a machine's control socket; its reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(sock_path)
        stream = sock.makefile("rw")
        stream.readline()  # greeting
        for execute in ("qmp_capabilities", command):
            stream.write(json.dumps({"execute": execute}) + "\r\n")
            stream.flush()
            while True:
                line = stream.readline()
                if not line:
                    return {}
                reply = json.loads(line)
                if "event" not in reply:
                    break
        return reply


def random_name() -> str:
    adjective = random.choice(["brave", "calm", "eager", "jolly", "quiet"])
    return f"{adjective}_{random.choice(['turing', 'hopper', 'lovelace', 'knuth'])}"


def qemu_argv(machine: dict) -> list[str]:
    """The qemu-system-x86_64 command line kraft's QEMU driver builds (QemuConfig field order)."""
    sd = machine["state_dir"]
    emulation = machine["emulation"]
    append = " " + " ".join([*machine["kernel_args"], *(["--"] if machine["kernel_args"] else []), *machine["args"]])
    argv = ["qemu-system-x86_64", "-append", append,
            "-cpu", "qemu64,+pdpe1gb,-vmx,-svm" if emulation else "host,+x2apic,-pmu",
            "-daemonize",
            "-device", "sga",  # QEMU before 8.0
            "-display", "none"]
    if not emulation:
        argv.append("-enable-kvm")
    if machine["initrd"]:
        argv += ["-initrd", machine["initrd"]]
    argv += ["-kernel", machine["kernel_path"],
             "-machine", "pc" if emulation else "pc,accel=kvm",
             "-m", f"size={machine['memory_bytes'] // 1000000}M",
             "-monitor", f"unix:{sd}/qemu_mon.sock,server,nowait",
             "-name", machine["uid"],
             "-nographic", "-no-reboot", "-S",
             "-parallel", "none",
             "-pidfile", f"{sd}/machine.pid",
             "-qmp", f"unix:{sd}/qemu_control.sock,server,nowait",
             "-qmp", f"unix:{sd}/qemu_events.sock,server,nowait",
             "-rtc", "base=utc",
             "-serial", f"file:{sd}/machine.log",
             "-smp", "cpus=1,threads=1,sockets=1",
             "-vga", "none"]
    return argv


def cmd_run(argv: list[str]) -> int:
    flags, positional = parse_flags("run", argv)
    if flags.get("port"):
        raise KraftError("the kraft simulator does not publish ports: kraft forwards them on every interface")
    if not flags.get("detach"):
        raise KraftError("the kraft simulator runs machines with --detach only")
    plat = flags.get("plat", "auto")
    if plat not in ("auto", "qemu"):
        raise KraftError(f"unknown platform driver '{plat}', however your system supports 'qemu'")
    memory = quantity(flags.get("memory", "64Mi"))
    if memory < 2**20:
        raise KraftError("memory must be at least 1Mi")
    if not positional:
        raise KraftError("could not determine how to run provided input: no arguments supplied")
    kernel = os.path.abspath(positional[0])
    elf_machine, sections = elf_sections(kernel)
    if not sections & UK_SECTIONS:
        raise KraftError("could not determine how to run provided input: provided file is not a Unikraft unikernel")
    arch = flags.get("arch") or ("x86_64" if elf_machine in (3, 62) else "unknown")
    if arch not in ("x86_64", "amd64"):
        raise KraftError(f"unsupported architecture: {arch}")
    for param in flags.get("kernel-arg", []):
        name, sep, _ = param.partition("=")
        if not sep or len(name.split(".")) != 2:
            raise KraftError(f"expected param to be in the format 'libname.param=value' but got: '{param}'")
    initrd = flags.get("rootfs") or flags.get("initrd") or ""
    if flags.get("initrd"):
        err("W  the --initrd flag is deprecated in favour of --rootfs")
    uid = str(uuid.uuid4())
    sd = runtime_dir() / uid
    with locked("kraft", _initial()) as st:
        name = flags.get("name") or random_name()
        if any(m["name"] == name for m in st["machines"].values()):
            raise KraftError(f"machine instance name already in use: {name}")
        machine = {"uid": uid, "name": name, "kernel": "kernel://" + os.path.basename(kernel), "kernel_path": kernel,
                   "args": positional[1:], "kernel_args": flags.get("kernel-arg", []), "initrd": initrd,
                   "memory": flags.get("memory", "64Mi"), "memory_bytes": memory, "arch": "x86_64", "plat": "qemu",
                   "emulation": bool(flags.get("disable-acceleration")), "state_dir": str(sd),
                   "created": time.time(), "pid": 0, "state": "created"}
        st["machines"][uid] = machine  # reserves the name
    try:
        sd.mkdir(parents=True, exist_ok=True)
        with open(sd / "qemu.log", "w") as log:
            started = subprocess.run(qemu_argv(machine), stdout=log, stdin=subprocess.DEVNULL, check=False)
        if started.returncode != 0:
            raise KraftError(f"could not start and wait for QEMU process: exit status {started.returncode}")
        reply = qmp(f"{sd}/qemu_control.sock", "cont")
        if "return" not in reply:
            raise KraftError(f"could not start qemu instance: {reply}")
        pid = int((sd / "machine.pid").read_text().strip())
    except (KraftError, OSError, ValueError) as exc:
        with locked("kraft", _initial()) as st:
            st["machines"].pop(uid, None)
        raise KraftError(str(exc)) from None
    with locked("kraft", _initial()) as st:
        st["machines"][uid].update(pid=pid, state="running")
    print(name)
    return 0


def _running(pid: int) -> bool:
    """gopsutil IsRunning: the process exists (a zombie still does)."""
    return pid > 0 and os.path.exists(f"/proc/{pid}")


def current_state(machine: dict) -> str:
    """Get(): the pidfile and QMP query-status say what the machine is doing."""
    sd = machine["state_dir"]
    try:
        pid = int(Path(sd, "machine.pid").read_text().strip())
    except (OSError, ValueError):
        return "exited"
    if not _running(pid):
        return "exited"
    try:
        status = qmp(f"{sd}/qemu_control.sock", "query-status").get("return", {}).get("status", "")
    except OSError:
        return "exited"
    return {"running": "running", "paused": "paused", "shutdown": "exited", "suspended": "suspended",
            "guest-panicked": "failed", "internal-error": "failed", "io-error": "failed"}.get(status, "unknown")


def humanize(created: float) -> str:
    """go-humanize Time: "now", "1 second ago", "N minutes ago", ..."""
    seconds = int(time.time() - created)
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second")):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "now"


def go_json(rows: list[dict[str, str]]) -> str:
    """encoding/json of []map[string]string: sorted keys, HTML characters escaped, nil as null."""
    if not rows:
        return "null"
    text = json.dumps(rows, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def cmd_ps(argv: list[str]) -> int:
    flags, _ = parse_flags("ps", argv)
    output = flags.get("output", "table")
    if output not in ("table", "json", "yaml", "list"):
        raise KraftError(f"invalid output format: {output}")
    with locked("kraft", _initial()) as st:
        machines = list(st["machines"].values())
    long = flags.get("long", False)
    headers = (["MACHINE ID"] if long else []) + ["NAME", "KERNEL", "ARGS", "CREATED", "STATUS", "MEM", "PORTS"]
    headers += ["IP", "PID", "PLAT", "ARCH"] if long else ["PLAT"]
    rows = []
    for machine in machines:
        state = current_state(machine)
        if not flags.get("all") and state != "running":
            continue
        if flags.get("quiet"):
            print(machine["uid"])
            continue
        values = ([machine["uid"]] if long else []) + [
            machine["name"], machine["kernel"], " ".join(machine["args"]), humanize(machine["created"]), state,
            machine["memory"], ""]
        if long:
            values += ["", str(machine["pid"]), machine["plat"], machine["arch"]]
        else:
            values.append(f"{machine['plat']}/{machine['arch']}")
        rows.append(values)
    if flags.get("quiet"):
        return 0
    if output == "json":
        sys.stdout.write(go_json([{h.lower().replace(" ", "_"): v for h, v in zip(headers, row)} for row in rows]))
    else:
        widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
        for row in [headers, *rows]:
            print("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return 0


def stop(machine: dict) -> None:
    """Stop(): QMP quit, then up to 5 s for the pidfile to disappear."""
    sd = machine["state_dir"]
    if any(fnmatch.fnmatchcase(machine["name"], glob) for glob in knobs().get("fail_stop", [])):
        raise KraftError(f"could not stop qemu instance: dial unix {sd}/qemu_control.sock: connect: connection refused")
    try:
        qmp(f"{sd}/qemu_control.sock", "quit")
    except OSError as exc:
        raise KraftError(f"could not stop qemu instance: {exc}") from None
    deadline = time.monotonic() + 5.0
    while Path(sd, "machine.pid").exists():
        if time.monotonic() > deadline:
            raise KraftError("process still active")
        time.sleep(0.05)


def cmd_rm(argv: list[str]) -> int:
    flags, names = parse_flags("rm", argv)
    if not names and not flags.get("all"):
        raise KraftError("no machine(s) specified")
    with locked("kraft", _initial()) as st:
        machines = list(st["machines"].values())
    remove = [m for m in machines if (not names and flags.get("all")) or names[0] in (m["name"], m["uid"])]
    if not remove:
        raise KraftError("machine(s) not found")
    for machine in remove:
        if current_state(machine) == "running":
            try:
                stop(machine)
            except KraftError as exc:
                err(f"E  could not stop machine {machine['name']}: {exc}")
        sd = machine["state_dir"]
        for leftover in ("machine.log", "qemu_control.sock", "qemu_events.sock"):
            Path(sd, leftover).unlink(missing_ok=True)
        with locked("kraft", _initial()) as st:
            st["machines"].pop(machine["uid"], None)
        print(machine["name"])
    return 0


def main(argv: list[str]) -> int:
    commands = {"run": cmd_run, "ps": cmd_ps, "rm": cmd_rm, "remove": cmd_rm}
    if argv[:1] in (["version"], ["--version"], ["-v"]):
        print(VERSION)
        return 0
    if not argv or argv[0] not in commands:
        err(f"Error: unknown command {argv[0]!r} for \"kraft\"" if argv else "usage: kraft run|ps|rm|version")
        return 1
    try:
        return commands[argv[0]](argv[1:])
    except KraftError as exc:
        err(f"E  {exc}")
        return 1
