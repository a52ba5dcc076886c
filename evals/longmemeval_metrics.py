"""LongMemEval retrieval metrics, session level and turn level, and their means per question type.

The metrics are LongMemEval's own (Wu et al., ICLR 2025; ``src/retrieval/eval_utils.py`` of the
official code), as ``shared/data/PROTOCOL.md`` states them:

- ``recall_all@k``: 1 when every gold item is in the top k (the paper's "Recall");
- ``recall_any@k``: 1 when any gold item is in the top k;
- ``ndcg@k``: binary relevance, DCG = rel_1 + sum_{i>=2} rel_i / log2(i) (the official code's form,
  in which ranks 1 and 2 weigh the same), over the ideal DCG of all gold items ranked first.

Turn level adds ``recall@k`` = |gold turns in the top k| / |gold turns| (LoCoMo's form). The
retriever returns turns (user turns only); a result may stand for several turns with identical
content, and k counts results. Sessions are ranked by the best rank of any of their returned turns,
so session figures only see the sessions that the returned turns reach: ``sessions_ranked`` says how
many, and a question whose turns reach fewer than k sessions is scored on those.

Questions without gold (``_abs``, and those whose evidence lies only in assistant turns) cannot be
scored; callers leave them out and report them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from evals.longmemeval_data import QUESTION_TYPES

RankedGroups = Sequence[Sequence[str]]
"""Retrieved results, best first; each result is the turn ids (``<session_id>:<index>``) it stands for."""

LEVELS = ("session", "turn")


@dataclass(frozen=True)
class LevelScore:
    """One question's figures at one level (session or turn).

    Attributes:
        recall_all: k -> 1.0 when every gold item is in the top k, else 0.0.
        recall_any: k -> 1.0 when any gold item is in the top k, else 0.0.
        recall: k -> share of gold items in the top k.
        ndcg: k -> NDCG@k in [0, 1].
    """

    recall_all: dict[int, float]
    recall_any: dict[int, float]
    recall: dict[int, float]
    ndcg: dict[int, float]


@dataclass(frozen=True)
class QuestionScore:
    """Scores of one question for one retriever.

    Attributes:
        question_type: short type name (``SSU`` ... ``TR``).
        session: session-level figures.
        turn: turn-level figures.
        sessions_ranked: distinct haystack sessions among the returned turns.
    """

    question_type: str
    session: LevelScore
    turn: LevelScore
    sessions_ranked: int


@dataclass(frozen=True)
class GroupSummary:
    """Means over a group of scored questions.

    Attributes:
        n: number of questions averaged.
        session: session-level means (same shape as ``LevelScore``).
        turn: turn-level means.
        short_session_rankings: questions whose returned turns reached fewer sessions than the largest k.
    """

    n: int
    session: LevelScore
    turn: LevelScore
    short_session_rankings: int


def session_of(turn_id: str) -> str:
    """The haystack session of a turn id ``<session_id>:<index>``."""
    return turn_id.rsplit(":", 1)[0]


def session_ranking(ranked: RankedGroups) -> list[tuple[str, ...]]:
    """Sessions in order of the best rank of any of their turns, each a one-item group.

    A result standing for turns of several sessions ranks each of them there, in turn order.
    """
    seen: dict[str, None] = {}
    for group in ranked:
        for turn_id in group:
            seen.setdefault(session_of(turn_id), None)
    return [(session,) for session in seen]


def _dcg(relevances: Sequence[float]) -> float:
    """rel_1 + sum_{i>=2} rel_i / log2(i), as the official code computes it."""
    return sum(rel if rank == 1 else rel / math.log2(rank) for rank, rel in enumerate(relevances, start=1))


def score_level(gold: Iterable[str], ranked: RankedGroups, ks: Sequence[int]) -> LevelScore:
    """Score ranked groups against a gold set at each cut-off.

    Args:
        gold: gold ids (non-empty; duplicates ignored).
        ranked: results, best first; a result is relevant when it holds a gold id.
        ks: cut-offs, counted in results.

    Raises:
        ValueError: ``gold`` is empty or ``ks`` is empty or holds a k < 1.
    """
    wanted = set(gold)
    if not wanted:
        raise ValueError("gold is empty; leave such questions out of the scores")
    if not ks or min(ks) < 1:
        raise ValueError(f"ks={list(ks)} must be a non-empty list of cut-offs >= 1")
    found_at: dict[str, int] = {}
    relevances: list[float] = []
    for rank, group in enumerate(ranked[: max(ks)], start=1):
        hits = [item for item in group if item in wanted]
        relevances.append(1.0 if hits else 0.0)
        for item in hits:
            found_at.setdefault(item, rank)
    recall = {k: sum(1 for rank in found_at.values() if rank <= k) / len(wanted) for k in ks}
    ndcg = {k: _dcg(relevances[:k]) / _dcg([1.0] * min(k, len(wanted))) for k in ks}
    return LevelScore(
        recall_all={k: 1.0 if recall[k] == 1.0 else 0.0 for k in ks},
        recall_any={k: 1.0 if recall[k] > 0 else 0.0 for k in ks},
        recall=recall,
        ndcg=ndcg,
    )


def score_question(
    question_type: str, gold_sessions: Iterable[str], gold_turns: Iterable[str], ranked: RankedGroups,
    ks: Sequence[int],
) -> QuestionScore:
    """Score one question's returned turns at session and turn level.

    Args:
        question_type: short type name, e.g. ``KU``.
        gold_sessions: the question's gold sessions (non-empty).
        gold_turns: the question's gold user turns (non-empty).
        ranked: returned results, best first, each the turn ids it stands for.
        ks: cut-offs, e.g. (1, 5, 10).

    Raises:
        ValueError: no gold sessions or turns, or bad ``ks``.
    """
    sessions = session_ranking(ranked)
    return QuestionScore(
        question_type,
        session=score_level(gold_sessions, sessions, ks),
        turn=score_level(gold_turns, ranked, ks),
        sessions_ranked=len(sessions),
    )


def _mean_level(levels: Sequence[LevelScore], ks: Sequence[int]) -> LevelScore:
    n = len(levels) or 1
    return LevelScore(
        *({k: sum(getattr(level, name)[k] for level in levels) / n for k in ks}
          for name in ("recall_all", "recall_any", "recall", "ndcg"))
    )


def summarize_group(scores: Sequence[QuestionScore], ks: Sequence[int]) -> GroupSummary:
    """Average question scores; an empty group averages to zeros with n = 0."""
    return GroupSummary(
        n=len(scores),
        session=_mean_level([score.session for score in scores], ks),
        turn=_mean_level([score.turn for score in scores], ks),
        short_session_rankings=sum(1 for score in scores if score.sessions_ranked < max(ks)),
    )


def summarize(scores: Iterable[QuestionScore], ks: Sequence[int]) -> dict[str, GroupSummary]:
    """Means per question type (``SSU`` ... ``TR``, the data's order) and over all (``all``)."""
    scores = list(scores)
    summary = {
        short: summarize_group([score for score in scores if score.question_type == short], ks)
        for short in QUESTION_TYPES.values()
    }
    summary["all"] = summarize_group(scores, ks)
    return summary
