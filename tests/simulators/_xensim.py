"""A simulated Xen Domain-0: xl (and xm for old hosts) for labtui's tests.

Formats follow Xen's sources:
- ``xl list``: tools/xl/xl_info.c (xl_cmdimpl.c before 4.8) list_domains(): the header
  ``Name                                        ID   Mem VCPUs\\tState\\tTime(s)`` (two tabs) and rows
  ``"%-40s %5d %5lu %5d     %c%c%c%c%c%c  %8.1f"`` with the state letters r b p s c d or ``-``.
- ``xm list``: tools/python/xen/xm/main.py xm_brief_list(): ``'%-40s %5s %5s %5s %10s %9s'`` header,
  rows ``%(name)-40s %(domid)5s %(mem)5d %(vcpus)5d %(state)10s %(cpu_time)8.1f``.
- ``xl list -l``: a JSON array of ``{"domid": N, "config": {"c_info": {...}, "b_info": {...}, ...}}``
  (libxl_domain_config in JSON, as printed by xl since 4.2; Domain-0 has no saved config).
- ``xl create`` prints ``Parsing config from FILE`` on stderr; an unknown domain is
  ``NAME is an invalid domain identifier (rc=-6)`` (xl_utils.c find_domain()); ``xm`` says
  ``Error: Domain 'NAME' does not exist.``.
- ``xl sched-credit``: tools/xl/xl_sched.c ``"%-33s %4s %6s %4s"`` header (Name ID Weight Cap), after a
  ``Cpupool Pool-0: tslice=30ms ratelimit=1000us migration-delay=0us`` line when listing every domain;
  ``-d NAME -w W -c C`` sets them, with libxl_sched.c's range errors.
- ``xl info``: ``%-23s: %s`` lines (tools/xl/xl_info.c output_xeninfo/output_physinfo).
The guest is simulated: the config's ``kernel`` is run as a process with ``extra`` as its
arguments, its output going to its console log as xenconsoled --log=guest writes it,
``<log dir>/guest-<name>.log`` (the log dir: sim.json's ``console_log_dir``, else state/console);
when it exits the domain powers off and, with on_poweroff="destroy", disappears.
``vcpu-pin`` sets the guest process's CPU affinity, and ``sched-credit`` puts it in a cpu cgroup
(v1 ``cpu.shares`` = 4 x weight and CFS quota = cap, or v2 ``cpu.weight``/``cpu.max``) where one is
writable, so that weights and caps take effect as on a credit scheduler.
"""

from __future__ import annotations

import ast
import contextlib
import getopt
import hashlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from _simstate import delay, err, hang_if_asked, injected, knobs, locked, state_dir

DOM0_MB = 1024


def _initial() -> dict:
    return {"next_id": 1, "domains": {}}


