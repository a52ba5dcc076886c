"""mem0's memories, as its ``get_all`` returns them and people save them, as memories.

The shape is mem0's documented ``get_all`` output (docs.mem0.ai, "Get Memories"; ``MemoryItem``
in mem0/memory/main.py): a JSON file holding either a list of memories (API v1) or an object
with that list under ``results`` (v1.1 and the platform's v2, which adds ``count``/``next``).
Each memory is ``{"id", "memory", "hash", "metadata", "created_at", "updated_at"}`` plus the
identity keys mem0 promotes (``user_id``, ``agent_id``, ``run_id``, ``actor_id``, ``role``) and,
on the platform, ``categories``.

Mapping: ``memory`` is the content; ``created_at`` is occurred_at and created_at; the session is
``--session`` if given, else ``user_id``, else ``agent_id``, else ``run_id``; ``id`` is kept as
the memory_id when it is a UUID (else one is derived from it, UUID 5); metadata is mem0's own
``metadata`` object with a ``"mem0"`` key added holding the identity keys, ``categories`` and
``updated_at`` that were present. Other keys (``hash``, ``score``, ...) are not kept.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

import ijson
from ijson.common import ObjectBuilder

__all__ = ["Mem0FileError", "looks_like_mem0", "mem0_memories"]

_IDS = uuid.UUID("c5e2a1f4-8d3b-4e6a-b7c9-0f1e2d3c4b5a")  # the namespace of memory_ids derived from mem0 ids
_KEPT = ("user_id", "agent_id", "run_id", "actor_id", "role", "categories", "updated_at")
_SESSION_KEYS = ("user_id", "agent_id", "run_id")
_PIECE_BYTES = 65_536  # the most of one line fed to the parser at once
MAX_DEPTH = 500  # containers inside one another; deeper is refused (Python's json stops near 1,000)


class Mem0FileError(ValueError):
    """The file is not a mem0 export as a whole (not JSON, or no list of memories in it)."""


def looks_like_mem0(path: Path) -> bool:
    """True when the file at ``path`` holds mem0's ``get_all`` shape: its first memories (up to 10)
    are objects holding ``memory``. Reads only as far as those (the whole file when it has none)."""
    try:
        return all(isinstance(item, dict) and "memory" in item for _, item in islice(_items(path), 10))
    except Mem0FileError:
        return False


def _items(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number where it starts, parsed value) per element of the list of memories in the file,
    read as a stream: ijson's event parser is fed one line at a time (at most ``_PIECE_BYTES`` of
    it), so memory holds one memory, not the file, and each memory's first event tells its line.

    Raises:
        Mem0FileError: the file is not JSON, nests deeper than ``MAX_DEPTH``, or holds no list (itself,
            or under ``results``); found when the stream reaches the fault, so after the items before it.
    """
    events = ijson.sendable_list()
    parser = ijson.basic_parse_coro(events, use_float=True)
    shape = _Shape()
    line = 1
    with path.open("rb") as handle:
        if handle.read(3) != b"\xef\xbb\xbf":  # a leading BOM is dropped
            handle.seek(0)
        try:
            for piece in iter(lambda: handle.readline(_PIECE_BYTES), b""):
                parser.send(piece)
                yield from ((line, item) for item in shape.take(events))
                events.clear()
                line += piece.endswith(b"\n")
            parser.close()
        except ijson.JSONError as exc:
            raise Mem0FileError(f"not JSON ({_what(exc)})") from None
    yield from ((line, item) for item in shape.take(events))
    if not shape.found:
        raise Mem0FileError("holds neither a list of memories nor an object with one under 'results'")


def _what(exc: ijson.JSONError) -> str:
    """The first line of the parser's message (the next ones quote the file around the fault)."""
    text = exc.args[0] if exc.args else ""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "cut off")


