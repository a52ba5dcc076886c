"""The fuse stage: merge the search stage's ranked lists into one ranking of candidates.

``fuse`` is the stage's entry: RRF over the lists, pseudo-relevance feedback and vector feedback
(a list of its own each, then RRF again), neighbour spreading, the fetch of the pool's rows, recency/importance
adjustment and the no-LLM newer-over-older rules. The rest of this module is its pure parts.

RRF (Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods", SIGIR 2009): ``score(d) = sum_l w_l / (k + rank_l(d))``
with 1-based ranks and k = 60. Ties break by memory_id so equal scores always come out in the
same order: storage order, as memory ids are time-ordered (``db/ids.py``).

Failure policy: a database error while expanding, spreading or fetching propagates
(``DatabaseUnavailable``); the stage has no fallback of its own.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from mcp_memory.deps import Ready
from mcp_memory.models import Candidate, RecallFilter
from mcp_memory.pipeline.expand import expand
from mcp_memory.pipeline.implicit_updates import order_updates
from mcp_memory.pipeline.subject_updates import order_by_subject
from mcp_memory.pipeline.vector_feedback import vector_feedback
from mcp_memory.settings import RecallSettings

__all__ = ["Fused", "adjust", "fuse", "is_rewrite", "list_kind", "rrf", "spread"]


@dataclass(frozen=True)
class Fused:
    """The fuse stage's result.

    Attributes:
        candidates: the pool (``max(2 * top_k, top_k + 10)`` deep), best first, scores adjusted.
        lists: the search stage's lists plus ``prf`` when feedback ran (what the audit shows).
    """

    candidates: list[Candidate]
    lists: dict[str, list[str]]


async def fuse(
    ready: Ready,
    session: str,
    query: str,
    lists: Mapping[str, list[str]],
    tuning: RecallSettings,
    top_k: int,
    filters: RecallFilter | None = None,
    asked: datetime | None = None,
) -> Fused:
    """Fuse ``lists`` into the candidate pool of ``session`` for ``query``.

    Steps, each off when its weight or setting is 0: RRF over the lists; pseudo-relevance
    feedback (``prf_memories``), fused in as the ``prf`` list; vector feedback (``vector_feedback``,
    ``pipeline.vector_feedback``), fused in as the ``vfb`` list; neighbour spreading from the
    top ``neighbor_anchors`` (in-process copies when present, else PostgreSQL); the fetch of the
    pool's rows; ``adjust`` (half-life, importance); ``order_updates`` (``implicit_updates``);
    ``order_by_subject`` (``subject_updates``). ``filters`` holds inside feedback, spreading
    (neighbours among the memories that pass) and the fetch. ``asked`` is when the question is
    asked (the recall's ``as_of``; None: now): the half-life counts each memory's age from it.
    """
    lists = dict(lists)
    weights = {
        "vector": tuning.vector_weight,
        "keyword": tuning.keyword_weight,
        "trigram": tuning.trigram_weight,
        "bigram": tuning.bigram_weight,
        "recent": tuning.recent_weight,
        "window": tuning.window_weight,
        "entity": tuning.entity_weight,
        "prf": tuning.prf_weight,
        "vfb": tuning.vector_feedback_weight,
    }
    fused = rrf(lists, weights, tuning.rrf_k, tuning.rewrite_weight)
    if tuning.prf_memories and fused and (feedback := await expand(ready.repository, session, query, fused, tuning, filters)):
        lists["prf"] = feedback
        fused = rrf(lists, weights, tuning.rrf_k, tuning.rewrite_weight)
    if tuning.vector_feedback and fused and (near := await vector_feedback(ready, session, fused, tuning, filters)):
        lists["vfb"] = near
        fused = rrf(lists, weights, tuning.rrf_k, tuning.rewrite_weight)
    if tuning.neighbor_weight > 0 and fused:
        anchors = [memory_id for memory_id, _ in fused[: tuning.neighbor_anchors]]
        span, gap = tuning.neighbor_span, tuning.neighbor_max_gap_s
        neighbours = ready.vectors.neighbours(session, anchors, span, gap, filters)
        if neighbours is None:  # no in-process copy of this session (or a metadata filter)
            neighbours = await ready.repository.neighbours(session, anchors, span, gap, filters)
        fused = spread(fused, neighbours, tuning.neighbor_weight, tuning.neighbor_aggregate)
    pool = fused[: max(top_k * 2, top_k + 10)]
    rows = await ready.repository.fetch(session, [memory_id for memory_id, _ in pool], filters)
    candidates = [rows[i].model_copy(update={"score": s}) for i, s in pool if i in rows]
    candidates = adjust(candidates, asked or datetime.now(UTC), tuning.half_life_days, tuning.importance_weight)
    if tuning.implicit_updates:
        candidates = await order_updates(ready, session, query, candidates)
    if tuning.subject_updates:
        candidates = await order_by_subject(ready, session, query, candidates)
    return Fused(candidates, lists)


def list_kind(name: str) -> str:
    """The kind of a list name: ``vector:0`` -> ``vector``."""
    return name.split(":", 1)[0]


def is_rewrite(name: str) -> bool:
    """Whether a list searched a planner's rewrite (``vector:1``, ``keyword:2``), not the question (``:0``)."""
    _, _, index = name.partition(":")
    return index.isdigit() and index != "0"


def rrf(
    lists: Mapping[str, Sequence[str]], weights: Mapping[str, float], k: int, rewrite_weight: float = 1.0
) -> list[tuple[str, float]]:
    """Fuse ranked id lists into one ranking.

    Args:
        lists: list name -> memory_ids, best first. A name's kind (before ``:``) picks its weight.
        weights: kind -> weight; a missing kind weighs 1.0.
        k: the RRF constant (60 in the paper).
        rewrite_weight: multiplies the weight of a list searched with a planner's rewrite.

    Returns:
        (memory_id, score) pairs, highest score first, ties by memory_id ascending.
    """
    scores: dict[str, float] = {}
    for name, ids in lists.items():
        weight = weights.get(list_kind(name), 1.0) * (rewrite_weight if is_rewrite(name) else 1.0)
        if weight == 0:
            continue
        for rank, memory_id in enumerate(ids, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def spread(
    fused: Sequence[tuple[str, float]],
    neighbours: Mapping[str, Sequence[str]],
    weight: float,
    aggregate: str = "max",
) -> list[tuple[str, float]]:
    """Let each memory inherit ``weight`` times the best score of its chronological neighbours.

    Conversation turns lean on the turns around them ("yes, last Tuesday!"): a turn next to
    a strong match is likely part of the answer. ``score'(d) = score(d) + weight * max over
    anchors a next to d of score(a)``, with score 0 for memories no list found. With
    ``aggregate="sum"`` the sum over those anchors replaces the max, so a memory amid several
    matches (an episode about the question) gains more than one beside a single match.

    Args:
        fused: (memory_id, score) from ``rrf``.
        neighbours: anchor memory_id -> the memory_ids just before and after it.
        weight: 0 disables spreading.
        aggregate: ``"max"`` or ``"sum"`` over the anchors a memory neighbours.

    Returns:
        (memory_id, score) pairs, highest first, ties by memory_id.
    """
    scores = dict(fused)
    if weight <= 0:
        return list(fused)
    inherited: dict[str, float] = {}
    for anchor, ids in neighbours.items():
        for memory_id in ids:
            if aggregate == "sum":
                inherited[memory_id] = inherited.get(memory_id, 0.0) + scores.get(anchor, 0.0)
            else:
                inherited[memory_id] = max(inherited.get(memory_id, 0.0), scores.get(anchor, 0.0))
    for memory_id, value in inherited.items():
        scores[memory_id] = scores.get(memory_id, 0.0) + weight * value
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def adjust(
    candidates: Sequence[Candidate],
    now: datetime,
    half_life_days: float | None,
    importance_weight: float,
) -> list[Candidate]:
    """Scale fused scores by recency and importance and re-sort.

    ``score * 0.5 ** (age_days / half_life_days) * (1 + importance_weight * importance)``;
    no half-life means no decay, a missing importance counts as 0. Future-dated memories
    count as age 0. Ages count from the youngest candidate's, a factor common to all that keeps
    the order and keeps the best scores above zero (at 90 years old with a 30-day half-life the
    decay is below the smallest float, and every score was 0).

    Returns:
        New candidates, highest score first, ties by memory_id. With neither a half-life nor an
        importance weight every factor is 1: the candidates keep their scores and are only sorted.
    """
    if not half_life_days and importance_weight == 0:
        return sorted(candidates, key=lambda c: (-c.score, c.memory_id))
    adjusted = []
    youngest = min((max((now - c.occurred_at).total_seconds() / 86_400, 0.0) for c in candidates), default=0.0)
    for candidate in candidates:
        factor = 1.0
        if half_life_days:
            age_days = max((now - candidate.occurred_at).total_seconds() / 86_400, 0.0)
            factor *= math.pow(0.5, (age_days - youngest) / half_life_days)
        factor *= 1.0 + importance_weight * (candidate.importance or 0.0)
        adjusted.append(candidate.model_copy(update={"score": candidate.score * factor}))
    return sorted(adjusted, key=lambda c: (-c.score, c.memory_id))
