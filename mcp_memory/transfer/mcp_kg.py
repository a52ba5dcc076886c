"""The official MCP memory server's knowledge graph (``memory.jsonl``) as memories.

The server (modelcontextprotocol/servers, ``src/memory``) keeps its graph as JSON Lines, one
object a line: ``{"type": "entity", "name", "entityType", "observations": [str, ...]}`` and
``{"type": "relation", "from", "to", "relationType"}``. Each observation becomes one memory,
``"Alice: works at Acme"``, with ``{"entity": "Alice", "entity_type": "person"}`` as metadata; an
entity without observations becomes ``"Alice (person)"``; each relation becomes
``"Alice works at Acme"`` (underscores of the relation type read as spaces) with
``{"from", "to", "relation"}`` (the type as written) as metadata. The graph holds no times: every
memory gets the file's modification time as occurred_at. Memory_ids are derived from the session
and the text (UUID 5), so importing the same graph again stores nothing new, and importing it
after the server added observations stores only those.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp_memory.transfer.records import parse_line

__all__ = ["KG_TYPES", "kg_memories"]

KG_TYPES = frozenset({"entity", "relation"})
_IDS = uuid.UUID("3b1f0c7e-52a4-4b8e-9f0d-6c2a9e4d71b5")  # the namespace of mcp-kg memory_ids


def _text(item: dict[str, Any], field: str) -> str:
    value = item.get(field)
    if not isinstance(value, str):
        raise ValueError(f"{field}: must be a string; got {type(value).__name__}")
    return value


def _contents(item: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(content, metadata) of each memory one graph line makes.

    Raises:
        ValueError: the line is not an entity or a relation of the graph's shape (names the field).
    """
    kind = item.get("type")
    if kind == "entity":
        name, entity_type = _text(item, "name"), _text(item, "entityType")
        observations = item.get("observations", [])
        if not isinstance(observations, list) or not all(isinstance(o, str) for o in observations):
            raise ValueError("observations: must be a list of strings")
        if any(not o.strip() for o in observations):
            raise ValueError("observations: must not hold an empty or whitespace-only observation")
        metadata = {"entity": name, "entity_type": entity_type}
        if not observations:
            return [(f"{name} ({entity_type})", metadata)]
        return [(f"{name}: {observation}", metadata) for observation in observations]
    if kind == "relation":
        source, target, relation = _text(item, "from"), _text(item, "to"), _text(item, "relationType")
        return [(f"{source} {relation.replace('_', ' ')} {target}", {"from": source, "to": target, "relation": relation})]
    raise ValueError(f"type: must be 'entity' or 'relation'; got {kind!r}")


def kg_memories(path: Path, session: str) -> Iterator[tuple[int, Any]]:
    """(line number, memory in the export's line shape) per memory of the graph at ``path``; a
    ValueError in place of the memory for a line that is not JSON or not of the graph's shape,
    None for a blank line. An entity line with several observations yields several memories,
    each with that line's number.

    Raises:
        OSError: the file cannot be read. UnicodeDecodeError: it is not UTF-8.
    """
    occurred_at = datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat()
    with path.open(encoding="utf-8-sig") as handle:  # -sig: a leading BOM is dropped
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                yield number, None
                continue
            try:
                item = parse_line(raw)
                if not isinstance(item, dict):
                    raise ValueError("line: must be a JSON object (an entity or a relation)")
                made = _contents(item)
            except ValueError as exc:
                yield number, exc
                continue
            for content, metadata in made:
                yield number, {
                    "memory_id": str(uuid.uuid5(_IDS, f"{session}\n{content}")),
                    "session": session,
                    "content": content,
                    "occurred_at": occurred_at,
                    "metadata": metadata,
                }
