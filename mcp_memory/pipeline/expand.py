"""Expansion: pseudo-relevance feedback, one more keyword list from the words of the best memories.

A question about several memories ("what activities does Melanie do?") shares words with only some
of them; the memories found first share other words with the rest (the pottery class, the camping
trip). Their most distinctive words (idf times how many of them hold the word) are added to the
question for one more BM25 pass over the session (Rocchio, "Relevance feedback in information
retrieval", 1971; Robertson and Sparck Jones' term selection). Off unless ``prf_memories`` > 0.

Failure policy: a database error raises, as for the first lists.
"""

from __future__ import annotations

from collections.abc import Sequence

from mcp_memory.db.repository import Repository
from mcp_memory.models import RecallFilter
from mcp_memory.settings import RecallSettings

__all__ = ["expand"]

# An added word counts half as much as a question word of the same idf, so the question leads.
_ADDED_WORD_WEIGHT = 0.5


async def expand(
    repository: Repository,
    session: str,
    query: str,
    fused: Sequence[tuple[str, float]],
    settings: RecallSettings,
    filters: RecallFilter | None = None,
) -> list[str]:
    """The ``prf`` list: memory_ids by BM25 of ``query`` plus the words of the top fused memories.

    Args:
        fused: (memory_id, score) of the first fusion, best first; the first ``prf_memories`` feed back.
        settings: ``prf_memories``, ``prf_terms`` and ``keyword_candidates`` (the list's depth).
        filters: the recall's filter; only memories that pass are scored.

    Returns:
        memory_ids, best first; empty when there is nothing to feed back.
    """
    top = [memory_id for memory_id, _ in fused[: settings.prf_memories]]
    if not top:
        return []
    hits = await repository.expanded_keyword_search(
        session, query, top, settings.prf_terms, _ADDED_WORD_WEIGHT, settings.keyword_candidates, filters
    )
    return [memory_id for memory_id, _ in hits]
