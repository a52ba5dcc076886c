"""Supersession on store: the optional LLM decides which older memories a new one replaces.

After a new (not de-duplicated) memory is stored, its nearest current memories in the session
(``supersede.candidates`` of them, each at least ``supersede.min_similarity`` cosine similarity
to one of its windows, and none that happened after it), then its best keyword matches among the
other current memories (``supersede.keyword_candidates``: BM25 and CJK bigrams, any similarity), are
shown to ``llm.supersede_model``.
The user message is the new memory as ``<new_memory occurred_at="Sat 1 March 2025 09:00 UTC">``
followed by one ``<memory id="1" occurred_at="..">`` line per candidate, numbered 1..n in that order
(a UUID costs a small model about 25 tokens to read and again to copy); the model replies with JSON
``{"superseded": [{"id", "old", "new"}], "reason": ".."}``: each pick names the old value as the older
memory says it and the new value as the new memory says it. A pick stands only when both values are
said there (``said_in``: 80% of the words) and differ; an id that was not a candidate (a number or a
candidate's memory_id) is dropped (the prompt and the reading of the reply: ``supersede_reply``). The
picks that stand are marked superseded by the new memory.
Each decision is one audit row of kind ``supersede``:
``{memory_id, source, by, candidates, superseded, reason, model, mode, fallbacks, note, latency_ms}`` (``by``: the
caller whose store it was; ``mode``: the structured-output mode that answered; ``fallbacks``: the modes the
endpoint refused); it keeps no prompt text
(a reason that echoes the prompt is left out, and of ids the model invented only UUIDs are
named). Usage is counted under the operation ``supersede``.

Failure policy: the memory is stored whatever happens here. The model failing, timing out or
replying without usable JSON (after one repair request), or the database failing while candidates
are read or marked: nothing is marked, ``note`` says why, and a WARNING is logged. With no
candidate the model is not asked and the row says so.
"""

from __future__ import annotations

import logging
import time
from itertools import zip_longest
from typing import Any

import numpy as np

from mcp_memory.deps import Ready
from mcp_memory.errors import MalformedReply, ProviderError
from mcp_memory.models import Candidate, NewMemory
from mcp_memory.pipeline.audit import record
from mcp_memory.pipeline.search import cjk_bigrams, trigram_terms
from mcp_memory.pipeline.supersede_reply import (
    SUPERSEDE_SCHEMA,
    SYSTEM,
    dropped_note,
    prompt,
    read_picks,
    reason_of,
)

__all__ = ["find_superseded"]

logger = logging.getLogger(__name__)


async def _keyword_near(ready: Ready, memory: NewMemory, depth: int) -> list[str]:
    """The session's best keyword matches for the new memory's text, best first: BM25 over its
    words, and, when it holds CJK text, shared CJK bigrams, interleaved. They find an update that
    shares only a name or a value with what it replaces ("MySQL"; 星河科技), which the vectors rank
    below ``supersede.min_similarity`` (cosine 0.16 for the MySQL pair of the mixed suite)."""
    recall = ready.settings.recall
    words = await ready.repository.keyword_search(memory.session, memory.content, depth, recall.max_keyword_terms)
    lists = [[found_id for found_id, _ in words]]
    bigrams = cjk_bigrams(trigram_terms([memory.content])[0])[: recall.max_bigram_terms]
    if bigrams:
        grams = await ready.repository.gram_search(memory.session, bigrams, depth, [1.0] * len(bigrams))
        lists.append([found_id for found_id, _ in grams])
    interleaved = (found_id for row in zip_longest(*lists) for found_id in row if found_id is not None)
    return list(dict.fromkeys(interleaved))


async def _candidates(
    ready: Ready, memory: NewMemory, memory_id: str, vectors: list[np.ndarray], exclude: list[str]
) -> list[Candidate]:
    """The nearest current memories that happened no later than ``memory``, nearest first, then up to
    ``supersede.keyword_candidates`` of its best keyword matches that are not among them."""
    tuning = ready.settings.supersede
    skip = {memory_id, *exclude}
    depth = 2 * tuning.candidates + len(skip)
    found = await ready.vectors.nearest(
        ready.repository, memory.session, vectors, depth, ready.settings.recall.hnsw_ef_search
    )
    best: dict[str, float] = {}
    for hits in found:  # a long memory: its windows' best
        for found_id, distance in hits:
            best[found_id] = min(best.get(found_id, 2.0), distance)
    near = [
        found_id
        for found_id, distance in sorted(best.items(), key=lambda item: (item[1], item[0]))
        if found_id not in skip and 1.0 - distance >= tuning.min_similarity
    ]
    matched: list[str] = []
    if tuning.keyword_candidates:
        keyword_depth = 2 * (tuning.candidates + tuning.keyword_candidates) + len(skip)
        matched = [found_id for found_id in await _keyword_near(ready, memory, keyword_depth) if found_id not in skip]
    rows = await ready.repository.fetch(memory.session, list(dict.fromkeys(near + matched)))

    def current(ids: list[str]) -> list[Candidate]:
        return [
            row
            for row in (rows.get(found_id) for found_id in ids)
            if row is not None and row.superseded_by is None and row.occurred_at <= memory.occurred_at
        ]

    nearest = current(near)[: tuning.candidates]
    shown = {c.memory_id for c in nearest}
    return nearest + [c for c in current(matched) if c.memory_id not in shown][: tuning.keyword_candidates]


