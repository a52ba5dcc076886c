"""Lone surrogates in a JSON message: where the first one is, and how to say so in one line.

A JSON string may escape half of a UTF-16 surrogate pair (``"x \\ud83d y"``): valid JSON, and what
a JavaScript client sends when it cuts an emoji in half, but no Unicode text. The SDK's parser
refuses the whole message; Python's keeps it, so jsonrpc.py can answer the request, by its id,
naming the field (``content: lone surrogate at character 2 ...``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Unpaired", "first_unpaired", "read_keeping_surrogates"]

_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Unpaired:
    """Where a message holds a lone surrogate: member names and list indexes from its root."""

    path: tuple[str | int, ...]
    index: int  # the character's position in its string, counted in code points from 0
    char: str
    in_name: bool  # in a member's name (the last part of path), not in a value

    def where(self, skip: int = 0) -> str:
        """The path from its ``skip``-th part, dot-joined (``metadata.note``, ``supersedes.0``, as
        argument errors name fields); a name holding the surrogate shows it escaped."""
        return ".".join(str(part).encode("utf-8", "backslashreplace").decode() for part in self.path[skip:])

    def problem(self) -> str:
        """What is wrong and what to do, for after ``<field>: ``."""
        of = " of the name" if self.in_name else ""
        return (f"lone surrogate at character {self.index}{of} (U+{ord(self.char):04X}, half of a UTF-16 pair); "
                "send whole characters")


def first_unpaired(value: Any, path: tuple[str | int, ...] = ()) -> Unpaired | None:
    """The first lone surrogate in a decoded JSON value, names before values, in document order."""
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        return None if found is None else Unpaired(path, found.start(), found.group(), False)
    if isinstance(value, dict):
        for key, item in value.items():
            if found := _SURROGATE.search(key):
                return Unpaired((*path, key), found.start(), found.group(), True)
            if (inner := first_unpaired(item, (*path, key))) is not None:
                return inner
    elif isinstance(value, list):
        for number, item in enumerate(value):
            if (inner := first_unpaired(item, (*path, number))) is not None:
                return inner
    return None


def read_keeping_surrogates(body: bytes | str) -> tuple[Any, Unpaired] | None:
    """``body`` read by Python's parser, which keeps lone surrogates, and the first one; None when it
    fails there too or holds none (the SDK's parser refused it for another reason)."""
    try:
        decoded = json.loads(body)
        unpaired = first_unpaired(decoded)
    except (ValueError, RecursionError):
        return None
    return None if unpaired is None else (decoded, unpaired)
