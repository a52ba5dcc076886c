"""The write path: validate -> embed -> repository."""

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
) -> StoreResult:
    """Store one memory exactly as given, with one vector per window of its text.

    Failure policy: invalid input raises before anything is embedded or stored; an embedding
    failure raises and stores nothing; the same content already stored in the session
    returns the first memory_id with ``deduplicated`` true.

    Raises:
        InvalidInput: an argument breaks a limit (the message names it).
        EmbeddingError, DatabaseUnavailable: a provider failed; nothing was stored.
    """
    memory = new_memory(session, content, occurred_at, metadata, importance, ready.settings.limits)
    vectors = await ready.embedder.embed_batch(ready.embedder.windows(memory.content))
    row = await ready.repository.insert_memory(memory, vectors)
    return StoreResult(
        memory_id=row.memory_id,
        session=memory.session,
        occurred_at=row.occurred_at.isoformat(),
        deduplicated=row.deduplicated,
    )
