"""Parsers for benchmark output: labtui's own probes and real tools.

One small module per tool, each with pure functions from text to typed
readings; none runs anything.  A parser raises ``ParseError`` naming what it
could not read.
"""

from labtui.parsers.common import ParseError, Reading

__all__ = ["ParseError", "Reading"]
