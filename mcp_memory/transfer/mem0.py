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

import json
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = ["Mem0FileError", "looks_like_mem0", "mem0_memories"]

_IDS = uuid.UUID("c5e2a1f4-8d3b-4e6a-b7c9-0f1e2d3c4b5a")  # the namespace of memory_ids derived from mem0 ids
_KEPT = ("user_id", "agent_id", "run_id", "actor_id", "role", "categories", "updated_at")
_SESSION_KEYS = ("user_id", "agent_id", "run_id")


class Mem0FileError(ValueError):
    """The file is not a mem0 export as a whole (not JSON, or no list of memories in it)."""


def looks_like_mem0(value: Any) -> bool:
    """True for a parsed JSON document of mem0's ``get_all`` shape."""
    items = value.get("results") if isinstance(value, dict) else value
    return isinstance(items, list) and all(isinstance(i, dict) and "memory" in i for i in items[:10])


def _items(text: str) -> Iterator[tuple[int, Any]]:
    """(line number where it starts, parsed value) per element of the list of memories in ``text``.

    Raises:
        Mem0FileError: ``text`` is not JSON, or holds no list (itself, or under ``results``).
    """
    decoder = json.JSONDecoder()
    try:
        document = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:  # RecursionError: nested past the decoder's limit
        raise Mem0FileError(f"not JSON ({exc})") from None
    if not isinstance(document, list) and not (isinstance(document, dict) and isinstance(document.get("results"), list)):
        raise Mem0FileError("holds neither a list of memories nor an object with one under 'results'")
    at = _list_start(text, decoder, isinstance(document, dict))
    at = _skip(text, at + 1)
    line, counted = 1, 0  # the line number at offset ``counted``; counting on from there keeps this linear
    while text[at] != "]":
        value, end = decoder.raw_decode(text, at)
        line, counted = line + text.count("\n", counted, at), at
        yield line, value
        at = _skip(text, end)
        at = _skip(text, at + 1) if text[at] == "," else at


def _skip(text: str, at: int) -> int:
    while text[at] in " \t\r\n":
        at += 1
    return at


def _list_start(text: str, decoder: json.JSONDecoder, under_results: bool) -> int:
    """Offset of the ``[`` that opens the memories (the file's list, or the ``results`` value)."""
    at = _skip(text, 0)
    if not under_results:
        return at
    at = _skip(text, at + 1)  # past "{"
    while True:
        key, end = decoder.raw_decode(text, at)
        at = _skip(text, _skip(text, end) + 1)  # past ":"
        if key == "results":  # json.loads keeps the last of repeated keys, and so does this
            last = at
        _, end = decoder.raw_decode(text, at)
        at = _skip(text, end)
        if text[at] == "}":
            return last
        at = _skip(text, at + 1)  # past ","


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
        OSError: the file cannot be read. UnicodeDecodeError: it is not UTF-8.
        Mem0FileError: it is not JSON, or holds no list of memories.
    """
    for number, item in _items(path.read_text(encoding="utf-8-sig")):
        try:
            yield number, _memory(item, session)
        except ValueError as exc:
            yield number, exc
