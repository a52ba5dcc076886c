"""Fusion: merge ranked lists by memory_id with Reciprocal Rank Fusion, then adjust.

RRF (Cormack, Clarke and Buettcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods", SIGIR 2009): ``score(d) = sum_l w_l / (k + rank_l(d))``
with 1-based ranks and k = 60. Pure functions; ties break by memory_id so equal scores
always come out in the same order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime

from mcp_memory.models import Candidate

__all__ = ["adjust", "is_rewrite", "list_kind", "rrf", "spread"]


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
    count as age 0.

    Returns:
        New candidates, highest score first, ties by memory_id.
    """
    adjusted = []
    for candidate in candidates:
        factor = 1.0
        if half_life_days:
            age_days = max((now - candidate.occurred_at).total_seconds() / 86_400, 0.0)
            factor *= math.pow(0.5, age_days / half_life_days)
        factor *= 1.0 + importance_weight * (candidate.importance or 0.0)
        adjusted.append(candidate.model_copy(update={"score": candidate.score * factor}))
    return sorted(adjusted, key=lambda c: (-c.score, c.memory_id))
