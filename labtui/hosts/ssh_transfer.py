"""File transfer over a plain SSH exec channel, for hosts whose sshd refuses the SFTP subsystem.

Hardened hosts often drop ``Subsystem sftp``; every sshd still runs commands.
A put streams the file into ``cat`` on the host, written to a temporary name
next to the destination (created under umask 077), checks its size and, where
the host has ``sha256sum`` or ``digest``, its SHA-256, then applies the mode and
renames it over the destination: the same steps and permissions as the SFTP
path.  A get prints the size, the bytes and the SHA-256; the controller writes
them to a temporary name, checks both and renames.

Both scripts run as ``sh -c SCRIPT sh ARGS...``: every path is an argument,
never part of the script.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import asyncssh

#: Bytes per write to the channel (asyncssh applies the window; drain() waits for room).
CHUNK = 64 * 1024

#: A shell function printing the SHA-256 of stdin, or nothing when the host has no tool for it.
_SHA256 = r"""sha() {
  if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum) && printf '%s\n' "${h%% *}"
  elif command -v digest >/dev/null 2>&1; then digest -a sha256
  elif command -v shasum >/dev/null 2>&1; then h=$(shasum -a 256) && printf '%s\n' "${h%% *}"
  fi
}
"""

#: $1 destination, $2 temporary name, $3 size, $4 sha256 (hex), $5 mode (octal).
PUT_SCRIPT = _SHA256 + r"""dest=$1 tmp=$2
mkdir -p -- "$(dirname -- "$dest")" || exit 1
fail() { rm -f -- "$tmp"; printf '%s\n' "$*" >&2; exit 1; }
(umask 077 && cat >"$tmp") || fail "cannot write $tmp"
n=$(wc -c <"$tmp") || fail "cannot read back $tmp"
n=$((n + 0))
[ "$n" -eq "$3" ] || fail "size check failed: $n of $3 bytes arrived"
h=$(sha <"$tmp")
[ -z "$h" ] || [ "$h" = "$4" ] || fail "SHA-256 check failed: $h, sent $4"
chmod "$5" "$tmp" || fail "cannot chmod $5 $tmp"
mv -f -- "$tmp" "$dest" || fail "cannot rename $tmp to $dest"
"""

#: $1 the file: its size on a line, its bytes, then ``H <sha256>`` on stderr (when the host can).
GET_SCRIPT = _SHA256 + r"""f=$1
[ -f "$f" ] || { printf '%s: No such file or not a regular file\n' "$f" >&2; exit 1; }
n=$(wc -c <"$f") || exit 1
printf '%s\n' $((n + 0))
cat <"$f" || exit 1
h=$(sha <"$f") && [ -n "$h" ] && printf 'H %s\n' "$h" >&2
exit 0
"""


class TransferError(Exception):
    """The exec transfer failed (the message says why)."""


def sha256_of(path: str) -> tuple[int, str]:
    """Size and SHA-256 (hex) of a local file."""
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def safe_path(path: str) -> str:
    """path, so that no command takes it for an option (a relative path starting with '-')."""
    return f"./{path}" if path.startswith("-") else path


async def send(proc: asyncssh.SSHClientProcess, local_path: str) -> None:
    """Stream local_path into a started PUT_SCRIPT process, then wait for it; TransferError on failure."""
    with open(local_path, "rb") as f:
        try:
            while chunk := f.read(CHUNK):
                proc.stdin.write(chunk)
                await proc.stdin.drain()
            proc.stdin.write_eof()
        except (asyncssh.Error, BrokenPipeError, ConnectionError):
            pass  # the script ended early (its stderr says why) or the connection went (no exit status)
    err = await proc.stderr.read()
    await proc.wait_closed()
    if proc.returncode != 0:
        detail = err.decode(errors="replace").strip() or f"exit {proc.returncode}"
        raise TransferError(detail.splitlines()[-1])


async def receive(proc: asyncssh.SSHClientProcess, partial: str) -> None:
    """Read a started GET_SCRIPT process's output into partial, checking size and hash; TransferError on failure."""
    errors = asyncio.ensure_future(proc.stderr.read())
    try:
        line = await proc.stdout.readline()
        try:
            size = int(line)
        except ValueError:
            await proc.wait_closed()
            detail = (await errors).decode(errors="replace").strip()
            raise TransferError(detail.splitlines()[-1] if detail else f"exit {proc.returncode}") from None
        digest = hashlib.sha256()
        left = size
        with open(partial, "wb") as f:
            while left:
                chunk = await proc.stdout.read(min(left, 1 << 20))
                if not chunk:
                    break
                f.write(chunk)
                digest.update(chunk)
                left -= len(chunk)
        extra = await proc.stdout.read()
        await proc.wait_closed()
        err = (await errors).decode(errors="replace")
    finally:
        errors.cancel()
    if left or extra:
        raise TransferError(f"size check failed: {size - left + len(extra)} bytes arrived, {size} announced "
                            "(the file changed while it was copied?)")
    if proc.returncode != 0:
        detail = err.strip()
        raise TransferError(detail.splitlines()[-1] if detail else f"exit {proc.returncode}")
    remote_hash = next((w[2:].strip() for w in err.splitlines() if w.startswith("H ")), "")
    if remote_hash and remote_hash != digest.hexdigest():
        raise TransferError(f"SHA-256 check failed: received {digest.hexdigest()}, the host has {remote_hash}")


def remove_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def local_parent(path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
