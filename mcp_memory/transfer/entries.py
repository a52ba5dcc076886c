"""What an import file holds: its format (``resolve_format``) and its entries, read as a stream
(``read_entries``), for ``mcp-memory import`` (importer.py).

Failure policy: a file that cannot be read, is not UTF-8, is not the format given or detected, or
names no session where its format needs one raises ``ConfigError`` with one line; a bad entry is an
entry (a ValueError in its place), never an error for the whole file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_memory.errors import ConfigError
from mcp_memory.transfer.detect import FIRST_LINE_CHARS, detect_format
from mcp_memory.transfer.export import FORMAT, VERSION
from mcp_memory.transfer.mcp_kg import kg_memories
from mcp_memory.transfer.mem0 import Mem0FileError, mem0_memories
from mcp_memory.transfer.notes import note_paragraphs
from mcp_memory.transfer.records import parse_line

__all__ = ["read_entries", "resolve_format"]


_NEEDS_SESSION = {"markdown": "notes name no session", "mcp-kg": "a knowledge graph names no session"}


def resolve_format(path: Path, fmt: str, session: str | None) -> str:
    """The format ``path`` is read as (``fmt``, or detected for ``auto``), once what needs no database
    holds: a session where the format names none, and an export's header line. ``run_import`` asks
    before it starts the database and the model, so a wrong file changes nothing.

    Raises:
        ConfigError: see ``import_file``.
    """
    try:
        detected = fmt == "auto"
        fmt = detect_format(path) if detected else fmt
        if fmt in _NEEDS_SESSION and session is None:
            raise ConfigError(f"--format {fmt} needs --session: {_NEEDS_SESSION[fmt]}")
        if fmt == "mcp-memory":
            with path.open(encoding="utf-8-sig") as handle:
                if first := handle.readline(FIRST_LINE_CHARS):  # an empty file is said so when read
                    _check_header(path, first, detected)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc})") from None
    return fmt


def read_entries(path: Path, fmt: str, session: str | None) -> tuple[int, Iterator[tuple[int | str, Any]]]:
    """How many entries, and (line number or ``path:line``, value) per memory of ``path`` read as
    ``fmt``: the memory in the export's line shape, a ValueError for a bad line, None for a blank one.

    Every format is read as a stream (an export or a graph line by line, mem0's JSON by an
    incremental parser, notes line by line), so memory holds one entry at a time, not the file.
    The count is a first pass over the file (lines of an export; the entries themselves otherwise),
    which also finds a mem0 file that is not JSON before anything is stored.

    Raises:
        ConfigError: see ``import_file``.
    """
    fmt = resolve_format(path, fmt, session)
    try:
        if fmt == "mcp-memory":
            with path.open("rb") as counting:
                total = max(sum(1 for _ in counting) - 1, 0)
            return total, _export_entries(path)

        def read() -> Iterator[tuple[int | str, Any]]:
            if fmt == "mem0":
                return mem0_memories(path, session)
            assert session is not None
            return (note_paragraphs if fmt == "markdown" else kg_memories)(path, session)

        total = sum(1 for _ in read())
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc})") from None
    except Mem0FileError as exc:
        raise ConfigError(f"{path}: not a mem0 export: {exc}") from None
    return total, read()


def _export_entries(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, JSON value) per memory line of an export; None for a blank line, a
    ValueError for a line that is not JSON.

    Raises:
        ConfigError: the file is empty, not UTF-8, or its first line is not an export header.
    """
    number = 0
    with path.open(encoding="utf-8-sig") as handle:  # -sig: a leading BOM is dropped
        for number, raw in enumerate(_read(handle, path), 1):
            if number == 1:
                _check_header(path, raw)
            elif not raw.strip():
                yield number, None
            else:
                try:
                    yield number, parse_line(raw)
                except ValueError as exc:
                    yield number, exc
    if number == 0:
        raise ConfigError(f"{path}: empty file; an export starts with its header line")


def _read(handle: Any, path: Path) -> Iterator[str]:
    try:
        yield from handle
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc})") from None


def _check_header(path: Path, first: str, detected: bool = False) -> None:
    """Raise ConfigError unless ``first`` is an export header of our version; ``detected``: the format was
    guessed (``--format auto``), so the message names every format import reads."""
    try:
        header = json.loads(first)
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        if detected:
            raise ConfigError(f"{path}: not a format import reads: line 1 is no mcp-memory export header, mcp-kg "
                              "entity or relation, or mem0 list of memories, and notes need a .md, .markdown or "
                              ".txt name or a folder (or give --format)")
        raise ConfigError(f"{path}: line 1 is not an mcp-memory export header (written by mcp-memory export)")
    if header.get("version") != VERSION:
        raise ConfigError(f"{path}: export format version {header.get('version')!r}; this mcp-memory reads {VERSION}")