class _Shape:
    """Follows the parser's events: where the list of memories is, and each element built whole."""

    def __init__(self) -> None:
        self.depth = 0  # containers open
        self.found = False  # the list of memories was seen
        self.list_depth: int | None = None  # depth inside the list of memories while in it
        self.key: str | None = None  # the last key at depth 1 of a top-level object
        self.builder: ObjectBuilder | None = None

    def take(self, events: list[tuple[str, Any]]) -> Iterator[Any]:
        """The elements of the list of memories that ``events`` complete, in order.

        Raises:
            Mem0FileError: nested deeper than ``MAX_DEPTH``.
        """
        for event, value in events:
            opens, closes = event in ("start_map", "start_array"), event in ("end_map", "end_array")
            if closes:
                self.depth -= 1
            if self.builder is not None:
                self.builder.event(event, value)
                if self.depth == self.list_depth and not opens:  # the element ended (or was a scalar)
                    yield self.builder.value
                    self.builder = None
            elif self.list_depth is not None and self.depth == self.list_depth and event != "end_array":
                self.builder = ObjectBuilder()
                self.builder.event(event, value)
                if not opens:
                    yield self.builder.value
                    self.builder = None
            elif event == "start_array" and (self.depth == 0 or (self.depth == 1 and self.key == "results")):
                self.found, self.list_depth = True, self.depth + 1
            elif event == "end_array" and self.depth + 1 == self.list_depth:
                self.list_depth = None
            elif event == "map_key" and self.depth == 1:
                self.key = value
            if opens:
                self.depth += 1
                if self.depth > MAX_DEPTH:
                    raise Mem0FileError(f"not JSON (nested deeper than {MAX_DEPTH} levels)")


def _memory(item: Any, session: str | None) -> dict[str, Any]:
    """One mem0 memory in the export's line shape (left to records.parse_record to check).

    Raises:
        ValueError: the item lacks what a memory needs (names the field).
    """
    if not isinstance(item, dict):
        raise ValueError("item: must be a JSON object (one mem0 memory)")
    for field in ("memory", "created_at", "id"):
        if field not in item:
            raise ValueError(f"{field}: is missing (every mem0 memory has one)")
        if not isinstance(item[field], str):
            raise ValueError(f"{field}: must be a string; got {type(item[field]).__name__}")
    try:
        datetime.fromisoformat(item["created_at"].strip())
    except ValueError:
        raise ValueError(f"created_at: could not parse {item['created_at']!r} as ISO 8601") from None
    target = session
    if target is None:
        target = next((item[k] for k in _SESSION_KEYS if isinstance(item.get(k), str) and item[k]), None)
        if target is None:
            raise ValueError("user_id: is missing (and so are agent_id and run_id); give --session")
    ident = item.get("id")
    if not isinstance(ident, str) or not ident:
        raise ValueError(f"id: must be a string; got {type(ident).__name__}")
    try:
        memory_id = str(uuid.UUID(ident))
    except ValueError:
        memory_id = str(uuid.uuid5(_IDS, ident))
    metadata = item.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ValueError(f"metadata: must be an object or null; got {type(metadata).__name__}")
    kept = {key: item[key] for key in _KEPT if item.get(key) is not None}
    if memory_id != ident:
        kept["id"] = ident
    return {"memory_id": memory_id, "session": target, "content": item["memory"], "occurred_at": item["created_at"],
            "created_at": item["created_at"], "metadata": {**(metadata or {}), "mem0": kept}}


def mem0_memories(path: Path, session: str | None) -> Iterator[tuple[int, Any]]:
    """(line number where the memory starts, memory in the export's line shape) per mem0 memory
    in the file at ``path``; a ValueError in its place for an item that is not a mem0 memory.

    Raises:
        OSError: the file cannot be read.
        Mem0FileError: it is not JSON (or not UTF-8), or holds no list of memories; raised when the
            stream reaches the fault, after the memories before it were yielded.
    """
    for number, item in _items(path):
        try:
            yield number, _memory(item, session)
        except ValueError as exc:
            yield number, exc
