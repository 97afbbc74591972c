"""A simulated illumos global zone: zonecfg, zoneadm, zlogin and kstat (tests only).

Formats, states and messages follow illumos-gate:
- ``zoneadm list -p``: usr/src/cmd/zoneadm/zoneadm.c zone_print(): ``id:name:state:zonepath:uuid:brand:ip-type``,
  ``-`` for a zone without an id, ``:`` in a zonepath written ``\\:``.
- errors: zoneadm.c zerror() prefixes ``zoneadm: zone 'NAME': ``; zperror() gives
  ``zoneadm: NAME: No such zone configured`` (libzonecfg zonecfg_strerror(Z_NO_ZONE));
  sanity_check() gives ``must be installed before boot.``, ``is already installed.``,
  ``zone is incomplete; uninstall required.``, ``is already in state 'configured'.``,
  ``OP operation is invalid for running zones.``, ``OP operation is invalid for the global zone.``,
  ``OP operation is invalid for zones starting with SUNW.``; exit 1 (Z_ERR), 253 (Z_USAGE).
- zone names: libzonecfg zonecfg_validate_zonename() (not ``global``, under 64 characters,
  ``[A-Za-z0-9][A-Za-z0-9._-]*``); zonecfg reports ``NAME: Bogus zone name``.
- ``zonecfg delete`` on an installed zone: ``Zone NAME not in configured state; delete not allowed.``
- ``zonecfg info attr``: ``attr:`` then tab-indented ``name: ...``, ``type: ...``, ``value: ...``.
- zlogin runs its arguments joined by spaces through the zone's shell, as zlogin.c does for
  non-interactive logins; ``login allowed only to running zones (NAME is 'STATE').``
- ``kstat -p memory_cap:::rss``: the per-zone memory_cap kstats (instance = zone id,
  name = zone name cut to 30 characters), ``module:instance:name:statistic<TAB>value``.
- the zone console log: zoneadmd (usr/src/cmd/zoneadmd/log.c, zcons.c) appends to
  ``<zonepath>/logs/console.log`` one JSON object a line, bunyan's fields then the message:
  ``{ "time": "...Z", "v": 0, "hostname": H, "name": "zoneadmd","pid": P, "level": 30, "msg":"...",
  "stream":"console" }``; opening the log writes a ``"stream":"logfile"`` event (``"msg":"open"``).
  A boot writes ``[NOTICE: Zone booting up]`` and the kernel's banner; a halt ``[NOTICE: Zone halted]``.
Simulator-only behaviour (say so in any test that relies on it): zlogin refuses an absolute
program path no ``fs`` resource of the zone (nor /usr, /bin, /sbin, /lib) makes visible; the zonepath
is made (and the console log kept there) only where its parent directory exists, and uninstall
removes what install made.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

from _simstate import delay, err, hang_if_asked, injected, knobs, locked, state_dir

Z_ERR, Z_USAGE = 1, 253
STATES = ("configured", "incomplete", "installed", "ready", "running", "shutting_down", "down", "mounted")
SYSTEM_DIRS = ("/usr/", "/bin/", "/sbin/", "/lib/", "/etc/")


def _initial() -> dict:
    return {"next_id": 1, "zones": {}}


def valid_name(name: str) -> bool:
    """libzonecfg zonecfg_validate_zonename()."""
    if name == "global" or len(name) >= 64 or not name:
        return False
    ok = lambda c: c.isascii() and (c.isalnum() or c in "-_.")  # noqa: E731
    return name[0].isascii() and name[0].isalnum() and all(ok(c) for c in name[1:])


# -- zonecfg ------------------------------------------------------------------


def zonecfg(args: list[str]) -> int:
    if len(args) < 2 or args[0] != "-z":
        err("usage:\tzonecfg -z <zone> [-f <command-file>] [subcommand]")
        return Z_USAGE
    name, rest = args[1], args[2:]
    if not valid_name(name) and name != "global":
        err(f"{name}: Bogus zone name")
        return Z_USAGE
    hang_if_asked("zonecfg")
    if rest[:1] == ["-f"] and len(rest) == 2:
        try:
            text = open(rest[1]).read()
        except OSError as exc:
            err(f"{rest[1]}: {exc.strerror}")
            return Z_ERR
        return _run_file(name, text, rest[1])
    if rest == ["delete", "-F"]:
        with locked("zones", _initial()) as st:
            zone = st["zones"].get(name)
            if zone is None:
                err(f"{name}: No such zone configured")
                return Z_ERR
            if zone["state"] != "configured":
                err(f"Zone {name} not in configured state; delete not allowed.")
                return Z_ERR
            del st["zones"][name]
        return 0
    if rest[:1] == ["info"]:
        with locked("zones", _initial()) as st:
            zone = st["zones"].get(name)
        if zone is None:
            err(f"{name}: No such zone configured")
            return Z_ERR
        kinds = rest[1:] or ["attr", "net", "fs"]
        out = []
        if not rest[1:]:
            out += [f"zonename: {name}", f"zonepath: {zone['zonepath']}", f"brand: {zone['brand']}",
                    f"autoboot: {zone['autoboot']}", f"ip-type: {zone['iptype']}"]
        for kind in kinds:
            for res in zone.get(kind + "s", []):
                out.append(f"{kind}:")
                out += [f"\t{k}: {v}" for k, v in res.items()]
        print("\n".join(out))
        return 0
    err(f"zonecfg sim: unsupported arguments {rest}")
    return Z_USAGE


def _commands(text: str) -> list[tuple[int, list[str]]]:
    """Commands of a zonecfg command file: split on newlines and ';', '#' starts a comment."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in lexer:
            if token == ";":
                if words:
                    found.append((lineno, words))
                words = []
            else:
                words.append(token)
        if words:
            found.append((lineno, words))
    return found


