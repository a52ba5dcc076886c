"""The recall pipeline, the only orchestrator: plan -> embed -> search -> fuse -> supersede -> answer -> audit.

Each stage is its own module with its own failure policy (see their docstrings); this module
times them, keeps the result within ``max_response_chars``, and writes one audit row.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from mcp_memory.deps import Ready
from mcp_memory.models import Candidate, RecalledMemory, RecallFilter, RecallResult
from mcp_memory.pipeline.answer import answer
from mcp_memory.pipeline.audit import record
from mcp_memory.pipeline.fuse import fuse
from mcp_memory.pipeline.plan import plan_query
from mcp_memory.pipeline.rerank import rerank
from mcp_memory.pipeline.search import search
from mcp_memory.pipeline.supersede import prefer_current
from mcp_memory.pipeline.validate import check_session, check_text, check_top_k, parse_occurred_at
from mcp_memory.privacy.redact import redact, screen_metadata

__all__ = ["recall", "trace"]


class _Clock:
    """Milliseconds spent in each stage."""

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.ms[stage] = round((now - self._last) * 1000, 3)
        self._last = now

    def split(self, first: str, rest: str, first_ms: float) -> None:
        """Lap two stages that ran as one: ``first`` took ``first_ms``, ``rest`` the remainder
        (search overlaps the embedding; its share is the time it added after the vectors were ready)."""
        self.lap(rest)
        self.ms[first] = round(first_ms, 3)
        self.ms[rest] = round(max(self.ms[rest] - first_ms, 0.0), 3)


def _bounded(result: RecallResult, max_chars: int) -> RecallResult:
    """Drop memories whole from the low-ranked end until the JSON fits ``max_chars``.

    Measured on the pretty-printed JSON (indent 2) that the SDK sends as the result's text; it is
    never shorter than the compact structured content, so both fit.
    """
    omitted: list[str] = []
    while len(result.model_dump_json(indent=2)) > max_chars and result.memories:
        omitted.insert(0, result.memories[-1].memory_id)
        result = result.model_copy(
            update={"memories": result.memories[:-1], "truncated": True, "omitted_memory_ids": omitted}
        )
    return result


def _recalled(candidate: Candidate) -> RecalledMemory:
    return RecalledMemory(
        memory_id=candidate.memory_id,
        content=candidate.content,
        occurred_at=candidate.occurred_at.isoformat(),
        score=round(candidate.score, 6),
        metadata=candidate.metadata,
        superseded_by=candidate.superseded_by,
    )


def _first_windows(ready: Ready) -> Callable[[list[str]], Awaitable[list[np.ndarray]]]:
    """Embed each query's first window (``embedding.chunk_tokens`` word pieces, as a memory's first
    vector): the model is trained on 256 and fastembed reads 512, so a 4,000-character query cost
    0.8 s of model time (benchmarks/RESULTS.md); a question is far shorter than a window."""
    embedder = ready.embedder
    return lambda texts: embedder.embed_batch([embedder.windows(text)[0] for text in texts])


# The audit fields that hold free text (a string, or a list of strings), each of which may repeat the
# query: the planner's rewrites, a model's answer or refusal, notes quoting a model's or provider's reply.
_FREE_TEXT = ("query", "queries", "answer", "answer_note", "plan_notes", "llm_fallbacks", "rerank_note", "embed_note")


def _redacted(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value, "query")[0]
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    return value


async def recall(
    ready: Ready,
    session: str,
    query: str,
    top_k: int | None = None,
    include_superseded: bool = False,
    filters: RecallFilter | None = None,
    as_of: str | None = None,
) -> RecallResult:
    """Find the memories of ``session`` that answer ``query`` (``trace``) and write its audit row;
    unless ``privacy.secrets`` is keep, every text of the row that can repeat the query (the query,
    planned queries, answer, notes, fallbacks; metadata filter values) has secrets redacted. The
    reply itself is the caller's and is not rewritten."""
    result, detail = await trace(ready, session, query, top_k, include_superseded, filters, as_of)
    if ready.settings.privacy.secrets != "keep":
        detail = {**detail, **{field: _redacted(detail[field]) for field in _FREE_TEXT if detail.get(field)}}
        if detail["filters"] and detail["filters"].get("metadata"):
            metadata = screen_metadata(detail["filters"]["metadata"], "redact")[0]  # keys and values
            detail["filters"] = {**detail["filters"], "metadata": metadata}
    await record(ready.repository, session, "recall", detail)
    return result


