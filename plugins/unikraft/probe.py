"""Does Unikraft boot under KVM on this host?  Decided by a real boot of Unikraft's hello world.

labtui's test kernels boot wherever /dev/kvm works, but Unikraft's own entry
code may not: under nested KVM without unrestricted guest support KVM
emulates its 32-bit entry and stops in a "KVM internal error" (an emulation
failure on ``ldmxcsr``), and QEMU refuses ``-cpu max``/``-cpu host`` there.
So the unikraft backend boots Unikraft's hello world (built from source,
build.py) once under KVM: ready on "Hello world!" means KVM, anything else
TCG.  The answer is cached beside the kernel, keyed by QEMU's version and the
host's kernel, so a host probes once per build.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from labtui.backends.kit import BackendError, Host, HostError

from .qemu import DEBUG_EXIT, QEMU

#: Seconds the probe boot may take before KVM counts as not working.
PROBE_TIMEOUT_S = 10.0
#: The hello world's own line on the console.
HELLO = "Hello world!"

# Boot under KVM with the console in a file; stop at the hello line, QEMU's
# exit, a KVM internal error (QEMU then stays paused) or the timeout.
_SCRIPT = r"""
qemu=$1; kernel=$2; ticks=$3; dir=$(mktemp -d)
"$qemu" -accel kvm -m 16M -display none -nodefaults -no-reboot -device "$4" -serial "file:$dir/console" \
    -kernel "$kernel" >"$dir/err" 2>&1 &
pid=$!; i=0
while kill -0 "$pid" 2>/dev/null && [ "$i" -lt "$ticks" ]; do
    grep -q "internal error" "$dir/err" && break
    grep -q "^Hello world!" "$dir/console" 2>/dev/null && break
    sleep 0.05; i=$((i + 1))
done
kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
cat "$dir/console"; echo "--- qemu:"; cat "$dir/err"; rm -rf "$dir"
"""


@dataclass(frozen=True, slots=True)
class Verdict:
    """The accelerator Unikraft boots with here, and why."""

    accel: str
    why: str

    def line(self) -> str:
        """The cached form: accel, a tab, why."""
        return f"{self.accel}\t{self.why}\n"


async def kvm_verdict(host: Host, kernel: str) -> Verdict:
    """KVM when kernel (Unikraft's hello world) prints its line under KVM, else TCG; cached beside kernel."""
    versions = await _run(host, ["sh", "-c", f"{QEMU} --version | head -n 1; uname -r"])
    cached = f"{kernel}.kvm-{hashlib.sha256(versions.encode()).hexdigest()[:12]}"
    known = await host.run(["cat", cached])
    if known.ok and "\t" in known.stdout:
        accel, why = known.stdout.strip("\n").split("\t", 1)
        return Verdict(accel, why)
    verdict = await probe(host, kernel)
    await _run(host, ["sh", "-c", 'cat > "$1.$$" && mv -f "$1.$$" "$1"', "sh", cached], verdict.line().encode())
    return verdict


async def probe(host: Host, kernel: str) -> Verdict:
    """Boot kernel once under KVM now and judge by its console."""
    ticks = str(int(PROBE_TIMEOUT_S / 0.05))
    output = await _run(host, ["sh", "-c", _SCRIPT, "sh", QEMU, kernel, ticks, DEBUG_EXIT], timeout=PROBE_TIMEOUT_S + 30)
    console, _, errors = output.partition("--- qemu:\n")
    if any(line.startswith(HELLO) for line in console.splitlines()):
        return Verdict("kvm", "Unikraft's hello world booted under KVM")
    problems = [line.strip() for line in errors.splitlines() if line.strip() and "warning" not in line]
    failure = next((p for p in problems if "error" in p.lower()), problems[0] if problems else "")
    detail = failure or f"no {HELLO!r} on the console within {PROBE_TIMEOUT_S:g} s"
    return Verdict("tcg", f"Unikraft's hello world does not boot under KVM here ({detail})")


async def _run(host: Host, argv: list[str], input: bytes | None = None, timeout: float = 60.0) -> str:
    try:
        return (await host.run(argv, input=input, timeout=timeout)).check().stdout
    except HostError as exc:
        raise BackendError(f"unikraft backend on host {host.name}: KVM probe boot: {exc}") from exc
