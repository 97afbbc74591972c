"""Service images without a registry: ``labtui/nginx`` and ``labtui/redis`` FROM scratch.

Each image holds the host's installed server binary at its own path, every
shared library ``ldd`` says it loads (the dynamic loader included) at theirs,
minimal ``/etc/passwd`` and ``/etc/group`` entries and the service's
configuration.  Nothing is downloaded: when the binary is not installed on the
host the image cannot be built and ``ServiceUnavailable`` says which package
to install.  Images carry ``labtui.source=<digest>`` of the binaries' and
libraries' sha256 sums and the configuration, so an upgraded package or an
edited configuration gets a fresh build.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import posixpath
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from labtui.backends.kit import BackendError, HostError

from .images import IMAGE_PREFIX, BuiltImage, current_image, post_build
from .toolbox import ldd_paths

if TYPE_CHECKING:
    from labtui.backends.kit import CommandResult, Host

    from .engine import Engine


class ServiceUnavailable(BackendError):
    """A service image cannot be built on this host (its server is not installed); the message says why."""


@dataclass(frozen=True, slots=True)
class Service:
    """A server packed into an image: its binary's name, the Debian packages that install it,
    the command it runs, the TCP port it serves and its config files (path in the image, text)."""

    name: str
    binary: str
    packages: str
    cmd: tuple[str, ...]
    port: int
    files: tuple[tuple[str, str], ...] = ()


NGINX_CONF = """\
user nobody nogroup;
worker_processes auto;
daemon off;
pid /tmp/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
    access_log off;
    default_type text/html;
    sendfile on;
    keepalive_timeout 65;
    client_body_temp_path /tmp/client_body;
    proxy_temp_path /tmp/proxy;
    fastcgi_temp_path /tmp/fastcgi;
    uwsgi_temp_path /tmp/uwsgi;
    scgi_temp_path /tmp/scgi;
    server {
        listen 80;
        root /usr/share/nginx/html;
        index index.html;
    }
}
"""
INDEX_HTML = "<!doctype html>\n<html><head><title>labtui</title></head><body><p>labtui nginx</p></body></html>\n"
PASSWD = "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"
NSSWITCH = "passwd: files\ngroup: files\nhosts: files\n"

SERVICES = {
    "nginx": Service(
        "nginx", "nginx", "nginx-light or nginx",
        ("/usr/sbin/nginx", "-e", "stderr", "-c", "/etc/nginx/nginx.conf"), 80,
        files=(("etc/nginx/nginx.conf", NGINX_CONF), ("usr/share/nginx/html/index.html", INDEX_HTML)),
    ),
    "redis": Service(
        "redis", "redis-server", "redis-server",
        ("/usr/bin/redis-server", "--save", "", "--appendonly", "no", "--protected-mode", "no",
         "--bind", "0.0.0.0", "--port", "6379"), 6379,
    ),
}


def service_image(service: str) -> str:
    """The image name of a service: ``labtui/<service>``."""
    return f"{IMAGE_PREFIX}{service}"


def managed_service(image: str) -> str | None:
    """The service a ``labtui/nginx`` or ``labtui/redis`` (``:latest``) image name stands for, else None."""
    name = image.removesuffix(":latest")
    if name.startswith(IMAGE_PREFIX) and name[len(IMAGE_PREFIX):] in SERVICES:
        return name[len(IMAGE_PREFIX):]
    return None


class ServiceBuilder:
    """Builds and caches the service images on one engine from one host's installed servers."""

    def __init__(self, host: Host, engine: Engine) -> None:
        self.host = host
        self.engine = engine
        self._ready: set[str] = set()
        self._lock = asyncio.Lock()

    async def ensure(self, service: str, *, force: bool = False) -> BuiltImage:
        """Make sure ``labtui/<service>`` exists and matches the host's binaries; build it when not.

        ServiceUnavailable when the server is not installed on the host.
        """
        spec = SERVICES[service]
        name = service_image(service)
        async with self._lock:
            binary = await self._locate(spec)
            libraries = ldd_paths((await self._run(["ldd", binary], f"ldd {binary}")).stdout)
            sums = (await self._run(["sha256sum", binary, *libraries], "sha256sum")).stdout
            digest = hashlib.sha256("\n".join([sums, repr(spec)]).encode()).hexdigest()[:16]
            current = None if force else await current_image(self.engine, name, digest)
            built = current is None
            if built:
                context = await self._context(spec, binary, libraries)
                await post_build(self.engine, name, context, digest)
                current = await self.engine.call(f"inspecting image {name}", "GET", f"images/{name}/json")
            self._ready.add(name)
            return BuiltImage(name, current["Id"], int(current.get("Size", 0)), built=built)

    async def ensure_cached(self, service: str) -> str:
        """The image name of service, ensured once per builder."""
        name = service_image(service)
        if name not in self._ready:
            await self.ensure(service)
        return name

    async def _locate(self, spec: Service) -> str:
        """The absolute path of the service's binary on the host (the sbin directories searched too)."""
        script = 'PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"; command -v "$1"'
        try:
            found = await self.host.run(["sh", "-c", script, "sh", spec.binary], timeout=30.0)
        except HostError as exc:
            raise BackendError(f"docker on host {self.host.name}: looking for {spec.binary}: {exc}") from exc
        path = found.stdout.strip()
        if not found.ok or not path.startswith("/"):
            raise ServiceUnavailable(
                f"{service_image(spec.name)}: {spec.binary} is not installed on host {self.host.name} "
                f"(Debian: apt-get install {spec.packages})"
            )
        return path

    async def _run(self, argv: list[str], what: str) -> CommandResult:
        try:
            return (await self.host.run(argv, timeout=60.0)).check()
        except HostError as exc:
            raise BackendError(f"docker on host {self.host.name}: {what}: {exc}") from exc

    async def _context(self, spec: Service, binary: str, libraries: list[str]) -> bytes:
        """The tar build context: rootfs/ with the binary, libraries, config, users; and a Dockerfile."""
        files: dict[str, tuple[bytes, int]] = {}
        with tempfile.TemporaryDirectory(prefix="labtui-service-") as tmp:
            for index, remote in enumerate([binary, *libraries]):
                local = Path(tmp) / str(index)
                try:
                    await self.host.get_file(remote, str(local))
                except HostError as exc:
                    raise BackendError(f"docker on host {self.host.name}: copying {remote}: {exc}") from exc
                files[remote.lstrip("/")] = (local.read_bytes(), 0o755)
        # The command names the binary at its usual path; the host may keep it elsewhere.
        files[spec.cmd[0].lstrip("/")] = files[binary.lstrip("/")]
        files.update({path: (text.encode(), 0o644) for path, text in spec.files})
        files.update({"etc/passwd": (PASSWD.encode(), 0o644), "etc/group": (GROUP.encode(), 0o644),
                      "etc/nsswitch.conf": (NSSWITCH.encode(), 0o644)})
        library_dirs = sorted({posixpath.dirname(p) for p in libraries})
        return service_context(files, spec, library_dirs)


def service_context(files: dict[str, tuple[bytes, int]], spec: Service, library_dirs: list[str]) -> bytes:
    """A tar build context: ``rootfs/`` (files, a world-writable /tmp) and a Dockerfile copying it onto scratch."""
    cmd = ", ".join(f'"{part}"' for part in spec.cmd)
    dockerfile = "\n".join([
        "FROM scratch",
        "COPY rootfs/ /",
        f"ENV LD_LIBRARY_PATH={':'.join(library_dirs)}",
        f"EXPOSE {spec.port}/tcp",
        f"CMD [{cmd}]",
        "",
    ]).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        _add(tar, "Dockerfile", dockerfile, 0o644)
        tmp = tarfile.TarInfo("rootfs/tmp")
        tmp.type, tmp.mode = tarfile.DIRTYPE, 0o1777
        tar.addfile(tmp)
        for path, (data, mode) in sorted(files.items()):
            _add(tar, f"rootfs/{path}", data, mode)
    return buffer.getvalue()


def _add(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))