def _run_file(name: str, text: str, path: str) -> int:
    draft: dict | None = None
    resource: dict | None = None
    kind = ""

    def fail(lineno: int, message: str) -> int:
        err(f"On line {lineno} of {path}:")
        err(message)
        return Z_ERR

    with locked("zones", _initial()) as st:
        existing = st["zones"].get(name)
        commands = _commands(text)
        if not any(words[0] in ("commit", "exit") for _, words in commands):
            commands.append((len(text.splitlines()) + 1, ["exit"]))  # end of file is an implied exit, which commits
        lineno = 0
        for lineno, words in commands:
            cmd = words[0]
            if resource is not None:
                if cmd == "set" and len(words) == 2 and "=" in words[1]:
                    key, value = words[1].split("=", 1)
                    resource[key] = value
                elif cmd == "add" and len(words) == 3 and words[1] == "options":
                    resource["options"] = words[2]
                elif cmd == "end":
                    if kind == "capped-cpu" and not _decimal(resource.get("ncpus", ""), 0.01):
                        return fail(lineno, f"ncpus: invalid value {resource.get('ncpus', '')!r}.")
                    draft[kind + "s"].append(resource)
                    resource = None
                elif cmd == "cancel":
                    resource = None
                else:
                    return fail(lineno, f"{cmd}: not allowed in {kind} resource scope")
                continue
            if cmd == "create":
                if existing is not None and "-F" not in words:
                    return fail(lineno, f"Zone {name} already exists; create not allowed.")
                draft = {"zonepath": "", "autoboot": "false", "brand": "ipkg", "iptype": "shared",
                         "nets": [], "fss": [], "attrs": [], "capped-cpus": [], "capped-memorys": []}
            elif draft is None:
                return fail(lineno, f"{name}: No such zone configured\nUse 'create' to begin configuring a new zone.")
            elif cmd == "set" and len(words) == 2 and "=" in words[1]:
                key, value = words[1].split("=", 1)
                field = {"ip-type": "iptype"}.get(key, key)
                if field not in ("zonepath", "autoboot", "brand", "iptype", "cpu-shares"):
                    return fail(lineno, f"{key}: unknown property.")
                if field == "cpu-shares" and not (value.isdigit() and 1 <= int(value) <= 65535):
                    return fail(lineno, f"{value}: invalid value for cpu-shares.")
                if field == "autoboot" and value not in ("true", "false"):
                    return fail(lineno, f"{value}: invalid value for autoboot (true or false).")
                draft[field] = value
            elif cmd == "add" and len(words) == 2 and words[1] in ("net", "fs", "attr", "capped-cpu", "capped-memory"):
                kind, resource = words[1], {}
            elif cmd == "add":
                return fail(lineno, f"{' '.join(words[1:])}: unknown resource type.")
            elif cmd in ("commit", "exit"):
                if not draft["zonepath"]:
                    return fail(lineno, "zonepath not specified")
                for attr in draft["attrs"]:
                    if not {"name", "type", "value"} <= attr.keys():
                        return fail(lineno, "attr: name, type and value are required")
                for fs in draft["fss"]:
                    if not {"dir", "special", "type"} <= fs.keys():
                        return fail(lineno, "fs: dir, special and type are required")
                old = st["zones"].get(name)
                st["zones"][name] = {**draft, "state": old["state"] if old else "configured",
                                     "uuid": old["uuid"] if old else str(uuid.uuid4()), "id": None}
                if cmd == "exit":
                    break
            elif cmd == "verify":
                if not draft["zonepath"]:
                    return fail(lineno, "zonepath not specified")
            else:
                return fail(lineno, f"{cmd}: unknown command.")
        if resource is not None:
            return fail(lineno, f"{kind} resource not ended (missing 'end')")
    return 0


