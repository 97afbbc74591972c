"""The frames between a run and its store process: a 4-byte big-endian length, then a pickle."""

from __future__ import annotations

import pickle
import struct
from typing import IO, Any

#: A frame's head: the length of the pickle after it.
HEAD = struct.Struct(">I")


def encode(value: Any) -> bytes:
    """One frame holding value."""
    body = pickle.dumps(value)
    return HEAD.pack(len(body)) + body


def decode(body: bytes) -> Any:
    """The value of a frame's body (what follows its head)."""
    return pickle.loads(body)


def read_frame(stream: IO[bytes]) -> Any:
    """The next frame's value on a blocking stream; None when the stream has ended."""
    head = stream.read(HEAD.size)
    if len(head) < HEAD.size:
        return None
    return decode(stream.read(HEAD.unpack(head)[0]))


def write_frame(stream: IO[bytes], value: Any) -> None:
    """Send one frame on a blocking stream."""
    stream.write(encode(value))
    stream.flush()
