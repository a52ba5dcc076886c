"""The write path: validate (secrets redacted) -> embed -> repository (with explicit supersedes) -> LLM
supersession."""

from __future__ import annotations

from typing import Any

import logging

from mcp_memory.db.idempotency import KeyRow
from mcp_memory.deps import Ready
from mcp_memory.errors import InvalidInput, ProviderError
from mcp_memory.models import NewMemory, StoreResult
from mcp_memory.pipeline.audit import record
from mcp_memory.pipeline.supersede_llm import find_superseded
from mcp_memory.pipeline.validate import new_memory

__all__ = ["store"]

logger = logging.getLogger(__name__)


async def store(
    ready: Ready,
    session: str,
    content: str,
    occurred_at: str | None = None,
    metadata: dict[str, Any] | None = None,
    importance: float | None = None,
    supersedes: list[str] | None = None,
    idempotency_key: str | None = None,
    *,
    by: str | None = None,
    may_supersede: bool = True,
) -> StoreResult:
    """Store one memory exactly as given, with one vector per window of its text.

    ``supersedes`` (memory_ids of this session) are marked superseded by the new memory in the
    insert's transaction: the call returns after both committed, or stores nothing. The same
    content already stored applies them to the memory already there, which is current afterwards.
    With ``llm.supersede_model`` set (and ``supersede.llm_on_store``), a new (not de-duplicated)
    memory's nearest current memories are then shown to the model, which may mark more.

    ``by`` names the caller in the audit rows of the marks (the token's name, ``stdio``...).
    ``may_supersede`` False (a caller without ``can_delete``): the LLM marks nothing for this
    store, and its audit row says so (the gate has refused ``supersedes`` already).

    ``idempotency_key``: a retry with the key of an earlier call in the session returns that
    call's memory_id (``replayed`` and ``deduplicated`` true, ``superseded`` the ids its own
    ``supersedes`` marked) and writes nothing, whether the first reply was lost or the two
    calls raced; a retry is answered before anything is embedded.

    Secrets (``privacy.secrets``): with redact, each is replaced by ``[redacted: <kind>]`` before
    anything is embedded, stored or shown to a model; the reply's ``redactions`` and a ``redact``
    audit row list each one's kind and position. With refuse, a secret raises and nothing is stored.

    Failure policy: invalid input raises before anything is embedded or stored; an embedding
    failure raises and stores nothing; the same content already stored in the session
    returns the first memory_id with ``deduplicated`` true; a failing supersession model leaves
    the memory stored (its audit row says why, a WARNING is logged).

    Raises:
        InvalidInput: an argument breaks a limit (the message names it), or ``supersedes`` names
            an id that is not a memory of this session, or the memory itself; or the
            ``idempotency_key`` was used for other content or arguments, or its memory was deleted;
            or, under ``privacy.secrets = "refuse"``, the content or metadata holds a secret.
        EmbeddingError, DatabaseUnavailable: a provider failed; nothing was stored.
    """
    limits = ready.settings.limits
    memory = new_memory(session, content, occurred_at, metadata, importance, limits, supersedes, idempotency_key,
                        secrets=ready.settings.privacy.secrets)
    if memory.idempotency_key is not None:
        earlier = await ready.repository.idempotency_key(memory.session, memory.idempotency_key)
        if earlier is not None:
            return _replayed(memory, earlier)
    vectors = await ready.embedder.embed_batch(ready.embedder.windows(memory.content))
    row = await ready.repository.insert_memory(memory, vectors)
    if isinstance(row, KeyRow):  # a call with the same key committed while this one embedded
        return _replayed(memory, row)
    superseded = list(row.superseded)
    if memory.redactions:
        await _audit(ready, memory.session, "redact", {"memory_id": row.memory_id, "source": "store",
                                                       "redactions": [r.model_dump() for r in memory.redactions]})
    if row.superseded:
        await _audit_marks(ready, memory, row.memory_id, row.superseded, by)
    if not row.deduplicated:
        ready.metrics.memories_stored.inc()
        superseded += await find_superseded(ready, memory, row.memory_id, vectors, exclude=superseded, by=by,
                                            allowed=may_supersede)
    return StoreResult(
        memory_id=row.memory_id,
        session=memory.session,
        occurred_at=row.occurred_at.isoformat(),
        deduplicated=row.deduplicated,
        superseded=superseded,
        redactions=list(memory.redactions),
    )


async def _audit_marks(ready: Ready, memory: NewMemory, memory_id: str, marked: list[str], by: str | None) -> None:
    """One ``supersede`` audit row for the marks a caller's ``supersedes`` made (``source``
    ``caller``; the LLM's decisions have ``source`` ``llm``). ``requested`` is what the call named;
    ``superseded`` what was marked (the current end of a named chain); ``by`` the caller. The marks
    are committed already: a failing audit write is logged at WARNING and the call still succeeds."""
    detail = {"memory_id": memory_id, "source": "caller", "by": by, "requested": list(memory.supersedes),
              "superseded": marked}
    await _audit(ready, memory.session, "supersede", detail)


async def _audit(ready: Ready, session: str, kind: str, detail: dict[str, Any]) -> None:
    """One audit row of what this call committed already: a failing audit write is logged at
    WARNING and the call still succeeds. A ``redact`` row lists each redaction's field, kind and
    span, never the secret."""
    try:
        await record(ready.repository, session, kind, detail)
    except ProviderError as exc:
        logger.warning("could not write the %s audit: %s", kind, exc)


def _replayed(memory: NewMemory, earlier: KeyRow) -> StoreResult:
    """The first call's result for a retry with its idempotency key.

    Raises:
        InvalidInput: the key was used for other content or other arguments, or its memory was
            deleted since (a late retry must not bring it back).
    """
    if earlier.content_hash != memory.content_hash:
        raise InvalidInput("idempotency_key", "was already used in this session for different content; nothing was"
                           " stored. Use a new key for a new memory")
    if earlier.request_hash != memory.request_hash:
        raise InvalidInput("idempotency_key", "was already used in this session with other occurred_at, metadata,"
                           " importance or supersedes; nothing was stored. Use a new key for a new memory")
    if earlier.occurred_at is None:
        raise InvalidInput("idempotency_key", f"its memory {earlier.memory_id} was deleted after the first call;"
                           " nothing was stored. Use a new key to store it again")
    return StoreResult(
        memory_id=earlier.memory_id,
        session=memory.session,
        occurred_at=earlier.occurred_at.isoformat(),
        deduplicated=True,
        replayed=True,
        superseded=earlier.superseded,
        redactions=list(memory.redactions),
    )
