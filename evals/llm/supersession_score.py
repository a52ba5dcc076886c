"""The pure parts of ``python -m evals.llm.supersession``: which memories are stored how, and the scores.

A run stores chosen sessions of the mixed suite's case file in time order. Each session given as
``name@N`` has its first N memories stored as context, with no model asked; the rest are the
judged stores, each stored with the model as ``llm.supersede_model``. Scores compare the pairs
(older case id, newer case id) the server reported in ``store_memory``'s ``superseded`` with the
case file's ``supersedes`` links whose newer memory was a judged store.

Failure policy: bad input raises ``ValueError`` with a one-line message naming what is wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

__all__ = ["Slice", "distribution", "expected_links", "parse_slices", "score_pairs", "select"]

Pair = tuple[str, str]  # (older case id, newer case id)


@dataclass(frozen=True)
class Slice:
    """One chosen session.

    Attributes:
        session: the case file's session name.
        context: how many of its first memories (in time order) are stored without the model.
    """

    session: str
    context: int = 0


def parse_slices(text: str, sizes: Mapping[str, int]) -> list[Slice]:
    """``--sessions``: comma-separated ``name`` or ``name@N`` (N memories of context), in run order.

    Args:
        text: the option's value, e.g. ``user:chen-jie@28,user:bob``.
        sizes: session name -> number of memories in the case file.

    Raises:
        ValueError: empty, an unknown or repeated session, or N not an integer in 0..size-1.
    """
    slices: list[Slice] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, at, count = item.rpartition("@") if "@" in item else (item, "", "0")
        if name not in sizes:
            raise ValueError(f"--sessions: unknown session {name!r}; the case file has {', '.join(sizes)}")
        if not count.isdigit() or int(count) >= sizes[name]:
            raise ValueError(f"--sessions: context of {name} must be an integer 0..{sizes[name] - 1}; got {count!r}")
        if any(s.session == name for s in slices):
            raise ValueError(f"--sessions: {name} is given twice")
        slices.append(Slice(name, int(count)))
    if not slices:
        raise ValueError("--sessions: name at least one session")
    return slices


def select(memories: Sequence[dict[str, Any]], slices: Sequence[Slice],
           limit: int | None = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(context memories, judged memories) of the chosen sessions, each list in storage order.

    Sessions follow ``slices``' order; inside one, memories go by ``occurred_at`` (ties by file
    order), so every memory is stored after the ones it supersedes. ``limit`` keeps only the first
    ``limit`` judged memories (and drops every later one).

    Raises:
        ValueError: a memory supersedes one that is not stored before it.
    """
    context: list[dict[str, Any]] = []
    judged: list[dict[str, Any]] = []
    for chosen in slices:
        own = [(datetime.fromisoformat(m["occurred_at"]), index, m)
               for index, m in enumerate(memories) if m["session"] == chosen.session]
        ordered = [m for _, _, m in sorted(own, key=lambda item: item[:2])]
        seen: set[str] = set()
        for memory in ordered:
            missing = [old for old in memory.get("supersedes", []) if old not in seen]
            if missing:
                raise ValueError(f"{memory['id']} supersedes {missing}, which do not happen before it")
            seen.add(memory["id"])
        context += ordered[: chosen.context]
        judged += ordered[chosen.context:]
    return context, judged if limit is None else judged[:limit]


def expected_links(memories: Sequence[dict[str, Any]], judged: Iterable[str]) -> tuple[set[Pair], set[Pair]]:
    """(direct, implied) pairs whose newer memory is in ``judged``.

    Direct pairs are the case file's ``supersedes`` links. Implied pairs follow a chain past its
    next link (Berlin -> Copenhagen -> Vienna implies Berlin -> Vienna): the server shows only
    current memories, so it can mark one only when the link between was missed; marking it is
    right, but it is not needed for recall.
    """
    older_of = {m["id"]: list(m.get("supersedes", [])) for m in memories}
    direct: set[Pair] = set()
    implied: set[Pair] = set()
    for newer in judged:
        direct.update((older, newer) for older in older_of[newer])
        stack = [further for older in older_of[newer] for further in older_of[older]]
        while stack:
            older = stack.pop()
            if (older, newer) not in implied:
                implied.add((older, newer))
                stack.extend(older_of[older])
    return direct, implied - direct


def score_pairs(direct: set[Pair], implied: set[Pair], marked: set[Pair],
                shown: set[Pair] | None = None) -> dict[str, Any]:
    """Precision and recall of the marked pairs.

    Args:
        direct: the expected links (``expected_links``).
        implied: chain-implied pairs: right when marked, but not counted in recall.
        marked: the pairs the server reported superseded.
        shown: the direct links whose older memory was among the candidates shown to the model.

    Returns:
        ``expected``, ``marked``, ``true_positives`` (direct links marked), ``implied_marked``,
        ``false_positives`` (the other marked pairs, sorted), ``precision`` = (true positives +
        implied marked) / marked, ``recall`` = true positives / expected, and with ``shown``:
        ``shown`` and ``recall_of_shown`` = true positives / shown. A ratio with a zero
        denominator is None.
    """
    true_positives = marked & direct
    implied_marked = marked & implied
    false_positives = sorted(marked - direct - implied)
    right = len(true_positives) + len(implied_marked)
    figures: dict[str, Any] = {
        "expected": len(direct), "marked": len(marked), "true_positives": len(true_positives),
        "implied_marked": len(implied_marked), "false_positives": false_positives,
        "precision": right / len(marked) if marked else None,
        "recall": len(true_positives) / len(direct) if direct else None,
        "missed": sorted(direct - marked),
    }
    if shown is not None:
        figures["shown"] = len(shown)
        figures["recall_of_shown"] = len(true_positives & shown) / len(shown) if shown else None
    return figures


def distribution(values: Sequence[float]) -> dict[str, float | int | None]:
    """``n``, ``mean``, ``p50`` and ``p95`` (nearest rank below, as ``evals.mixed``) of durations, in their unit."""
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p95": None}
    ordered = sorted(values)
    middle = len(ordered) // 2
    p50 = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"n": len(ordered), "mean": round(sum(ordered) / len(ordered), 3), "p50": round(p50, 3),
            "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3)}