def _proc_start(pid: int) -> str | None:
    """The start time of pid from /proc (to tell a guest from a reused pid), None when gone."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def _alive(dom: dict) -> bool:
    """Whether the guest still runs; a domain still being built (no pid yet) counts as alive."""
    if dom["pid"] is None:
        return True
    return dom["start"] is not None and _proc_start(dom["pid"]) == dom["start"]


def _reap(st: dict) -> None:
    """Domains whose guest exited power off: on_poweroff=destroy removes them."""
    for name, dom in list(st["domains"].items()):
        if not _alive(dom) and dom["config"].get("on_poweroff", "destroy") == "destroy":
            del st["domains"][name]
            _unschedule(dom)


def _letters(dom: dict) -> str:
    try:
        state = open(f"/proc/{dom['pid']}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        state = "S"
    paused = "p" if dom.get("paused") else "-"
    return ("r-" if state == "R" else "-b") + paused + "---"


def _cpu_time(dom: dict) -> float:
    try:
        fields = open(f"/proc/{dom['pid']}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def _rows(st: dict) -> list[tuple[str, int, int, int, str, float]]:
    rows = [("Domain-0", 0, DOM0_MB, int(knobs().get("dom0_vcpus", 2)), "r-----", time.process_time())]
    for name, dom in sorted(st["domains"].items(), key=lambda kv: kv[1]["id"]):
        cfg = dom["config"]
        rows.append((name, dom["id"], int(cfg.get("memory", 128)), int(cfg.get("vcpus", 1)), _letters(dom), _cpu_time(dom)))
    return rows


def parse_config(text: str, path: str) -> dict:
    """An xl domain config (``key = value`` with Python-like strings, numbers and lists)."""
    config: dict = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        key, sep, value = line.partition("=")
        try:
            if not sep:
                raise ValueError
            config[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            raise SystemExit(_fail(f'{path}:{lineno}: config parsing error near `{line}\': syntax error')) from None
    return config


def _fail(message: str) -> int:
    err(message)
    return 1


def main(tool: str) -> None:
    args = sys.argv[1:]
    if not args:
        err(f"Usage {tool} [-vfNtT] <subcommand> [args]")
        sys.exit(1)
    sub, rest = args[0], args[1:]
    hang_if_asked(f"{tool} {sub}")
    handler = {"list": _list, "create": _create, "destroy": _destroy, "shutdown": _shutdown,
               "vcpu-pin": _vcpu_pin, "vcpu-list": _vcpu_list, "sched-credit": _sched_credit, "info": _info}.get(sub)
    if handler is None:
        err(f"{tool}: command not implemented" if tool == "xl" else f"Error: Subcommand {sub} not found!")
        sys.exit(1)
    sys.exit(handler(tool, rest))


def _unknown(tool: str, name: str) -> int:
    if tool == "xm":
        return _fail(f"Error: Domain '{name}' does not exist.")
    return _fail(f"{name} is an invalid domain identifier (rc=-6)")


def _list(tool: str, args: list[str]) -> int:
    long = "-l" in args or "--long" in args
    names = [a for a in args if not a.startswith("-")]
    with locked("xen", _initial()) as st:
        _reap(st)
        rows = _rows(st)
        domains = dict(st["domains"])
    if names:
        rows = [r for r in rows if r[0] in names]
        missing = set(names) - {r[0] for r in rows}
        if missing:
            return _unknown(tool, sorted(missing)[0])
    if long and tool == "xl":
        print(json.dumps([_long(r, domains.get(r[0])) for r in rows], indent=4))
        return 0
    if tool == "xl":
        print("Name                                        ID   Mem VCPUs\tState\tTime(s)")
        for name, domid, mem, vcpus, state, cpu in rows:
            print(f"{name:<40} {domid:5d} {mem:5d} {vcpus:5d}     {state}  {cpu:8.1f}")
    else:
        print(f"{'Name':<40} {'ID':>5} {'Mem':>5} {'VCPUs':>5} {'State':>10} {'Time(s)':>9}")
        for name, domid, mem, vcpus, state, cpu in rows:
            print(f"{name:<40} {domid:>5} {mem:5d} {vcpus:5d} {state:>10} {cpu:8.1f}")
    return 0


def _long(row: tuple, dom: dict | None) -> dict:
    name, domid, mem, vcpus = row[:4]
    if dom is None:  # Domain-0: no saved config
        return {"domid": domid, "config": {"c_info": {"type": "pv", "name": name}, "b_info": {
            "max_vcpus": vcpus, "max_memkb": mem * 1024, "target_memkb": mem * 1024}}}
    cfg = dom["config"]
    return {"domid": domid, "config": {
        "c_info": {"type": cfg.get("type", "pv"), "name": name, "uuid": dom["uuid"]},
        "b_info": {"max_vcpus": vcpus, "avail_vcpus": list(range(vcpus)), "max_memkb": mem * 1024,
                   "target_memkb": mem * 1024, "kernel": cfg.get("kernel"), "cmdline": cfg.get("extra", ""),
                   "ramdisk": cfg.get("ramdisk"),
                   "sched_params": {"weight": dom["weight"], "cap": dom["cap"]},
                   "vcpu_hard_affinity": dom["affinity"]},
        "disks": [{"pdev_path": d} for d in cfg.get("disk", [])],
        "nics": [_nic(devid, spec, dom["uuid"]) for devid, spec in enumerate(cfg.get("vif", []))],
        "on_poweroff": cfg.get("on_poweroff", "destroy"), "on_reboot": cfg.get("on_reboot", "restart"),
        "on_crash": cfg.get("on_crash", "destroy")}}


def _nic(devid: int, spec: str, domain_uuid: str) -> dict:
    """A libxl_device_nic as ``xl list -l`` prints it, from a vif spec (xl-network-configuration(5))."""
    fields = dict(part.split("=", 1) for part in spec.split(",") if "=" in part)
    digest = hashlib.sha1(f"{domain_uuid}/{devid}".encode()).hexdigest()
    nic = {"devid": devid, "mac": fields.get("mac", "00:16:3e:" + ":".join(digest[i:i + 2] for i in (0, 2, 4))),
           "bridge": fields.get("bridge", "xenbr0"), "nictype": "vif"}
    if "ip" in fields:
        nic["ip"] = fields["ip"]
    return nic


def _create(tool: str, args: list[str]) -> int:
    files = [a for a in args if not a.startswith("-")]
    if len(files) != 1:
        return _fail(f"Usage: {tool} create <ConfigFile> [options] [vars]")
    path = files[0]
    if tool == "xl":
        err(f"Parsing config from {path}")
    else:
        print(f'Using config file "{path}".')
    try:
        text = open(path).read()
    except OSError as exc:
        return _fail(f"Failed to read config file: {path}: {exc.strerror}")
    cfg = parse_config(text, path)
    name = cfg.get("name")
    if not isinstance(name, str) or not name:
        return _fail("Domain name must be specified.")
    kernel = cfg.get("kernel")
    if not isinstance(kernel, str) or not os.access(kernel, os.X_OK):
        return _fail(f"libxl: error: libxl_dom.c: xc_dom_kernel_file failed: No such file or directory ({kernel})")
    total = int(knobs().get("host_mem_mb", 8192))
    with locked("xen", _initial()) as st:
        _reap(st)
        if name in st["domains"]:
            return _fail(f"libxl: error: libxl_create.c: Domain {st['domains'][name]['id']}:"
                         f"domain name {name} is already in use")
        used = DOM0_MB + sum(int(d["config"].get("memory", 128)) for d in st["domains"].values())
        if used + int(cfg.get("memory", 128)) > total or injected("fail_create", name):
            return _fail("libxl: error: libxl_create.c: cannot (re-)build domain: -3")
        domid = st["next_id"]
        st["next_id"] += 1
        st["domains"][name] = {"id": domid, "config": cfg, "pid": None, "start": None, "uuid": str(uuid.uuid4()),
                               "weight": 256, "cap": 0, "affinity": [], "paused": True}
    delay("create_s")
    console = Path(knobs().get("console_log_dir") or state_dir() / "console")  # xenconsoled's --log-dir
    console.mkdir(parents=True, exist_ok=True)
    with open(console / f"guest-{name}.log", "ab") as log:
        proc = subprocess.Popen([kernel, *shlex.split(cfg.get("extra", ""))], stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log, start_new_session=True, cwd="/")
    with locked("xen", _initial()) as st:
        dom = st["domains"].get(name)
        if dom is not None:
            dom.update(pid=proc.pid, start=_proc_start(proc.pid), paused=False)
    if tool == "xm":
        print(f"Started domain {name} (id={domid})")
    return 0


def _take(tool: str, name: str) -> tuple[dict | None, int]:
    with locked("xen", _initial()) as st:
        _reap(st)
        dom = st["domains"].get(name)
        return dom, (0 if dom else _unknown(tool, name))


def _destroy(tool: str, args: list[str]) -> int:
    names = [a for a in args if not a.startswith("-")]
    if len(names) != 1:
        return _fail(f"Usage: {tool} destroy <Domain>")
    if names[0] in ("Domain-0", "0"):
        return _fail("libxl: error: libxl_domain.c: Domain 0:Cannot destroy privileged domain: Invalid argument")
    with locked("xen", _initial()) as st:
        _reap(st)
        dom = st["domains"].pop(names[0], None)
        if dom is None:
            return _unknown(tool, names[0])
        if dom["pid"] is not None and _alive(dom):
            os.killpg(dom["pid"], signal.SIGKILL)
        _unschedule(dom)
    return 0


def _shutdown(tool: str, args: list[str]) -> int:
    wait = "-w" in args or "--wait" in args
    names = [a for a in args if not a.startswith("-")]
    if len(names) != 1:
        return _fail(f"Usage: {tool} shutdown [options] <-a|Domain>")
    dom, rc = _take(tool, names[0])
    if dom is None:
        return rc
    if tool == "xl":
        print(f"Shutting down domain {dom['id']}")
    if dom["pid"] is not None and _alive(dom):
        os.killpg(dom["pid"], signal.SIGTERM)  # the guest's orderly shutdown
    delay("shutdown_s")
    if wait:
        if tool == "xl":
            print("Waiting for 1 domains")
        while True:
            with locked("xen", _initial()) as st:
                _reap(st)
                if names[0] not in st["domains"]:
                    break
            time.sleep(0.05)
        if tool == "xl":
            print(f"Domain {dom['id']} has been shut down, reason code 0")
    return 0


def _vcpu_pin(tool: str, args: list[str]) -> int:
    if len(args) != 3:
        return _fail(f"Usage: {tool} vcpu-pin <Domain> <VCPU|all> <CPUs|all>")
    name, vcpu, cpus = args
    with locked("xen", _initial()) as st:
        _reap(st)
        dom = st["domains"].get(name)
        if dom is None:
            return _unknown(tool, name)
        vcpus = int(dom["config"].get("vcpus", 1))
        targets = range(vcpus) if vcpu == "all" else [int(vcpu)]
        if any(v >= vcpus for v in targets):
            return _fail(f"libxl: error: libxl_sched.c: Domain {dom['id']}:Setting vcpu affinity: Invalid argument")
        affinity = dom["affinity"] or ["all"] * vcpus
        for v in targets:
            affinity[v] = cpus
        dom["affinity"] = affinity
        _pin(dom, cpus)
    return 0


def _vcpu_list(tool: str, args: list[str]) -> int:
    with locked("xen", _initial()) as st:
        _reap(st)
        domains = {n: d for n, d in st["domains"].items() if not args or n in args}
    print("Name                                ID  VCPU   CPU State   Time(s) Affinity (Hard / Soft)")
    for name, dom in sorted(domains.items(), key=lambda kv: kv[1]["id"]):
        vcpus = int(dom["config"].get("vcpus", 1))
        for v in range(vcpus):
            hard = dom["affinity"][v] if dom["affinity"] else "all"
            print(f"{name:<32} {dom['id']:5d} {v:5d} {v:5d}   -b-  {0.0:9.1f}  {hard} / all")
    return 0


def _strtol(text: str) -> int:
    """What C's strtol(text, NULL, 10) gives: the leading integer, 0 when there is none."""
    match = re.match(r"\s*[+-]?\d+", text)
    return int(match.group()) if match else 0