async def _similarity(ready: Ready, memory: NewMemory, vectors: list[np.ndarray], candidates: list[Candidate]
                      ) -> dict[str, float]:
    """Cosine of each candidate's first window to the new memory's first, as the no-LLM rule reads it."""
    ids = [c.memory_id for c in candidates]
    found = ready.vectors.vectors(memory.session, ids) or {}
    if missing := [found_id for found_id in ids if found_id not in found]:  # no copy, or not in it yet
        found |= await ready.repository.embeddings(memory.session, missing)
    return {found_id: float(np.dot(vectors[0], vector)) for found_id, vector in found.items()}


async def find_superseded(
    ready: Ready, memory: NewMemory, memory_id: str, vectors: list[np.ndarray], exclude: list[str],
    by: str | None = None, allowed: bool = True,
) -> list[str]:
    """Ask the supersede model which of the new memory's nearest current memories it supersedes,
    mark them, and audit the decision (see the module docstring).

    Args:
        memory: the stored memory; ``memory_id`` its id, ``vectors`` its window vectors.
        exclude: ids the call already marked (explicit ``supersedes``); never shown again.
        by: the caller whose store this is, named in the audit row.
        allowed: the caller may mark memories superseded (``can_delete``); when False the model
            is not asked, and the audit row's ``note`` says why.

    Returns:
        The ids marked superseded; empty when the stage is off, not allowed, found nothing, or failed.
    """
    model = ready.llm.model_for("supersede")
    if model is None or not ready.settings.supersede.llm_on_store:
        return []
    started = time.perf_counter()
    detail: dict[str, Any] = {"memory_id": memory_id, "source": "llm", "by": by, "candidates": [], "superseded": [],
                              "reason": None, "model": model, "mode": None, "fallbacks": [], "note": None}
    if not allowed:
        detail["note"] = "not run: this caller may not mark memories superseded (that needs can_delete)"
        await _audit(ready, memory, {**detail, "latency_ms": 0.0})
        return []
    marked: list[str] = []
    try:
        candidates = await _candidates(ready, memory, memory_id, vectors, exclude)
        detail["candidates"] = [c.memory_id for c in candidates]
        if not candidates:
            detail["note"] = (
                "no current memory within supersede.min_similarity or sharing a keyword; the model was not asked"
            )
        else:
            user = prompt(memory, candidates)
            reply = await ready.llm.complete_json(
                "supersede", SYSTEM, user, "supersession", SUPERSEDE_SCHEMA, session=memory.session
            )
            detail["mode"], detail["fallbacks"] = reply.mode, reply.fallbacks
            similarity = (
                await _similarity(ready, memory, vectors, candidates) if ready.settings.supersede.check_words else None
            )
            picked, dropped, unfounded, unconfirmed = read_picks(reply.value, memory, candidates, similarity)
            detail["reason"] = reason_of(reply.value)
            notes = [dropped_note(dropped)] if dropped else []
            if unfounded:
                notes.append(
                    f"dropped {unfounded} pair(s) whose old or new value is not in the memories or is the same"
                )
            if unconfirmed:
                notes.append(
                    f"dropped {unconfirmed} pair(s) that the words do not show as an update (supersede.check_words)"
                )
            detail["note"] = "; ".join(notes) or None
            marked = await ready.repository.mark_superseded(memory.session, memory_id, picked, "llm")
            detail["superseded"] = marked
    except ProviderError as exc:  # ChatError, MalformedReply, DatabaseUnavailable: the memory stays stored
        kind = "reply unusable" if isinstance(exc, MalformedReply) else "failed"
        logger.warning("supersession on store %s, memory stored without it: %s", kind, exc)
        detail["note"] = f"supersede model {kind}, nothing marked: {exc}"
    detail["latency_ms"] = round((time.perf_counter() - started) * 1000, 3)
    await _audit(ready, memory, detail)
    return marked


async def _audit(ready: Ready, memory: NewMemory, detail: dict[str, Any]) -> None:
    """The decision's audit row; a failing write is logged at WARNING (the memory stays stored)."""
    try:
        await record(ready.repository, memory.session, "supersede", detail)
    except ProviderError as exc:
        logger.warning("could not audit a supersession decision: %s", exc)