# -- zoneadm ------------------------------------------------------------------


def _decimal(text: str, minimum: float) -> bool:
    try:
        return float(text) >= minimum
    except ValueError:
        return False


def _line(zid: int | None, name: str, zone: dict) -> str:
    path = zone["zonepath"].replace(":", "\\:")
    ident = "-" if zid is None else str(zid)
    return f"{ident}:{name}:{zone['state']}:{path}:{zone['uuid']}:{zone['brand']}:{zone['iptype']}"


GLOBAL = {"state": "running", "zonepath": "/", "uuid": "", "brand": "ipkg", "iptype": "shared"}


def zoneadm(args: list[str]) -> int:
    target = None
    if args[:1] == ["-z"] and len(args) >= 2:
        target, args = args[1], args[2:]
    if not args:
        err("usage:\tzoneadm help")
        return Z_USAGE
    sub, opts = args[0], args[1:]
    hang_if_asked(sub)
    if sub == "list":
        return _list(target, opts)
    if sub not in ("install", "boot", "halt", "uninstall", "clone", "ready"):
        err(f"zoneadm: unknown subcommand '{sub}'")
        return Z_USAGE
    if target is None:
        err("zoneadm: no zone specified")
        return Z_ERR

    def zerror(message: str) -> int:
        err(f"zoneadm: zone '{target}': {message}")
        return Z_ERR

    if target == "global":
        return zerror(f"{sub} operation is invalid for the global zone.")
    if target.startswith("SUNW"):
        return zerror(f"{sub} operation is invalid for zones starting with SUNW.")
    with locked("zones", _initial()) as st:
        zone = st["zones"].get(target)
        if zone is None:
            err(f"zoneadm: {target}: No such zone configured")
            return Z_ERR
        state = zone["state"]
        if sub in ("install", "clone"):
            if state in ("ready", "running"):
                return zerror(f"{sub} operation is invalid for {state} zones.")
            if state == "installed":
                return zerror("is already installed.")
            if state == "incomplete":
                return zerror("zone is incomplete; uninstall required.")
            if sub == "clone":
                if len(opts) != 1:
                    err("usage:\tclone [-m method] [-s <ZFS snapshot>] [brand-specific args] zonename")
                    return Z_USAGE
                source = st["zones"].get(opts[0])
                if source is None:
                    err(f"zoneadm: {opts[0]}: No such zone configured")
                    return Z_ERR
                if source["state"] != "installed":
                    err(f"zoneadm: zone '{opts[0]}': must be installed before clone.")
                    return Z_ERR
            zone["state"] = "incomplete"
        elif sub in ("boot", "ready"):
            if state in ("ready", "running"):
                return zerror(f"{sub} operation is invalid for {state} zones.")
            if state != "installed":
                return zerror(f"must be installed before {sub}.")
            zone["state"], zone["id"] = "ready", st["next_id"]
            st["next_id"] += 1
        elif sub == "halt":
            if state not in ("ready", "running"):
                return zerror(f"halt operation is invalid for zones in state '{state}'.")
            zone["state"] = "shutting_down"
        elif sub == "uninstall":
            if state in ("ready", "running"):
                return zerror(f"uninstall operation is invalid for {state} zones.")
            if state == "configured":
                return zerror("is already in state 'configured'.")
            if "-F" not in opts:
                sys.stdout.write(f"Are you sure you want to uninstall zone {target} (y/[n])? ")
                if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                    return Z_ERR
    return _finish(target, sub)