def _sched_credit(tool: str, args: list[str]) -> int:
    """tools/xl/xl_sched.c main_sched_credit(): list (all pools, or one domain) or set weight/cap."""
    try:
        opts, _ = getopt.gnu_getopt(args, "d:w:c:p:t:r:m:s", ["domain=", "weight=", "cap=", "cpupool=", "schedparam",
                                                               "tslice_ms=", "ratelimit_us=", "migration_delay_us="])
    except getopt.GetoptError as exc:
        return _fail(f"{tool}: {exc.msg}")
    given = {opt.lstrip("-")[:1]: value for opt, value in opts}
    dom_name = given.get("d")
    if ("p" in given or "s" in given) and (dom_name is not None or "w" in given or "c" in given):
        return _fail("Specifying a cpupool or schedparam is not allowed with domain options.")
    if dom_name is None and ("w" in given or "c" in given):
        return _fail("Must specify a domain.")
    with locked("xen", _initial()) as st:
        _reap(st)
        if dom_name is None:
            shown = sorted(st["domains"].items(), key=lambda kv: kv[1]["id"])
        else:
            dom = st["domains"].get(dom_name)
            if dom is None:
                return _unknown(tool, dom_name)
            if "w" in given or "c" in given:
                return _set_credit(dom, given)
            shown = [(dom_name, dom)]
    if dom_name is None:
        print("Cpupool Pool-0: tslice=30ms ratelimit=1000us migration-delay=0us")
    print(f"{'Name':<33} {'ID':>4} {'Weight':>6} {'Cap':>4}")
    if dom_name is None:
        print(f"{'Domain-0':<33} {0:4d} {256:6d} {0:4d}")
    for name, dom in shown:
        print(f"{name:<33} {dom['id']:4d} {dom['weight']:6d} {dom['cap']:4d}")
    return 0


