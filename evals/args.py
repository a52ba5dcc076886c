"""Argument types shared by the evaluation runners."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["bounded_int"]


def bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer in ``low..high`` (no upper bound when ``high`` is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"{low}..{high}" if high is not None else f">= {low}"
            raise argparse.ArgumentTypeError(f"must be {bound}; got {value}")
        return value

    return parse
