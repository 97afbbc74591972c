"""What ``spec.image`` names: a unikernel image file or an image description.

- A ``.toml`` file describes a real image (read on the controller, paths are
  on the host, relative ones resolved against the file's directory)::

      kernel = "nginx_qemu-x86_64"       # required
      initrd = "initramfs-x86_64.cpio"   # optional
      append = "vfs.fstab=..."           # kernel arguments
      cmd = ["/usr/bin/nginx"]           # the application's command (Kraftfile cmd)
      memory = "64M"                     # QEMU -m
      smp = 1
      machine = "pc"
      ports = [80]                       # guest ports, each published on a free 127.0.0.1 port
      ready = "Powered by"               # console regex meaning ready

- ``unikraft:<app>`` (``BUILT``) names a unikernel labtui builds from
  Unikraft's own source (build.py's recipes: ``helloworld``, ``sleeper``).
- Any other value is the path of a kernel image on the host, booted with the
  defaults above and ready on the Unikraft boot banner.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from labtui.backends.kit import BackendError, Host

from .helper import run_on
from .qemu import Launch

#: Unikraft's boot banners (lib/ukboot/banner.c): "Powered by" (the default
#: POWEREDBY variants and the one-liner "Powered by Unikraft ...") or the
#: classic "Welcome to" ASCII art.
UNIKRAFT_BANNER = r"^(Powered by|Welcome to  _ __)"
#: The prefix of an image built from Unikraft's source: ``unikraft:helloworld``.
BUILT = "unikraft:"
_KEYS = {"kernel": str, "initrd": str, "append": str, "cmd": list, "memory": str, "smp": int, "machine": str,
         "ports": list, "ready": str}
#: Where the Unikraft catalog (github.com/unikraft/catalog) defines the study's applications.
CATALOG = {"nginx": "library/nginx/1.25", "redis": "library/redis/7.2", "sqlite": "library/sqlite/3.44"}


def build_hint(image: str) -> str:
    """How to build the image a path names, for the error when it is missing."""
    app = next((name for name in CATALOG if name in Path(image).name.lower()), None)
    where = CATALOG[app] if app else "library/<app>/<version>"
    probe = " (its rootfs running labtui's sqlite probe)" if app == "sqlite" else ""
    return (
        f"build it with kraft{probe}: git clone https://github.com/unikraft/catalog && cd catalog/{where} && "
        "kraft build --plat qemu --arch x86_64, then describe the kernel and initramfs in a .toml image "
        "description (docs/backend-unikraft.md, 'Your own Unikraft images'); or point the suite at an existing "
        "one with --set worker.image=PATH --set background.image=PATH"
    )


def load_image(image: str) -> Launch:
    """The Launch for spec.image; BackendError naming the file and key when it is wrong."""
    if not image.endswith(".toml"):
        return Launch(kernel=image, ready=UNIKRAFT_BANNER)
    path = Path(image)
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise BackendError(f"unikraft image description {image} does not exist; {build_hint(image)}") from None
    except OSError as exc:
        raise BackendError(f"unikraft image description {image}: cannot read it: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BackendError(f"unikraft image description {image}: invalid TOML: {exc}") from exc
    for key, value in data.items():
        wanted = _KEYS.get(key)
        if wanted is None:
            raise BackendError(f"{image}: {key}: unknown key; known keys: {', '.join(_KEYS)}")
        if not isinstance(value, wanted) or isinstance(value, bool):
            raise BackendError(f"{image}: {key}: expected {wanted.__name__}, got {value!r}")
    if "kernel" not in data:
        raise BackendError(f"{image}: kernel: missing required key (the unikernel image to boot)")
    ports = data.get("ports", [])
    valid = all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports)
    if not valid or len(set(ports)) < len(ports):
        raise BackendError(f"{image}: ports: expected a list of distinct TCP ports 1-65535, got {ports!r}")
    cmd = data.get("cmd", [])
    if not all(isinstance(word, str) and word for word in cmd):
        raise BackendError(f"{image}: cmd: expected a list of non-empty strings, got {cmd!r}")
    ready = data.get("ready", UNIKRAFT_BANNER)
    try:
        re.compile(ready)
    except re.error as exc:
        raise BackendError(f"{image}: ready: bad regex {ready!r}: {exc}") from exc
    return Launch(
        kernel=_resolve(path, data["kernel"]),
        initrd=_resolve(path, data["initrd"]) if "initrd" in data else None,
        append=data.get("append", ""),
        memory=data.get("memory", "64M"),
        smp=data.get("smp", 1),
        machine=data.get("machine", "pc"),
        ports=tuple(ports),
        ready=ready,
        cmd=tuple(cmd),
    )


async def check_image(host: Host, image: str) -> Launch:
    """load_image, and the kernel and initrd it names exist on host; BackendError saying how to build them."""
    launch = load_image(image)
    for kind, path in (("kernel", launch.kernel), ("initrd", launch.initrd)):
        if path and not (await run_on(host, ["test", "-f", path], timeout=30.0)).ok:
            described = f" (from {image})" if image.endswith(".toml") else ""
            raise BackendError(
                f"unikraft image {kind} {path}{described} not found on host {host.name}; {build_hint(image)}"
            )
    return launch


def test_kernel_launch(name: str, kernel: str) -> Launch:
    """How a labtui test kernel boots: 8 MiB, microvm, ready on its own marker."""
    return Launch(kernel=kernel, memory="8M", machine="microvm", ready=f"labtui-kernel {re.escape(name)}: ready")


def _resolve(description: Path, value: str) -> str:
    return value if value.startswith("/") else str((description.parent / value).resolve())