def _set_credit(dom: dict, given: dict[str, str]) -> int:
    """libxl_sched.c sched_credit_domain_set(): range checks, then the new weight and cap take effect."""
    weight = _strtol(given["w"]) if "w" in given else dom["weight"]
    cap = _strtol(given["c"]) if "c" in given else dom["cap"]
    most = int(dom["config"].get("vcpus", 1)) * 100
    if not 1 <= weight <= 65535:
        return _fail(f"libxl: error: libxl_sched.c: Domain {dom['id']}:Cpu weight out of range, valid values are "
                     "within range from 1 to 65535\nlibxl_domain_sched_params_set failed.")
    if not 0 <= cap <= most:
        return _fail(f"libxl: error: libxl_sched.c: Domain {dom['id']}:Cpu cap out of range, valid range is from 0 "
                     f"to {most} for specified number of vcpus\nlibxl_domain_sched_params_set failed.")
    dom["weight"], dom["cap"] = weight, cap
    _schedule(dom)
    return 0


# -- the simulated credit scheduler: weight and cap as CFS group weight and quota of the guest process --


def _cpu_cgroup_root() -> tuple[Path, str] | None:
    """The cpu controller the simulator can use: (root, "v1") or (root, "v2"); None when there is none."""
    v1 = Path("/sys/fs/cgroup/cpu")
    if (v1 / "cpu.shares").exists() and os.access(v1, os.W_OK):
        return v1, "v1"
    v2 = Path("/sys/fs/cgroup")
    controllers = v2 / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split() and os.access(v2, os.W_OK):
        return v2, "v2"
    return None


