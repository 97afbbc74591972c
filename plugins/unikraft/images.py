"""What ``spec.image`` names: a unikernel image file or an image description.

- A ``.toml`` file describes a real image (read on the controller, paths are
  on the host, relative ones resolved against the file's directory)::

      kernel = "nginx_qemu-x86_64"       # required
      initrd = "nginx-rootfs.cpio"       # optional
      append = "netdev.ip=10.0.2.15/24:10.0.2.2 vfs.fstab=..."  # kernel arguments
      memory = "64M"                     # QEMU -m
      smp = 1
      machine = "pc"
      ports = [8080]                     # 127.0.0.1:8080 on the host -> guest 8080
      ready = "Powered by"               # console regex meaning ready

- Any other value is the path of a kernel image on the host, booted with the
  defaults above and ready on the Unikraft boot banner.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from labtui.backends import BackendError

from .qemu import Launch

#: Unikraft's boot banners (lib/ukboot/banner.c): "Powered by" (the default
#: POWEREDBY variants and the one-liner "Powered by Unikraft ...") or the
#: classic "Welcome to" ASCII art.
UNIKRAFT_BANNER = r"^(Powered by|Welcome to  _ __)"
_KEYS = {"kernel": str, "initrd": str, "append": str, "memory": str, "smp": int, "machine": str,
         "ports": list, "ready": str}


def load_image(image: str) -> Launch:
    """The Launch for spec.image; BackendError naming the file and key when it is wrong."""
    if not image.endswith(".toml"):
        return Launch(kernel=image, ready=UNIKRAFT_BANNER)
    path = Path(image)
    try:
        data = tomllib.loads(path.read_text())
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
    if not all(isinstance(p, int) and not isinstance(p, bool) and 0 < p < 65536 for p in ports):
        raise BackendError(f"{image}: ports: expected a list of TCP ports 1-65535, got {ports!r}")
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
    )


def test_kernel_launch(name: str, kernel: str) -> Launch:
    """How a labtui test kernel boots: 8 MiB, microvm, ready on its own marker."""
    return Launch(kernel=kernel, memory="8M", machine="microvm", ready=f"labtui-kernel {re.escape(name)}: ready")


def _resolve(description: Path, value: str) -> str:
    return value if value.startswith("/") else str((description.parent / value).resolve())