def _finish(target: str, sub: str) -> int:
    """The slow part of a subcommand, run with the lock released, then its final state."""
    delay({"install": "install_s", "clone": "clone_s", "boot": "boot_s", "halt": "halt_s"}.get(sub, "none"))
    if sub == "halt":
        kill_zone_processes(target)
    failed = sub in ("install", "clone") and injected("fail_install", target)
    with locked("zones", _initial()) as st:
        zone = st["zones"].get(target)
        if zone is None:
            return Z_ERR
        if failed:
            err(f"ERROR: simulated failure installing zone {target} (sim.json fail_install)")
            return Z_ERR  # the zone stays incomplete, as a failed brand install leaves it
        zone["state"], zone["id"] = {
            "install": ("installed", None), "clone": ("installed", None), "boot": ("running", zone["id"]),
            "ready": ("ready", zone["id"]), "halt": ("installed", None), "uninstall": ("configured", None),
        }[sub]
    if sub in ("install", "clone"):
        _make_zonepath(zone["zonepath"])
    elif sub == "uninstall":
        _remove_zonepath(zone["zonepath"])
    elif sub == "boot":
        _console(zone["zonepath"], ["[NOTICE: Zone booting up]",
                                    "SunOS Release 5.11 Version omnios-r151046 64-bit",
                                    "Copyright (c) 1983, 2010, Oracle and/or its affiliates. All rights reserved.",
                                    f"Hostname: {target}"])
    elif sub == "halt":
        _console(zone["zonepath"], ["[NOTICE: Zone halted]"])
    if sub == "install":
        print(f"       Image: Preparing at {zone['zonepath']}/root.\nDone: Installation completed in 1.0 seconds.")
    return 0


# -- the zonepath and zoneadmd's console log ---------------------------------------------


def _made_marker(zonepath: str) -> str:
    return os.path.join(zonepath, ".simulated")


def _make_zonepath(zonepath: str) -> None:
    """What install leaves at the zonepath (only where its parent exists: see the module's docstring)."""
    if os.path.isdir(os.path.dirname(zonepath)) and not os.path.exists(zonepath):
        os.makedirs(os.path.join(zonepath, "root"), mode=0o700)
        open(_made_marker(zonepath), "w").close()


def _remove_zonepath(zonepath: str) -> None:
    if os.path.exists(_made_marker(zonepath)):
        shutil.rmtree(zonepath, ignore_errors=True)


