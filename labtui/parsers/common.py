"""What every parser returns: readings, and the error it raises."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Better = Literal["higher", "lower"]


class ParseError(ValueError):
    """Text is not the output a parser expects; the message says what is missing."""


@dataclass(frozen=True, slots=True)
class Reading:
    """One measured value, as a labtui result records it."""

    benchmark: str
    metric: str
    value: float
    unit: str
    better: Better


def number(text: str, what: str) -> float:
    """text as a float, or a ParseError naming what it was meant to be."""
    try:
        return float(text)
    except ValueError:
        raise ParseError(f"{what}: expected a number, got {text!r}") from None