async def trace(
    ready: Ready,
    session: str,
    query: str,
    top_k: int | None = None,
    include_superseded: bool = False,
    filters: RecallFilter | None = None,
    as_of: str | None = None,
) -> tuple[RecallResult, dict[str, Any]]:
    """Find the memories of ``session`` that answer ``query``; answer from them if a model is set.

    Writes nothing itself (``recall`` writes the audit row; the LLM client, when one is set,
    counts its tokens): the page runs it with no LLM to show a search without changing data.

    Args:
        session: the session to search; nothing outside it is ever read.
        query: the question, 1..max_query_chars characters.
        top_k: memories to return without an answer model (1..max_top_k, default 12); with
            one, the number of candidates it may cite.
        include_superseded: keep superseded memories (each below its successor) and add each
            current memory's history; by default only a question about the past does.
        filters: since/until/metadata (``pipeline.filters.check_filter``); applied inside every
            list, the feedback, the neighbours, the supersession reads and the fetch, so no memory
            outside it is ever returned. None or empty: the whole session.
        as_of: when the question is asked, ISO 8601 (a date or date-time; no zone is UTC);
            None is now. "Yesterday" or "last week" in the question count back from it.

    Returns:
        (RecallResult, detail): with an answer model, its answer (or the fixed refusal) and only
        the memories it cited; without, ``answer`` null and the top_k fused memories. ``detail``
        is the audit row's content (candidate lists, fused ranking, stage times in ms).

    Raises:
        InvalidInput: bad session, query, top_k or as_of (nothing is searched).
        DatabaseUnavailable: PostgreSQL failed (an embedding failure only drops the vector
            lists; the audit's ``embed_note`` says so).
    """
    settings = ready.settings
    limits, tuning = settings.limits, settings.recall
    check_session(session, limits)
    check_text("query", query, limits.max_query_chars)
    top_k = check_top_k(limits.default_top_k if top_k is None else top_k, limits)
    asked = parse_occurred_at(as_of, field="as_of")
    clock = _Clock()
    applied = filters if filters is not None and not filters.empty else None

    plan = await plan_query(query, ready.llm, settings.llm.max_plan_queries, asked, session=session,
                            time_expressions=tuning.time_expressions)
    clock.lap("plan")
    # The vector list reaches at least top_k deep, so a session of top_k memories fills the result.
    depth = tuning.model_copy(update={"vector_candidates": max(tuning.vector_candidates, top_k)})
    searched = await search(ready.repository, ready.vectors, session, plan, _first_windows(ready), depth, applied)
    clock.split("embed", "search", searched.embed_ms)
    fused = await fuse(ready, session, query, searched.lists, tuning, top_k, applied, asked)
    candidates, lists = fused.candidates, fused.lists
    clock.lap("fuse")
    rerank_note = None
    if tuning.rerank_url:
        reranked = await rerank(query, candidates, tuning)
        candidates, rerank_note = reranked.candidates, reranked.note
        clock.lap("rerank")

    preferred = await prefer_current(
        ready.repository, session, query, candidates, top_k, include_superseded, applied
    )
    candidates = preferred.candidates
    clock.lap("supersede")

    outcome = await answer(query, candidates, ready.llm, tuning.refusal, session=session)
    clock.lap("answer")
    if outcome.text is None:
        selected = candidates
    else:
        cited = set(outcome.cited)
        selected = [candidate for candidate in candidates if candidate.memory_id in cited]
    result = _bounded(
        RecallResult(answer=outcome.text, memories=[_recalled(c) for c in selected], answerable=outcome.answerable,
                     filters=filters),
        limits.max_response_chars,
    )

    detail: dict[str, Any] = {
        "query": query,
        "top_k": top_k,
        "queries": plan.queries,
        "as_of": asked.isoformat(),
        "time_window": plan.time_window.model_dump(mode="json") if plan.time_window else None,
        "filters": filters.model_dump(mode="json") if filters is not None else None,
        "time_window_source": plan.time_window_source,
        "plan_notes": plan.notes,
        **({"rerank_note": rerank_note} if tuning.rerank_url else {}),
        **({"embed_note": searched.embed_note} if searched.embed_note else {}),
        "candidates": {name: ids for name, ids in lists.items()},
        "fused": [{"memory_id": c.memory_id, "score": round(c.score, 6)} for c in candidates],
        "supersession": preferred.detail,
        "selected": [c.memory_id for c in selected],
        "answerable": outcome.answerable,
        "answer": outcome.text,
        "answer_note": outcome.note,
        "dropped_citations": outcome.dropped_ids,
        "llm_modes": {role: step.mode for role, step in (("plan", plan), ("answer", outcome)) if step.mode},
        "llm_fallbacks": [f"plan: {f}" for f in plan.fallbacks] + [f"answer: {f}" for f in outcome.fallbacks],
        "truncated": result.truncated,
        "omitted_memory_ids": result.omitted_memory_ids,
        "latency_ms": clock.ms,
    }
    ready.metrics.recall_stages(clock.ms)  # the audit's own stage times, not a second clock
    detail["latency_ms"]["total"] = round(sum(clock.ms.values()), 3)
    return result, detail