def _bunyan(stream: str, msg: str) -> str:
    """One line of zoneadmd's log (log.c make_json(): the bunyan preamble, then the pairs)."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1e9):09d}Z"
    return (f'{{ "time": "{stamp}", "v": 0, "hostname": "{socket.gethostname()}", "name": "zoneadmd",'
            f'"pid": {os.getpid()}, "level": 30, "msg":{json.dumps(msg)}, "stream":{json.dumps(stream)} }}\n')


def _console(zonepath: str, lines: list[str]) -> None:
    """Append console lines (each ending in CR LF, as the console writes them) to <zonepath>/logs/console.log."""
    if not os.path.exists(_made_marker(zonepath)):
        return
    logs = os.path.join(zonepath, "logs")
    path = os.path.join(logs, "console.log")
    fresh = not os.path.exists(path)
    os.makedirs(logs, mode=0o700, exist_ok=True)
    with open(path, "a") as log:
        if fresh:
            log.write(_bunyan("logfile", "open"))
        log.writelines(_bunyan("console", line + "\r\n") for line in lines)


def _list(target: str | None, opts: list[str]) -> int:
    flags = "".join(o.lstrip("-") for o in opts)
    if set(flags) - set("cipv"):
        err("usage:\tlist [-cipv]")
        return Z_USAGE
    if "p" in flags and "v" in flags:
        err("zoneadm: list -p and -v are mutually exclusive.")
        return Z_ERR
    with locked("zones", _initial()) as st:
        zones = dict(st["zones"])
    if target is not None:
        if target == "global":
            rows = [(0, "global", GLOBAL)]
        elif target in zones:
            rows = [(zones[target]["id"], target, zones[target])]
        else:
            err(f"zoneadm: {target}: No such zone configured")
            return Z_ERR
    else:
        floor = 0 if "c" in flags else (2 if "i" in flags else 3)
        running = sorted(((z["id"], n, z) for n, z in zones.items() if z["id"] is not None), key=lambda r: r[0])
        others = [(None, n, z) for n, z in zones.items() if z["id"] is None and STATES.index(z["state"]) >= floor]
        rows = [(0, "global", GLOBAL), *running, *others]
    for zid, name, zone in rows:
        if "p" in flags:
            print(_line(zid, name, zone))
        elif "v" in flags:
            print(f"{'-' if zid is None else zid:>4} {name:<16} {zone['state']:<10} {zone['zonepath']:<30} "
                  f"{zone['brand']:<8} {zone['iptype']:<6}")
        else:
            print(name)
    return 0


# -- zlogin -------------------------------------------------------------------


def zlogin(args: list[str]) -> int:
    while args[:1] in (["-S"], ["-Q"]):
        args = args[1:]
    if not args:
        err("usage: zlogin [-nQCES] [-e cmdchar] [-l user] [-d] zonename [command [args ...] ]")
        return 2
    name, command = args[0], args[1:]
    with locked("zones", _initial()) as st:
        zone = st["zones"].get(name)
    if zone is None:
        err(f"zlogin: zone '{name}' unknown")
        return 1
    if zone["state"] != "running":
        err(f"zlogin: login allowed only to running zones ({name} is '{zone['state']}').")
        return 1
    if not command:
        err("zlogin: simulator supports only non-interactive logins")
        return 1
    line = " ".join(command)  # zlogin joins its arguments for the zone's shell
    first = shlex.split(line)[0] if line.strip() else ""
    visible = [fs["dir"].rstrip("/") + "/" for fs in zone["fss"]]
    if first.startswith("/") and not first.startswith(tuple(visible) + SYSTEM_DIRS):
        err(f"sh: {first}: not found")
        return 127
    env = {**os.environ, "ZONENAME": name, ZONE_MARK: _mark(name)}
    return subprocess.call(["/bin/sh", "-c", line], env=env, cwd="/")


ZONE_MARK = "LABTUI_SIM_ZONE"


def _mark(name: str) -> str:
    """What marks a process as running in zone name of this simulated host."""
    return f"{state_dir().resolve()}:{name}"


def zone_pids(name: str) -> list[int]:
    """Processes started in the zone (by zlogin), found by the mark in their environment."""
    wanted = f"{ZONE_MARK}={_mark(name)}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if wanted in open(f"/proc/{entry}/environ", "rb").read().split(b"\0"):
                    found.append(int(entry))
            except OSError:
                continue
    return found


def kill_zone_processes(name: str) -> None:
    """What halting a zone does to its processes: every one of them is killed."""
    for pid in zone_pids(name):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


# -- kstat --------------------------------------------------------------------


def kstat(args: list[str]) -> int:
    if not args or args[0] != "-p":
        err("kstat sim: only 'kstat -p [module:instance:name:statistic]' is simulated")
        return 2
    patterns = args[1:] or [":::"]
    base = int(knobs().get("zone_rss_bytes", 40 << 20))
    with locked("zones", _initial()) as st:
        running = [(0, "global", 512 << 20)]
        running += [(z["id"], n, base + z["id"] * 4096) for n, z in st["zones"].items() if z["id"] is not None]
    lines = []
    for zid, name, rss in sorted(running):
        for stat, value in (("rss", rss), ("swap", rss // 2), ("zonename", name)):
            key = ("memory_cap", str(zid), name[:30], stat)
            if any(_kmatch(key, p) for p in patterns):
                lines.append(f"{':'.join(key)}\t{value}")
    if not lines:
        return 1
    print("\n".join(lines))
    return 0


def _kmatch(key: tuple[str, ...], pattern: str) -> bool:
    parts = (pattern.split(":") + ["", "", "", ""])[:4]
    return all(not p or fnmatch.fnmatchcase(k, p) for k, p in zip(key, parts))


def main(tool: str) -> None:
    sys.exit({"zonecfg": zonecfg, "zoneadm": zoneadm, "zlogin": zlogin, "kstat": kstat}[tool](sys.argv[1:]))
