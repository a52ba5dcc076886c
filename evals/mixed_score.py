"""Scoring of the mixed suite: one recall against its question, means per group, and the figures of updated facts.

Pure functions over case questions and returned case ids; ``evals.mixed`` runs the server.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Score", "score", "summarize", "supersession_figures"]


@dataclass(frozen=True)
class Score:
    """One question's result. Ranks are 1-based positions in the returned list.

    Attributes:
        hit: any evidence memory was returned (within top_k).
        selected: any evidence memory is in the selection: the cited memories when the server
            answered (``answer`` not null), else the top-1 result.
        recall: |evidence returned| / |evidence|.
        reciprocal_rank: 1 / rank of the first evidence memory, 0 when none was returned.
        ordered: for a question with ``superseded`` memories: the first evidence memory ranks above
            every superseded memory returned (one not returned counts as below); None otherwise.
        superseded_returned: how many superseded memories were returned.
        leaks: returned memories stored in another session than the question's.
        unmapped: returned memories this run did not store (neither the session's nor a leak we can name).
    """

    hit: bool
    selected: bool
    recall: float
    reciprocal_rank: float
    ordered: bool | None
    superseded_returned: int
    leaks: int
    unmapped: int


def score(question: dict[str, Any], returned: Sequence[str | None], sessions: Sequence[str | None],
          answered: bool) -> Score:
    """Score one recall.

    Args:
        question: a case question (``session``, ``evidence``, optional ``superseded``).
        returned: case memory ids of the returned memories, best first; None for a memory this run did not store.
        sessions: the session each returned memory was stored in, same order; None when unknown.
        answered: the server returned an answer (so ``returned`` is the cited set).
    """
    evidence, superseded = set(question["evidence"]), set(question.get("superseded", ()))
    ranks = [rank for rank, case_id in enumerate(returned, start=1) if case_id in evidence]
    old_ranks = [rank for rank, case_id in enumerate(returned, start=1) if case_id in superseded]
    selection = returned if answered else returned[:1]
    return Score(
        hit=bool(ranks),
        selected=any(case_id in evidence for case_id in selection),
        recall=len({returned[rank - 1] for rank in ranks}) / len(evidence),
        reciprocal_rank=1 / ranks[0] if ranks else 0.0,
        ordered=(bool(ranks) and all(ranks[0] < old for old in old_ranks)) if superseded else None,
        superseded_returned=len(old_ranks),
        leaks=sum(1 for s in sessions if s is not None and s != question["session"]),
        unmapped=sum(1 for case_id in returned if case_id is None),
    )


def summarize(questions: Sequence[dict[str, Any]], scores: Sequence[Score]) -> dict[str, dict[str, float | None]]:
    """Means over all questions, per kind (``kind:update``), per language (``language:zh``) and, for
    questions with a ``half``, per half and kind (``half:held-out:update``).

    Rates are fractions in [0, 1]; the update figures are None for a group without superseded memories.
    """
    groups: dict[str, list[Score]] = {"all": list(scores)}
    for question, result in zip(questions, scores, strict=True):
        groups.setdefault(f"kind:{question['kind']}", []).append(result)
    for question, result in zip(questions, scores, strict=True):
        groups.setdefault(f"language:{question['language']}", []).append(result)
    for question, result in zip(questions, scores, strict=True):  # a case file split for tuning and held out
        if "half" in question:
            groups.setdefault(f"half:{question['half']}:{question['kind']}", []).append(result)
    summary: dict[str, dict[str, float | None]] = {}
    for name, group in groups.items():
        ordering = [s.ordered for s in group if s.ordered is not None]
        summary[name] = {
            "n": len(group),
            "recall_hit_rate": statistics.fmean(s.hit for s in group),
            "selection_hit_rate": statistics.fmean(s.selected for s in group),
            "evidence_recall": statistics.fmean(s.recall for s in group),
            "mrr": statistics.fmean(s.reciprocal_rank for s in group),
            "update_n": len(ordering),
            "update_ordering_rate": statistics.fmean(ordering) if ordering else None,
            "superseded_returned_rate": statistics.fmean(
                s.superseded_returned > 0 for s in group if s.ordered is not None) if ordering else None,
            "leaks": sum(s.leaks for s in group),
            "unmapped": sum(s.unmapped for s in group),
        }
    return summary


def supersession_figures(questions: Sequence[dict[str, Any]], scores: Sequence[Score],
                         included: dict[str, bool]) -> dict[str, float | int | None]:
    """The figures of updated facts for one configuration (fractions; None for an empty group).

    Args:
        questions: the case questions, in the order of ``scores``.
        scores: each question's score with the default recall.
        included: question id -> an evidence memory was returned when the historical question was
            asked again with ``include_superseded=true`` (empty when the server has no such argument).
    """
    def mean(values: list[bool]) -> float | None:
        return statistics.fmean(values) if values else None

    pairs = list(zip(questions, scores, strict=True))
    return {
        "newer_first": mean([bool(s.ordered) for q, s in pairs if q["kind"] == "update"]),
        "newer_first_found": mean([bool(s.ordered) for q, s in pairs
                                   if q["kind"] == "update" and (s.hit or s.superseded_returned)]),
        "history_found": mean([s.hit for q, s in pairs if q["kind"] == "historical"]),
        "history_found_included": mean([included[q["id"]] for q, _ in pairs if q["id"] in included]),
        "unrelated_hit": mean([s.hit for q, s in pairs if q["kind"] == "unrelated"]),
        "rest_hit": mean([s.hit for q, s in pairs if q["kind"] not in ("update", "historical")]),
        "all_hit": mean([s.hit for s in scores]),
        "all_selected": mean([s.selected for s in scores]),
    }