def _domain_cgroup(name: str) -> tuple[Path, str] | None:
    """This simulated host's cgroup for a domain's guest (created with its parents), or None."""
    found = _cpu_cgroup_root()
    if found is None:
        return None
    root, version = found
    host_dir = root / "labtui-xensim" / hashlib.sha1(str(state_dir().resolve()).encode()).hexdigest()[:10]
    for directory in (host_dir.parent, host_dir):
        directory.mkdir(exist_ok=True)
        if version == "v2":
            (directory / "cgroup.subtree_control").write_text("+cpu")
    path = host_dir / name
    path.mkdir(exist_ok=True)
    return path, version


def _schedule(dom: dict) -> None:
    """Make the guest process feel its weight and cap (no-op where no cpu controller is writable)."""
    if dom["pid"] is None or not _alive(dom):
        return
    try:
        found = _domain_cgroup(dom["config"]["name"])
        if found is None:
            return
        path, version = found
        period = 100000
        quota = dom["cap"] * period // 100 if dom["cap"] else None
        if version == "v1":
            (path / "cpu.shares").write_text(str(max(2, dom["weight"] * 4)))
            (path / "cpu.cfs_period_us").write_text(str(period))
            (path / "cpu.cfs_quota_us").write_text(str(quota if quota else -1))
        else:
            (path / "cpu.weight").write_text(str(max(1, min(10000, dom["weight"] * 100 // 256))))
            (path / "cpu.max").write_text(f"{quota if quota else 'max'} {period}")
        (path / "cgroup.procs").write_text(str(dom["pid"]))
        dom["cgroup"] = str(path)
    except OSError as exc:
        err(f"(simulator) cannot apply the credit scheduler to {dom['config']['name']}: {exc}")


def _unschedule(dom: dict) -> None:
    """Remove a gone domain's cgroup (its guest has exited or was killed), and its parents once empty."""
    path = dom.get("cgroup")
    if not path:
        return
    for _ in range(100):
        try:
            os.rmdir(path)
            break
        except FileNotFoundError:
            break
        except OSError:
            time.sleep(0.01)
    for parent in (Path(path).parent, Path(path).parent.parent):
        with contextlib.suppress(OSError):
            parent.rmdir()


def _pin(dom: dict, cpus: str) -> None:
    """vcpu-pin's effect on the guest process: its CPU affinity."""
    if dom["pid"] is None or not _alive(dom):
        return
    chosen: set[int] = set()
    for part in cpus.split(","):
        if part == "all":
            chosen = set(range(os.cpu_count() or 1))
            break
        first, _, last = part.partition("-")
        chosen.update(range(int(first), int(last or first) + 1))
    with contextlib.suppress(OSError, ValueError):
        os.sched_setaffinity(dom["pid"], chosen)


def _info(tool: str, args: list[str]) -> int:
    total = int(knobs().get("host_mem_mb", 8192))
    with locked("xen", _initial()) as st:
        _reap(st)
        used = DOM0_MB + sum(int(d["config"].get("memory", 128)) for d in st["domains"].values())
    fields = [("host", os.uname().nodename), ("release", os.uname().release), ("machine", os.uname().machine),
              ("nr_cpus", os.cpu_count()), ("total_memory", total), ("free_memory", total - used),
              ("xen_major", 4), ("xen_minor", 17), ("xen_version", "4.17.3"), ("xen_scheduler", "credit")]
    for key, value in fields:
        print(f"{key:<23}: {value}")
    return 0
