"""The retrieval modes and levers the evals run the server in: recall settings overridden on top of
the server's own (``MODES`` in stage order, ``LEVERS`` one change each on top of the default)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LEVERS", "MODES", "Mode", "mode_recall_settings", "named_mode", "settings_changes"]


@dataclass(frozen=True)
class Mode:
    """One retrieval mode: recall settings overridden on top of the server's own.

    Attributes:
        name: short name used in tables, e.g. ``hybrid``.
        overrides: ``RecallSettings`` field -> value.
        description: what the mode retrieves with, for the report.
        step: what it adds to the mode before it in ``MODES`` (for the per-stage table).
    """

    name: str
    overrides: Mapping[str, float | int | str]
    description: str
    step: str


_NO_UPDATES = {"implicit_updates": False, "subject_updates": False}  # the stages before the last: no newer-over-older rule
_NO_SUPPLEMENT = {"recent_weight": 0, "window_weight": 0, "neighbor_weight": 0, **_NO_UPDATES}

MODES: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode(
            "vector",
            {"keyword_weight": 0, "trigram_weight": 0, "bigram_weight": 0, **_NO_SUPPLEMENT},
            "vector list only (MiniLM cosine, HNSW)",
            "baseline of the stages",
        ),
        Mode(
            "keyword",
            {"vector_weight": 0, **_NO_SUPPLEMENT},
            "keyword lists only: BM25 (weight 2) + identifier trigrams + CJK bigrams, RRF k=3",
            "keyword lists instead of the vector list",
        ),
        Mode(
            "hybrid-rrf60",
            {"neighbor_weight": 0, "recent_weight": 0, "rrf_k": 60, "keyword_weight": 1, **_NO_UPDATES},
            "vector + keyword lists, textbook RRF (k=60, keyword weight 1)",
            "vector list fused with the keyword lists, textbook RRF",
        ),
        Mode(
            "hybrid",
            {"neighbor_weight": 0, "recent_weight": 0, **_NO_UPDATES},
            "vector + keyword lists, tuned RRF (k=3, keyword weight 2)",
            "tuned RRF: k 60 -> 3, keyword weight 1 -> 2",
        ),
        Mode(
            "hybrid+supplement",
            {"neighbor_weight": 0, **_NO_UPDATES},
            "hybrid + the chronological supplement (recent list, weight 0.1; time window only with a planner)",
            "recent list (weight 0.1)",
        ),
        Mode(
            "no-updates",
            dict(_NO_UPDATES),
            "hybrid + supplement + neighbour spreading, without the implicit-update rule",
            "neighbour spreading (weight 0.5, 2 turns each side, 30 anchors)",
        ),
        Mode(
            "default",
            {},
            "the product default: hybrid + supplement + neighbour spreading + implicit updates",
            "implicit updates (the newer of two memories stating another value of the same thing ranks above)",
        ),
    )
}
"""Retrieval modes in stage order: each adds one thing to the one before (``keyword`` swaps lists)."""

LEVERS: dict[str, Mode] = {
    mode.name: mode
    for mode in (
        Mode("subject", {"subject_updates": True}, "default + the same-subject rule (pipeline/subject_updates.py)",
             "subject_updates false -> true"),
        Mode("span1", {"neighbor_span": 1}, "default, 1 neighbour each side", "neighbor_span 2 -> 1"),
        Mode("span3", {"neighbor_span": 3}, "default, 3 neighbours each side", "neighbor_span 2 -> 3"),
        Mode("span4", {"neighbor_span": 4}, "default, 4 neighbours each side", "neighbor_span 2 -> 4"),
        Mode("nw0.3", {"neighbor_weight": 0.3}, "default, neighbour weight 0.3", "neighbor_weight 0.5 -> 0.3"),
        Mode("nw0.8", {"neighbor_weight": 0.8}, "default, neighbour weight 0.8", "neighbor_weight 0.5 -> 0.8"),
        Mode("anchors60", {"neighbor_anchors": 60}, "default, 60 anchors", "neighbor_anchors 30 -> 60"),
        Mode("episode", {"neighbor_aggregate": "sum"}, "default, neighbours inherit the sum of their anchors",
             "neighbor_aggregate max -> sum"),
        Mode("episode4", {"neighbor_aggregate": "sum", "neighbor_span": 4, "neighbor_weight": 0.3},
             "episodes of 4 each side, sum, weight 0.3", "sum over 4 each side, weight 0.3"),
        Mode("prf3", {"prf_memories": 3}, "default + feedback from the top 3 memories (8 words)",
             "pseudo-relevance feedback, 3 memories, 8 words"),
        Mode("prf5", {"prf_memories": 5, "prf_terms": 12}, "default + feedback from the top 5 memories (12 words)",
             "pseudo-relevance feedback, 5 memories, 12 words"),
        Mode("entity1", {"entity_weight": 1.0}, "default + the entity list (weight 1)", "entity list, weight 1"),
        Mode("entity2", {"entity_weight": 2.0}, "default + the entity list (weight 2)", "entity list, weight 2"),
        Mode("entity0.5", {"entity_weight": 0.5}, "default + the entity list (weight 0.5)", "entity list, weight 0.5"),
        Mode("prf3-half", {"prf_memories": 3, "prf_weight": 0.5}, "default + feedback from the top 3 (list weight 0.5)",
             "pseudo-relevance feedback, 3 memories, list weight 0.5"),
        Mode("no-time-expressions", {"time_expressions": False},
             "default without the time-expression window (the default before it was on)",
             "recall.time_expressions on -> off"),
        Mode("prf3+entity0.5", {"prf_memories": 3, "prf_weight": 0.5, "entity_weight": 0.5},
             "default + feedback (3 memories, weight 0.5) + entity list (weight 0.5)", "feedback and entity list, 0.5 each"),
        Mode("vfb4", {"vector_feedback": 4}, "default + vector feedback (centroid of the top 4, list weight 0.5)",
             "vector feedback, 4 memories, weight 0.5"),
        Mode("vfb1w1", {"vector_feedback": 1, "vector_feedback_weight": 1.0},
             "default + vector feedback (the top memory's vector, list weight 1)", "vector feedback, 1 memory, weight 1"),
        Mode("rrf5-vw1.5", {"rrf_k": 5, "vector_weight": 1.5}, "default with RRF k 5 and vector weight 1.5",
             "rrf_k 3 -> 5, vector_weight 1 -> 1.5"),
        Mode("window2", {"window_weight": 2.0}, "default, the time window's list at weight 2",
             "window_weight 1 -> 2"),
        Mode("window3", {"window_weight": 3.0}, "default, the time window's list at weight 3",
             "window_weight 1 -> 3"),
        Mode("window5", {"window_weight": 5.0}, "default, the time window's list at weight 5",
             "window_weight 1 -> 5"),
        Mode("anchors45-gap600", {"neighbor_anchors": 45, "neighbor_max_gap_s": 600},
             "default, 45 anchors, neighbours at most 600 s apart", "neighbor_anchors 30 -> 45, neighbor_max_gap_s 3600 -> 600"),
    )
}
"""Levers measured against ``default``: each overrides the default settings with one change."""


def named_mode(name: str) -> Mode:
    """A mode of ``MODES`` or ``LEVERS`` by name (KeyError if neither has it)."""
    return MODES[name] if name in MODES else LEVERS[name]


def mode_recall_settings(mode: Mode, base: Any) -> Any:
    """The ``RecallSettings`` of a mode: ``base`` (the server's own) with the mode's overrides.

    Args:
        mode: the mode.
        base: a ``mcp_memory.settings.RecallSettings``.

    Returns:
        A validated ``RecallSettings``.

    Raises:
        ValueError: an override names no ``RecallSettings`` field, or its value is out of range.
    """
    fields = type(base).model_fields
    unknown = sorted(set(mode.overrides) - set(fields))
    if unknown:
        raise ValueError(f"mode {mode.name!r}: RecallSettings has no field {', '.join(unknown)}")
    return type(base).model_validate({**base.model_dump(), **mode.overrides})


def settings_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """``"key a -> b"`` for every key whose value differs between two settings dumps, in ``after``'s order."""
    return [f"{key} {before.get(key)} -> {value}" for key, value in after.items() if before.get(key) != value]
