"""The write path: validate -> embed -> repository (with explicit supersedes)."""

from __future__ import annotations

from typing import Any

from mcp_memory.deps import Ready
from mcp_memory.models import StoreResult
from mcp_memory.pipeline.validate import new_memory

__all__ = ["store"]


async def store(
    ready: Ready,
    session: str,
    content: str,
    occurred_at: str | None = None,
    metadata: dict[str, Any] | None = None,
    importance: float | None = None,
    supersedes: list[str] | None = None,
) -> StoreResult:
    """Store one memory exactly as given, with one vector per window of its text.

    ``supersedes`` (memory_ids of this session) are marked superseded by the new memory in the
    insert's transaction: the call returns after both committed, or stores nothing. The same
    content already stored applies them to the memory already there, which is current afterwards.

    Failure policy: invalid input raises before anything is embedded or stored; an embedding
    failure raises and stores nothing; the same content already stored in the session
    returns the first memory_id with ``deduplicated`` true.

    Raises:
        InvalidInput: an argument breaks a limit (the message names it), or ``supersedes`` names
            an id that is not a memory of this session, or the memory itself.
        EmbeddingError, DatabaseUnavailable: a provider failed; nothing was stored.
    """
    limits = ready.settings.limits
    memory = new_memory(session, content, occurred_at, metadata, importance, limits, supersedes)
    vectors = await ready.embedder.embed_batch(ready.embedder.windows(memory.content))
    row = await ready.repository.insert_memory(memory, vectors)
    superseded = list(row.superseded)
    return StoreResult(
        memory_id=row.memory_id,
        session=memory.session,
        occurred_at=row.occurred_at.isoformat(),
        deduplicated=row.deduplicated,
        superseded=superseded,
    )
