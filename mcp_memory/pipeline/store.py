"""The write path: validate -> embed -> repository (with explicit supersedes) -> LLM supersession."""

from __future__ import annotations

from typing import Any

from mcp_memory.deps import Ready
from mcp_memory.models import StoreResult
from mcp_memory.pipeline.supersede_llm import find_superseded
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
    With ``llm.supersede_model`` set (and ``supersede.llm_on_store``), a new (not de-duplicated)
    memory's nearest current memories are then shown to the model, which may mark more.

    Failure policy: invalid input raises before anything is embedded or stored; an embedding
    failure raises and stores nothing; the same content already stored in the session
    returns the first memory_id with ``deduplicated`` true; a failing supersession model leaves
    the memory stored (its audit row says why, a WARNING is logged).

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
    if not row.deduplicated:
        superseded += await find_superseded(ready, memory, row.memory_id, vectors, exclude=superseded)
    return StoreResult(
        memory_id=row.memory_id,
        session=memory.session,
        occurred_at=row.occurred_at.isoformat(),
        deduplicated=row.deduplicated,
        superseded=superseded,
    )
