"""Root file systems for Unikraft's ELF loader, from the host's own Linux binaries.

app-elfloader runs unmodified Linux programs from its initrd, so an app here
is a Debian binary (``nginx-light``'s nginx, ``redis-server``) plus every
library ``ldd`` names for it, the dynamic loader among them, and a few
config files.  The files are read on the host, packed on the controller as a
newc cpio archive (no cpio tool needed) and installed in the build cache as
``{cache}/{name}-rootfs-{digest}.cpio``, the digest covering the app's
definition and the sha256 of every file taken from the host.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import stat
import tempfile
import weakref
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from labtui.backends.kit import Host, HostError, ProgramUnavailable

from .build import cache_dir

#: nginx in one process, logging to the console (lwIP has no socketpair, Unikraft no eventfd: nginx logs
#: both and serves anyway), temp files in /tmp, one static page.
NGINX_CONF = """daemon off;
master_process off;
worker_processes 1;
user root root;
error_log stderr notice;
pid /tmp/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path /tmp/body;
    proxy_temp_path /tmp/proxy;
    fastcgi_temp_path /tmp/fastcgi;
    uwsgi_temp_path /tmp/uwsgi;
    scgi_temp_path /tmp/scgi;
    server { listen 80; location / { root /www; } }
}
"""


@dataclass(frozen=True, slots=True)
class App:
    """A Linux server the ELF loader runs: its binary on the host, command, files, port and ready line."""

    binary: str
    package: str
    cmd: tuple[str, ...]
    port: int
    #: Console regex (POSIX ERE) of the server's own line once it listens.
    ready: str
    files: tuple[tuple[str, str], ...] = ()
    dirs: tuple[str, ...] = ("tmp",)
    memory: str = "256M"
    #: Library parameters before the command: the guest's address on QEMU's user network.
    append: str = field(default="netdev.ip=10.0.2.15/24:10.0.2.2")


APPS = {
    # ngx_os_status logs getrlimit after the listening sockets are open.
    "nginx": App("/usr/sbin/nginx", "nginx-light", ("/usr/sbin/nginx", "-c", "/etc/nginx/nginx.conf"), 80,
                 r"\[notice\] [0-9]+#[0-9]+: getrlimit\(RLIMIT_NOFILE\)",
                 files=(("etc/nginx/nginx.conf", NGINX_CONF), ("www/index.html", "hello from nginx on Unikraft\n"),
                        ("etc/passwd", "root:x:0:0:root:/:/bin/false\n"), ("etc/group", "root:x:0:\n"))),
    "redis": App("/usr/bin/redis-server", "redis-server",
                 # no RDB snapshots: they fork, which Unikraft cannot, and a failed one stops writes
                 ("/usr/bin/redis-server", "--port", "6379", "--protected-mode", "no", "--save", ""), 6379,
                 "Ready to accept connections"),
}

# Every file the binary needs, as "path<TAB>sha256": the binary, then what ldd names (the loader included).
_LIST = r"""
set -e
[ -x "$1" ] || { echo "missing"; exit 0; }
{ echo "$1"; ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'; } | sort -u |
while read -r path; do printf '%s\t%s\n' "$path" "$(sha256sum < "$path" | cut -d' ' -f1)"; done
ldd "$1" | grep 'not found' | sed 's/^/unresolved /' || true
"""

_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[int, str], asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


def app(name: str) -> App:
    """The app called name; ProgramUnavailable naming the known ones."""
    if name not in APPS:
        raise ProgramUnavailable(f"unknown ELF loader app {name!r}; labtui packs: {', '.join(APPS)}")
    return APPS[name]


async def ensure_rootfs(host: Host, name: str) -> str:
    """The path on host of app name's initrd, packed from the host's binaries on first use."""
    wanted = app(name)
    per_loop = _locks.setdefault(asyncio.get_running_loop(), {})
    async with per_loop.setdefault((id(host), name), asyncio.Lock()):
        files = await _host_files(host, name, wanted)
        digest = hashlib.sha256(repr((wanted, files)).encode()).hexdigest()[:12]
        cpio = f"{await cache_dir(host)}/{name}-rootfs-{digest}.cpio"
        if not (await host.run(["test", "-f", cpio])).ok:
            await _pack(host, wanted, [path for path, _ in files], cpio)
        return cpio


async def _host_files(host: Host, name: str, wanted: App) -> list[tuple[str, str]]:
    listed = await _run(host, ["sh", "-c", _LIST, "sh", wanted.binary], f"list the files of {wanted.binary}")
    lines = listed.splitlines()
    if lines == ["missing"]:
        raise ProgramUnavailable(f"Unikraft app {name!r} runs the host's {wanted.binary}, which host {host.name} "
                                 f"lacks: install {wanted.package}")
    unresolved = [line.split(" ", 1)[1].strip() for line in lines if line.startswith("unresolved ")]
    if unresolved:
        raise ProgramUnavailable(f"{wanted.binary} on host {host.name}: ldd finds no {unresolved[0]}")
    return [(path, digest) for path, digest in (line.split("\t") for line in lines)]


async def _pack(host: Host, wanted: App, paths: list[str], cpio: str) -> None:
    """Fetch paths from host, write the cpio archive here, install it on host atomically."""
    partial = f"{cpio}.{secrets.token_hex(4)}"
    with tempfile.TemporaryDirectory(prefix="labtui-rootfs-") as local:
        contents: dict[str, bytes] = {}
        for i, path in enumerate(paths):
            copy = Path(local) / str(i)
            await host.get_file(path, str(copy))
            contents[path.lstrip("/")] = copy.read_bytes()
        for path, text in wanted.files:
            contents[path] = text.encode()
        archive = Path(local) / "rootfs.cpio"
        archive.write_bytes(newc(contents, wanted.dirs))
        await _run(host, ["mkdir", "-p", cpio.rsplit("/", 1)[0]], "make the cache directory")
        await host.put_file(str(archive), partial)
    await _run(host, ["mv", "-f", partial, cpio], "install the initrd")


def newc(files: dict[str, bytes], dirs: tuple[str, ...] = ()) -> bytes:
    """A newc ("070701") cpio archive of files (relative path: contents, mode 0755), their parent
    directories and the empty directories dirs (mode 1777)."""
    parents = {str(parent) for path in files for parent in PurePosixPath(path).parents if str(parent) != "."}
    entries = [(d, stat.S_IFDIR | 0o755, b"") for d in sorted(parents - set(dirs))]
    entries += [(d, stat.S_IFDIR | 0o1777, b"") for d in dirs]
    entries += [(path, stat.S_IFREG | 0o755, data) for path, data in sorted(files.items())]
    entries.append(("TRAILER!!!", 0, b""))
    out = bytearray()
    for inode, (name, mode, data) in enumerate(entries, 1):
        encoded = name.encode() + b"\0"
        fields = (inode, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        out += b"070701" + b"".join(b"%08X" % value for value in fields) + encoded
        out += b"\0" * (-len(out) % 4) + data + b"\0" * (-len(data) % 4)
    return bytes(out)


async def _run(host: Host, argv: list[str], what: str) -> str:
    try:
        return (await host.run(argv, timeout=120.0)).check().stdout
    except HostError as exc:
        raise ProgramUnavailable(f"host {host.name}: cannot {what}: {exc}") from exc
