"""Supersession at recall: current memories rank above the ones they replaced.

A memory marked superseded (``store_memory``'s ``supersedes``, or the LLM on store) stays in the
session. Recall ranks its fused pool (``prefer_current``), then cuts it to top_k:

- A superseded memory is replaced in place by the current end of its chain (its successor, or
  the successor's successor ...): the successor moves up to the superseded memory's rank
  ("promoted") or, when no list found it, is read from the database ("pulled in").
- By default the superseded memory is then dropped when its successor matched the question on
  its own (ranked within top_k before this stage), and kept right below it ("demoted") when only
  the old memory matched, so the agent sees both the old wording it asked about and what
  replaced it; only the best-ranked old memory of a chain is kept so, the others are dropped.
- With history (``include_superseded=true``, or a question about the past, ``asks_about_past``)
  nothing is dropped: each current memory is followed by what it superseded (its history, read
  from the database, nearest link first), still each successor above what it superseded.

Scores: a promoted or pulled-in successor takes the score of the memory it replaced when that is
higher, pulled-in history that of its current memory, and scores are then capped from the top so
they never rise down the list. Failure policy: a database error raises (as every recall list).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_memory.db.repository import Repository
from mcp_memory.db.supersessions import MAX_CHAIN
from mcp_memory.models import Candidate, RecallFilter

__all__ = ["Preferred", "asks_about_past", "prefer_current", "rank"]

# Markers of a question about an earlier state. English: whole words or phrases, any case.
# Chinese: 以前/之前 (before), 原来/原先/当初/起初 (originally, at first), 曾经 (once, used to),
# 过去/以往/从前/先前/早先 (in the past, previously), 不再 (no longer). 以前 covers Japanese too.
_PAST_EN = re.compile(
    r"\b(?:before|previously|used to|did(?: \w+){1,3} use to|formerly|former|originally|at first|earlier|"
    r"no longer|any ?more|"
    r"in the past|back then|prior to)\b",
    re.IGNORECASE,
)
_PAST_CJK = re.compile("以前|之前|原来|原先|当初|起初|曾经|过去|以往|从前|先前|早先|不再")


def asks_about_past(query: str) -> bool:
    """True when ``query`` asks about an earlier state ("where did Alice live before?", "她以前住在哪里？").

    A keyword test, not a tense parser: a marker anywhere counts ("before", "previously", "used
    to" and "did ... use to", "formerly", "former", "originally", "at first", "earlier", "no longer", "anymore", "in
    the past", "back then", "prior to", and the Chinese markers above). A false positive only
    keeps superseded memories in the result (below their successors), as recall did before
    supersession existed.
    """
    return bool(_PAST_EN.search(query) or _PAST_CJK.search(query))


@dataclass
class Preferred:
    """``prefer_current``'s outcome: the top_k candidates and what supersession did, for the audit."""

    candidates: list[Candidate]
    detail: dict[str, Any] = field(default_factory=dict)


def _pool_end(candidate: Candidate, pool: Mapping[str, Candidate]) -> str | None:
    """The current end of ``candidate``'s chain if the pool holds every link to it, else None."""
    target = candidate.superseded_by
    for _ in range(MAX_CHAIN):
        found = pool.get(target) if target else None
        if found is None:
            return None
        if found.superseded_by is None:
            return target
        target = found.superseded_by
    return None


def rank(
    pool: Sequence[Candidate],
    successors: Mapping[str, Candidate],
    predecessors: Mapping[str, Sequence[Candidate]],
    history: bool,
    top_k: int,
) -> tuple[list[Candidate], dict[str, list[str]]]:
    """Re-rank a fused pool so that current memories come first (see the module docstring). Pure.

    Args:
        pool: fused candidates, best first, with their supersession state.
        successors: superseded memory_id -> the current end of its chain, for chains that leave
            the pool (``Repository.current_successors``).
        predecessors: current memory_id -> its history, nearest first (``Repository.predecessors``);
            read only with ``history``.
        history: keep superseded memories (below their successors) and add each current memory's history.
        top_k: how many to return.

    Returns:
        (the top_k candidates, {"promoted", "pulled_in", "demoted", "dropped": memory_ids}).
    """
    by_id = {candidate.memory_id: candidate for candidate in pool}
    top = {candidate.memory_id for candidate in pool[:top_k]}  # what the question matched on its own
    placed: dict[str, Candidate] = {}
    events: dict[str, list[str]] = {"promoted": [], "pulled_in": [], "demoted": [], "dropped": []}

    def put(candidate: Candidate, score: float) -> None:
        placed[candidate.memory_id] = candidate.model_copy(update={"score": score})

    def put_current(candidate: Candidate, score: float) -> None:
        put(candidate, score)
        for old in predecessors.get(candidate.memory_id, ()) if history else ():
            if old.memory_id in placed:
                continue
            if old.memory_id in by_id:
                put(by_id[old.memory_id], by_id[old.memory_id].score)
            else:
                events["pulled_in"].append(old.memory_id)
                put(old, score)

    for candidate in pool:
        if candidate.memory_id in placed:
            continue
        if candidate.superseded_by is None:
            put_current(candidate, candidate.score)
            continue
        end = _pool_end(candidate, by_id)
        successor = by_id[end] if end is not None else successors.get(candidate.memory_id)
        if successor is None:  # the chain could not be followed (too long): leave it where it is
            put(candidate, candidate.score)
            continue
        in_pool = successor.memory_id in by_id
        moved = successor.memory_id not in placed
        if moved:
            events["promoted" if in_pool else "pulled_in"].append(successor.memory_id)
            put_current(successor, max(successor.score if in_pool else 0.0, candidate.score))
        if history or (moved and successor.memory_id not in top):  # one old wording per successor
            if candidate.memory_id not in placed:
                put(candidate, candidate.score)
            if moved:
                events["demoted"].append(candidate.memory_id)
        else:
            events["dropped"].append(candidate.memory_id)

    ranked: list[Candidate] = []
    ceiling = float("inf")
    for candidate in placed.values():
        if candidate.score > ceiling:
            candidate = candidate.model_copy(update={"score": ceiling})
        ceiling = candidate.score
        ranked.append(candidate)
    return ranked[:top_k], events


async def prefer_current(
    repository: Repository,
    session: str,
    query: str,
    pool: list[Candidate],
    top_k: int,
    include_superseded: bool,
    filters: RecallFilter | None = None,
) -> Preferred:
    """Rank ``pool`` (fused, best first) so current memories come first, and cut it to ``top_k``.

    Reads the database only when the pool needs it: the current successors of superseded
    memories whose chain leaves the pool, and, with history, what the current memories superseded.
    A pool with no supersession in it is returned as it was (cut to top_k). Nothing outside
    ``filters`` is read: a superseded memory whose current successor lies outside stays where it
    ranked (the chain cannot be followed inside the filter), and history outside is left out.

    Returns:
        Preferred: the candidates, and for the audit ``{"past_question", "include_superseded",
        "promoted", "pulled_in", "demoted", "dropped"}`` (memory_ids; lists empty when nothing moved).

    Raises:
        DatabaseUnavailable: PostgreSQL could not be reached.
    """
    past = asks_about_past(query)
    history = include_superseded or past
    detail: dict[str, Any] = {"past_question": past, "include_superseded": include_superseded}
    quiet = {"promoted": [], "pulled_in": [], "demoted": [], "dropped": []}
    if not any(c.superseded_by or (history and c.superseded_others) for c in pool):
        return Preferred(pool[:top_k], {**detail, **quiet})
    by_id = {candidate.memory_id: candidate for candidate in pool}
    leaving = [c.memory_id for c in pool if c.superseded_by and _pool_end(c, by_id) is None]
    successors = await repository.current_successors(session, leaving, filters) if leaving else {}
    predecessors: dict[str, list[Candidate]] = {}
    if history:
        heads = [c.memory_id for c in pool if c.superseded_by is None and c.superseded_others]
        heads = list(dict.fromkeys([*heads, *(s.memory_id for s in successors.values())]))
        if heads:
            predecessors = await repository.predecessors(session, heads, max(top_k, 1) * len(heads), filters)
    ranked, events = rank(pool, successors, predecessors, history, top_k)
    return Preferred(ranked, {**detail, **events})
