"""A folder of Markdown or text notes as memories: one memory per paragraph.

A paragraph is a run of non-blank lines; Markdown headings (``#`` .. ``######``) are not memories
but name the paragraphs under them. Each memory gets the file's path (relative to the folder)
and the nearest heading above it in metadata, and the file's modification time as occurred_at.
Its memory_id is derived from the session, path and text (UUID 5), so importing the same notes
again finds the same ids and stores nothing new. Blank lines inside a fenced code block split it
like any other paragraph.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Iterator
from itertools import chain
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["NOTE_SUFFIXES", "note_paragraphs"]

logger = logging.getLogger(__name__)

NOTE_SUFFIXES = frozenset({".md", ".markdown", ".txt"})
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_IDS = uuid.UUID("8d3f5a52-7b0e-4f43-9a59-5f0b3c1f6e21")  # the namespace of note memory_ids


def _files(root: Path) -> list[tuple[Path, str]]:
    """The note files under ``root``; a link to a file outside ``root`` is skipped with a warning
    (a folder from elsewhere may link ``notes.md`` to a secret; rglob does not enter linked folders)."""
    if root.is_file():
        return [(root, root.name)]
    inside = root.resolve()
    files = []
    for file in sorted(root.rglob("*")):
        if not file.is_file() or file.suffix.lower() not in NOTE_SUFFIXES:
            continue
        name = file.relative_to(root).as_posix()
        if not file.resolve().is_relative_to(inside):
            logger.warning("skipping %s: it links to a file outside %s", name, root)
            continue
        files.append((file, name))
    return files


def note_paragraphs(root: Path, session: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(``path:line``, memory in the export's line shape) per paragraph of the notes under ``root``.

    Raises:
        OSError: a file cannot be read. Bytes that are not UTF-8 are replaced (U+FFFD).
    """
    for file, name in _files(root):
        occurred_at = datetime.fromtimestamp(file.stat().st_mtime, UTC).isoformat()
        with file.open(encoding="utf-8", errors="replace") as handle:  # line by line: a big file is not read whole
            yield from _paragraphs(name, session, occurred_at, (raw.rstrip("\r\n") for raw in handle))


def _paragraphs(name: str, session: str, occurred_at: str, lines: Iterator[str]
                ) -> Iterator[tuple[str, dict[str, Any]]]:
    """The paragraphs of one note file, given as its lines without their line ends."""
    heading: str | None = None
    block: list[str] = []
    start = 0
    for number, line in enumerate(chain(lines, [""]), 1):
        title = _HEADING.match(line)
        if title is None and line.strip():
            start = start if block else number
            block.append(line)
            continue
        if block:
            content = "\n".join(block).strip()
            yield f"{name}:{start}", {
                "memory_id": str(uuid.uuid5(_IDS, f"{session}\n{name}\n{content}")),
                "session": session,
                "content": content,
                "occurred_at": occurred_at,
                "metadata": {"path": name, "heading": heading},
            }
            block = []
        if title is not None:
            heading = title.group(2)
