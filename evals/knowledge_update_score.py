"""Scoring of the knowledge-update evaluation (``python -m evals.knowledge_update``): pure functions.

For a LongMemEval knowledge-update question the **latest** evidence is the user turns marked
``has_answer`` in the latest gold session (by date), the **earlier** evidence those marked in the
gold sessions before it. A ranking is a list of results, best first, each the turn ids it stands
for (identical turns are stored once, so one result can stand for several).

- ``newer_first``: the best-ranked latest turn ranks above the best-ranked earlier turn; a turn
  missing from the ranking counts as ranked last, so two missing turns are *not* newer-first. Only
  questions with both kinds of evidence count (n).
- ``latest@k``: a latest turn is among the first k results.
- ``recall@k`` (any question with gold turns, every type): |gold turns in the first k| / |gold turns|.

Questions that ask about the past (``supersede.asks_about_past``: "What was my previous goal ...")
want the earlier value: the figures give them apart as well as in the total.

**Halves.** Every question falls in half ``A`` or ``B`` by the first byte of the sha256 of its
``question_id`` (``half``): a rule's constants are chosen looking at half A only, and half B and the
whole are what is reported (``ku_A``, ``ku_B`` beside ``ku``).
"""

from __future__ import annotations

import hashlib
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evals.longmemeval_data import Question

Ranking = Sequence[Sequence[str]]
"""Results best first, each the turn ids one recalled memory stands for."""

KS = (5, 10)


@dataclass(frozen=True)
class Evidence:
    """The latest and the earlier evidence turns of a knowledge-update question (turn ids)."""

    latest: frozenset[str]
    earlier: frozenset[str]


def evidence(question: Question) -> Evidence:
    """Split a question's ``has_answer`` user turns into the latest gold session's and the earlier ones'."""
    marked = [turn for turn in question.turns if turn.has_answer and turn.session_id in question.gold_sessions]
    if not marked:
        return Evidence(frozenset(), frozenset())
    start = {turn.session_id: turn.occurred_at for turn in reversed(marked)}  # each session's first marked turn
    last = max(start, key=lambda session: start[session])
    latest = frozenset(turn.turn_id for turn in marked if turn.session_id == last)
    earlier = frozenset(turn.turn_id for turn in marked if turn.session_id != last and start[turn.session_id] < start[last])
    return Evidence(latest, earlier)


def half(question_id: str) -> str:
    """``A`` or ``B``: the tuning half (A) or the held-out half (B) of a question, by sha256 of its id."""
    return "A" if hashlib.sha256(question_id.encode("utf-8")).digest()[0] % 2 == 0 else "B"


def best_rank(ranking: Ranking, turns: frozenset[str]) -> float:
    """1-based rank of the first result holding one of ``turns``; ``inf`` when none does."""
    for rank, result in enumerate(ranking, start=1):
        if turns.intersection(result):
            return rank
    return math.inf


def turn_recall(ranking: Ranking, gold: frozenset[str], k: int) -> float:
    """Share of ``gold`` turns among the first ``k`` results."""
    found = {turn for result in ranking[:k] for turn in result}
    return len(gold & found) / len(gold)


def score_question(question: Question, ranking: Ranking, past: bool) -> dict[str, Any]:
    """One question's row: type, past or present, ranks of latest and earlier evidence, recall@k."""
    row: dict[str, Any] = {"id": question.question_id, "type": question.short_type, "past": past,
                           "half": half(question.question_id)}
    if question.gold_turns:
        row.update({f"recall@{k}": turn_recall(ranking, question.gold_turns, k) for k in KS})
    if question.short_type == "KU":
        split = evidence(question)
        if split.latest and split.earlier:
            latest, earlier = best_rank(ranking, split.latest), best_rank(ranking, split.earlier)
            row.update({"latest_rank": latest, "earlier_rank": earlier, "newer_first": latest < earlier,
                        **{f"latest@{k}": latest <= k for k in KS}})
    return row


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Figures of one mode: knowledge-update figures (all, present-tense, past) and recall@k per type."""
    ku = [row for row in rows if "newer_first" in row]
    out: dict[str, Any] = {}
    for name, subset in (("ku", ku), ("ku_present", [r for r in ku if not r["past"]]),
                         ("ku_past", [r for r in ku if r["past"]]),
                         ("ku_A", [r for r in ku if r.get("half") == "A"]), ("ku_B", [r for r in ku if r.get("half") == "B"])):
        out[name] = {"n": len(subset), "newer_first": _mean([float(r["newer_first"]) for r in subset]),
                     **{f"latest@{k}": _mean([float(r[f"latest@{k}"]) for r in subset]) for k in KS}}
    types = sorted({row["type"] for row in rows})
    for kind in [*types, "other"]:
        subset = [r for r in rows if "recall@10" in r and (r["type"] == kind or (kind == "other" and r["type"] != "KU"))]
        out[f"recall_{kind}"] = {"n": len(subset), **{f"recall@{k}": _mean([r[f"recall@{k}"] for r in subset])
                                                       for k in KS}}
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def table(results: Mapping[str, Mapping[str, Any]], title: str) -> str:
    """A markdown table of every mode's figures (one row each), as percentages."""
    first = next(iter(results.values()), {})
    types = [key.removeprefix("recall_") for key in first if key.startswith("recall_")]
    ku = first.get("ku", {})
    head = (f"### {title}\n\nKU n = {ku.get('n')} (present-tense {first.get('ku_present', {}).get('n')}, "
            f"past {first.get('ku_past', {}).get('n')}; half A {first.get('ku_A', {}).get('n')}, "
            f"half B {first.get('ku_B', {}).get('n')}); recall@10 n per type: "
            + ", ".join(f"{t} {first[f'recall_{t}']['n']}" for t in types) + "\n\n")
    columns = ["newer-first", "half A", "half B", "newer-first (present)", "latest@5", "latest@10", *(f"R@10 {t}" for t in types)]
    lines = ["| mode | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, figures in results.items():
        cells = [_pct(figures["ku"]["newer_first"]), _pct(figures.get("ku_A", {}).get("newer_first")),
                 _pct(figures.get("ku_B", {}).get("newer_first")), _pct(figures["ku_present"]["newer_first"]),
                 _pct(figures["ku"]["latest@5"]), _pct(figures["ku"]["latest@10"]),
                 *(_pct(figures.get(f"recall_{t}", {}).get("recall@10")) for t in types)]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"
