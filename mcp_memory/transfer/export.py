"""``mcp-memory export``: memories as JSON Lines, a header line first.

The format (``mcp-memory``, version 1): line 1 is a header object ``{"format": "mcp-memory",
"version": 1, "server_version", "embedding_model", "embedding_dim", "exported_at", "sessions"}``;
every further line is one memory: ``memory_id, session, content, occurred_at, created_at``
(ISO 8601 with offset), ``metadata``, ``importance``, ``superseded_by, superseded_at,
superseded_source`` (null when current) and ``idempotency_keys`` (the store_memory keys that
named it). After the memories, one line ``{memory_id, session, "deleted": true, idempotency_keys}``
per deleted memory whose keys remain (each key with its ``content_hash``), so that a late retry with
one stays an error after an import instead of storing the deleted memory again. Vectors are not
exported: the importer embeds again with its own model.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, TextIO

from mcp_memory import __version__
from mcp_memory.access.scope import SessionScope
from mcp_memory.deps import Ready

__all__ = ["FORMAT", "VERSION", "export", "header"]

FORMAT = "mcp-memory"
VERSION = 1


def header(ready: Ready, scope: SessionScope) -> dict[str, Any]:
    """The export's first line."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "server_version": __version__,
        "embedding_model": ready.embedder.model,
        "embedding_dim": ready.embedder.dim,
        "exported_at": datetime.now(UTC).isoformat(),
        "sessions": scope.patterns(),
    }


def _line(memory: dict[str, Any]) -> str:
    def instant(value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    keys = memory["idempotency_keys"]
    return json.dumps(
        {
            "memory_id": memory["memory_id"],
            "session": memory["session"],
            "content": memory["content"],
            "occurred_at": instant(memory["occurred_at"]),
            "created_at": instant(memory["created_at"]),
            "metadata": memory["metadata"],
            "importance": memory["importance"],
            "superseded_by": memory["superseded_by"],
            "superseded_at": instant(memory["superseded_at"]),
            "superseded_source": memory["superseded_source"],
            "idempotency_keys": keys,
        },
        ensure_ascii=False,
    )


async def export(ready: Ready, scope: SessionScope, out: TextIO) -> int:
    """Write the header and every memory of ``scope`` to ``out`` in storage order
    (session, occurred_at, created_at, memory_id), streaming from the database.

    Returns:
        How many memories were written (the lines of deleted memories' keys not counted).

    Raises:
        DatabaseUnavailable or asyncpg errors: the database went away mid-export; what was written
            so far is a prefix of the export, not a complete one.
    """
    out.write(json.dumps(header(ready, scope), ensure_ascii=False) + "\n")
    count = 0
    async for memory in ready.repository.export_memories(scope, deleted=True):
        if memory.get("deleted"):
            out.write(json.dumps({"memory_id": memory["memory_id"], "session": memory["session"], "deleted": True,
                                  "idempotency_keys": memory["idempotency_keys"]}, ensure_ascii=False) + "\n")
            continue
        out.write(_line(memory) + "\n")
        count += 1
    return count
