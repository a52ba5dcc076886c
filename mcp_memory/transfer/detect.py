"""``mcp-memory import --format auto``: which format a path holds, from its name and first line."""

from __future__ import annotations

import json
from pathlib import Path

from mcp_memory.transfer.export import FORMAT
from mcp_memory.transfer.mcp_kg import KG_TYPES
from mcp_memory.transfer.mem0 import looks_like_mem0
from mcp_memory.transfer.notes import NOTE_SUFFIXES

__all__ = ["FORMATS", "detect_format"]

FORMATS = ("mcp-memory", "mcp-kg", "markdown", "mem0")
FIRST_LINE_CHARS = 4_000_000  # of the first line read; a longer line is cut, and read as JSON only if mem0


def detect_format(path: Path) -> str:
    """The format of ``path``, one of ``FORMATS``.

    A folder, or a .md/.markdown/.txt file, is ``markdown``. Otherwise the first non-blank line
    decides: our export header is ``mcp-memory``; an object whose ``type`` is ``entity`` or
    ``relation`` is ``mcp-kg``; a file that starts a JSON list, or is one JSON object with a list
    under ``results``, of objects holding ``memory`` (the first ten, read as a stream), is ``mem0``.
    Anything else is taken for ``mcp-memory``, whose reader then says what is wrong with line 1.

    Raises:
        OSError: the file cannot be read.
    """
    if path.is_dir() or path.suffix.lower() in NOTE_SUFFIXES:
        return "markdown"
    with path.open(encoding="utf-8-sig", errors="replace") as handle:  # -sig: a leading BOM is dropped
        pieces = iter(lambda: handle.readline(FIRST_LINE_CHARS), "")  # a one-line file is not read whole
        first = next((piece for piece in pieces if piece.strip()), "")
    stripped = first.strip()
    if stripped.startswith("["):
        return "mem0"
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        value = None
    if isinstance(value, dict):
        if value.get("format") == FORMAT:
            return "mcp-memory"
        if value.get("type") in KG_TYPES:
            return "mcp-kg"
    if stripped.startswith("{") and looks_like_mem0(path):  # reads up to its first ten memories
        return "mem0"
    return "mcp-memory"
