"""Reranking: an optional cross-encoder endpoint reorders the top fused candidates.

The ``/rerank`` API that TEI, vLLM, Jina, Cohere and Voyage serve: POST ``{model, query, documents,
top_n}`` (TEI reads ``texts``; both are sent) and read back, per document, its ``index`` and
``relevance_score`` (TEI: ``score``), as ``{"results": [...]}`` or a bare list. Candidates the
endpoint does not score keep their fused order after the scored ones. Off unless
``recall.rerank_url`` is set; no package here ships cross-encoder weights.

Failure policy: the endpoint fails, times out or answers something else -> the fused order is
kept, recall goes on, the reason goes to the audit (``rerank_note``) and a WARNING to the log.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from mcp_memory.models import Candidate
from mcp_memory.settings import RecallSettings

__all__ = ["Reranked", "rerank"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Reranked:
    """The candidates in their new order, and why they were not reordered (None when they were)."""

    candidates: list[Candidate]
    note: str | None


def _scores(body: Any, count: int) -> dict[int, float]:
    """index -> relevance score from a Cohere/Jina/vLLM (``results``) or TEI (bare list) reply.

    Raises:
        ValueError: the reply has another shape or an index out of range.
    """
    items = body.get("results") if isinstance(body, dict) else body
    if not isinstance(items, list):
        raise ValueError("no results list in the reply")
    scores: dict[int, float] = {}
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
        if not isinstance(index, int) or not 0 <= index < count or not isinstance(score, int | float):
            raise ValueError(f"a result without a valid index and score: {str(item)[:80]}")
        scores[index] = float(score)
    return scores


async def rerank(
    query: str, candidates: Sequence[Candidate], settings: RecallSettings, client: httpx.AsyncClient | None = None
) -> Reranked:
    """Reorder the first ``rerank_candidates`` candidates by the endpoint's relevance scores.

    Args:
        query: the user's question.
        candidates: fused candidates, best first; those past ``rerank_candidates`` keep their place after.
        settings: ``rerank_url`` (the full URL, e.g. ``http://127.0.0.1:8080/rerank``),
            ``rerank_model``, ``rerank_api_key`` (sent as a Bearer token), ``rerank_candidates``,
            ``rerank_timeout_s``.
        client: an HTTP client to use (tests pass one); by default one per call.

    Returns:
        Reranked: the new order (scores are the fused ones, so they may no longer descend), or the
        fused order with a note when the endpoint failed.
    """
    head, tail = list(candidates[: settings.rerank_candidates]), list(candidates[settings.rerank_candidates :])
    if not settings.rerank_url or len(head) < 2:
        return Reranked(list(candidates), None)
    documents = [candidate.content for candidate in head]
    payload: dict[str, Any] = {"query": query, "documents": documents, "texts": documents, "top_n": len(head)}
    if settings.rerank_model:
        payload["model"] = settings.rerank_model
    headers = {"Authorization": f"Bearer {settings.rerank_api_key}"} if settings.rerank_api_key else {}
    try:
        if client is None:
            async with httpx.AsyncClient(timeout=settings.rerank_timeout_s) as own:
                response = await own.post(settings.rerank_url, json=payload, headers=headers)
        else:
            response = await client.post(
                settings.rerank_url, json=payload, headers=headers, timeout=settings.rerank_timeout_s
            )
        response.raise_for_status()
        scores = _scores(response.json(), len(head))
    except (httpx.HTTPError, ValueError) as exc:
        note = f"rerank failed, fused order kept: {type(exc).__name__}: {str(exc)[:200]}"
        logger.warning("%s", note)
        return Reranked(list(candidates), note)
    order = sorted(range(len(head)), key=lambda i: (i not in scores, -scores.get(i, 0.0), i))
    return Reranked([head[i] for i in order] + tail, None)
