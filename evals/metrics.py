"""Evidence recall@k, hit@k and reciprocal rank, and their means per LoCoMo category.

The metric is LoCoMo's own (Maharana et al., ACL 2024, Table 3): per question,
recall@k = |evidence ∩ dia_ids in the top k results| / |evidence|. A result is one retrieved
document, which stands for one or more dia_ids (identical turns are stored once), so k counts
results, not dia_ids. hit@k is 1 when any evidence id is in the top k. The reciprocal rank is
1 / (position of the first result holding an evidence id), 0 when none of the retrieved results
(at most max k) holds one, i.e. MRR@max_k.

Questions with no evidence cannot be scored; callers leave them out of every mean and report them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evals.locomo_data import CATEGORY_NAMES

RankedGroups = Sequence[Sequence[str]]
"""Retrieved results, best first; each result is the dia_ids it stands for (length >= 1)."""


@dataclass(frozen=True)
class QuestionScore:
    """Scores of one question for one retriever.

    Attributes:
        category: LoCoMo category 1-5.
        recall: k -> evidence recall@k in [0, 1].
        hit: k -> 1.0 when any evidence id is in the top k, else 0.0.
        reciprocal_rank: 1 / rank of the first result holding evidence (rank from 1), or 0.0.
    """

    category: int
    recall: dict[int, float]
    hit: dict[int, float]
    reciprocal_rank: float


@dataclass(frozen=True)
class GroupSummary:
    """Means over a group of scored questions.

    Attributes:
        n: number of questions averaged.
        recall: k -> mean recall@k in [0, 1].
        hit: k -> mean hit@k in [0, 1].
        mrr: mean reciprocal rank in [0, 1].
    """

    n: int
    recall: dict[int, float]
    hit: dict[int, float]
    mrr: float


def score_question(category: int, evidence: Sequence[str], ranked: RankedGroups, ks: Sequence[int]) -> QuestionScore:
    """Score one question's retrieved results against its evidence.

    Args:
        category: LoCoMo category 1-5.
        evidence: the cleaned evidence dia_ids (non-empty; duplicates are ignored).
        ranked: retrieved results, best first (only the first max(ks) are used).
        ks: cut-offs, e.g. (5, 10, 25, 50).

    Returns:
        The question's recall@k and hit@k for each k, and its reciprocal rank.

    Raises:
        ValueError: ``evidence`` is empty or ``ks`` is empty or holds a k < 1.
    """
    gold = set(evidence)
    if not gold:
        raise ValueError("evidence is empty; leave such questions out of the scores")
    if not ks or min(ks) < 1:
        raise ValueError(f"ks={list(ks)} must be a non-empty list of cut-offs >= 1")
    found_at: dict[str, int] = {}
    for rank, dia_ids in enumerate(ranked[: max(ks)], start=1):
        for dia_id in dia_ids:
            if dia_id in gold and dia_id not in found_at:
                found_at[dia_id] = rank
    first = min(found_at.values(), default=0)
    recall = {k: sum(1 for rank in found_at.values() if rank <= k) / len(gold) for k in ks}
    hit = {k: 1.0 if first and first <= k else 0.0 for k in ks}
    return QuestionScore(category, recall, hit, 1.0 / first if first else 0.0)


def summarize_group(scores: Sequence[QuestionScore], ks: Sequence[int]) -> GroupSummary:
    """Average question scores; an empty group averages to zeros with n = 0."""
    n = len(scores)
    if n == 0:
        return GroupSummary(0, {k: 0.0 for k in ks}, {k: 0.0 for k in ks}, 0.0)
    return GroupSummary(
        n=n,
        recall={k: sum(score.recall[k] for score in scores) / n for k in ks},
        hit={k: sum(score.hit[k] for score in scores) / n for k in ks},
        mrr=sum(score.reciprocal_rank for score in scores) / n,
    )


def group_label(key: str) -> str:
    """Display name of a summary key: ``"1"`` -> ``"1 multi-hop"``, ``"all"`` -> ``"all (1-5)"``."""
    if key == "all":
        return "all (1-5)"
    if key == "1-4":
        return "1-4 (no adversarial)"
    return f"{key} {CATEGORY_NAMES.get(int(key), '?')}"


def summarize(scores: Iterable[QuestionScore], ks: Sequence[int]) -> dict[str, GroupSummary]:
    """Means per category ("1" ... "5"), over all five ("all") and over categories 1-4 ("1-4").

    Args:
        scores: one score per scored question (questions without evidence already left out).
        ks: the cut-offs the scores were computed at.

    Returns:
        Summary key -> means, categories in numeric order, then "all", then "1-4".
    """
    scores = list(scores)
    summary = {
        str(category): summarize_group([s for s in scores if s.category == category], ks)
        for category in sorted(CATEGORY_NAMES)
    }
    summary["all"] = summarize_group(scores, ks)
    summary["1-4"] = summarize_group([s for s in scores if s.category != 5], ks)
    return summary
