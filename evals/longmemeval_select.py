"""Which LongMemEval questions and turns an evaluation uses (``evals.longmemeval``).

Per ``shared/data/PROTOCOL.md`` a question is scored when it has a gold user turn in a gold session
and is not an abstention (``_abs``). User turns are fitted to what the server stores (not longer
than its content limit, not empty), the same for every retriever.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace

from evals.longmemeval_data import Question


def fit_turns(questions: Sequence[Question], max_chars: int) -> tuple[list[Question], list[str], list[str]]:
    """Fit user turns to what the server stores, for every retriever alike.

    The server refuses content above ``limits.max_content_chars`` (32,000 by default) and empty
    content. A few ShareGPT turns of LongMemEval_S are longer (4 in the full split) or empty (7);
    none of them is gold. Long turns are cut to ``max_chars``; empty ones are dropped.

    Returns:
        The questions (unchanged ones are the same objects), and ``<question_id>/<turn_id>`` of each
        turn cut and of each turn dropped.
    """
    fitted: list[Question] = []
    cut: list[str] = []
    dropped: list[str] = []
    for question in questions:
        if all(turn.content.strip() and len(turn.content) <= max_chars for turn in question.turns):
            fitted.append(question)
            continue
        turns = []
        for turn in question.turns:
            if not turn.content.strip():
                dropped.append(f"{question.question_id}/{turn.turn_id}")
            elif len(turn.content) > max_chars:
                cut.append(f"{question.question_id}/{turn.turn_id}")
                turns.append(replace(turn, content=turn.content[:max_chars]))
            else:
                turns.append(turn)
        fitted.append(replace(question, turns=tuple(turns)))
    return fitted, cut, dropped


def has_gold(question: Question) -> bool:
    """A gold user turn in a gold session: the question can be scored (PROTOCOL.md)."""
    return bool(question.gold_turns and question.gold_sessions)


def scored_questions(questions: Sequence[Question]) -> tuple[list[Question], list[Question]]:
    """Split questions into (scored, left out): left out are ``_abs`` ones and those without gold turns."""
    scored = [q for q in questions if not q.abstention and has_gold(q)]
    kept = {q.question_id for q in scored}
    return scored, [q for q in questions if q.question_id not in kept]


def first_per_type(questions: Sequence[Question], n: int) -> tuple[list[Question], list[Question]]:
    """A fixed subset: the first ``n`` questions of each type in the order of the sha256 of their id.

    The hash is the one that splits halves (``evals.longmemeval_halves``), so the subset is the same in
    every run and does not depend on the file's order; a type with fewer than ``n`` questions gives all.

    Returns:
        (selected in file order, the rest in file order).
    """
    by_type: dict[str, list[Question]] = {}
    for question in questions:
        by_type.setdefault(question.short_type, []).append(question)
    chosen = {
        q.question_id
        for group in by_type.values()
        for q in sorted(group, key=lambda q: hashlib.sha256(q.question_id.encode()).hexdigest())[:n]
    }
    return [q for q in questions if q.question_id in chosen], [q for q in questions if q.question_id not in chosen]
