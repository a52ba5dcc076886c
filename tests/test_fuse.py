"""Fusion is a pure, deterministic function of its lists."""

from datetime import UTC, datetime, timedelta

import pytest

from mcp_memory.pipeline.fuse import adjust, rrf, spread
from mcp_memory.models import Candidate


def test_rrf_sums_reciprocal_ranks_across_lists():
    fused = dict(rrf({"vector:0": ["a", "b"], "keyword:0": ["b", "c"]}, {}, k=60))
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["c"] == pytest.approx(1 / 62)


def test_rrf_breaks_equal_scores_by_memory_id_whatever_the_list_order():
    one = rrf({"vector:0": ["z", "y"], "keyword:0": ["y", "z"]}, {}, k=60)
    two = rrf({"keyword:0": ["y", "z"], "vector:0": ["z", "y"]}, {}, k=60)
    assert one == two
    assert [memory_id for memory_id, _ in one] == ["y", "z"]


def test_rrf_weights_apply_by_list_kind_and_zero_drops_a_list():
    fused = dict(rrf({"vector:0": ["a"], "vector:1": ["a"], "recent": ["r"]}, {"vector": 2.0, "recent": 0}, k=60))
    assert fused == {"a": pytest.approx(4 / 61)}


def test_rewrite_weight_scales_only_the_lists_of_the_planners_rewrites():
    lists = {"vector:0": ["q"], "keyword:1": ["r"], "vector:12": ["r"], "recent": ["n"], "bigram:cjk": ["c"]}
    fused = dict(rrf(lists, {"keyword": 2.0}, k=60, rewrite_weight=0.25))
    assert fused == {
        "q": pytest.approx(1 / 61),
        "r": pytest.approx(0.25 * (2 / 61 + 1 / 61)),
        "n": pytest.approx(1 / 61),
        "c": pytest.approx(1 / 61),
    }
    assert "r" not in dict(rrf(lists, {}, k=60, rewrite_weight=0))


def test_spread_lifts_the_neighbour_of_a_strong_match():
    fused = [("hit", 0.05), ("far", 0.02)]
    spread_scores = dict(spread(fused, {"hit": ["next"]}, weight=0.5))
    assert spread_scores["next"] == pytest.approx(0.025)
    assert spread_scores["hit"] == pytest.approx(0.05)
    assert spread(fused, {"hit": ["next"]}, weight=0) == fused


def _candidate(memory_id: str, age_days: float, importance: float | None, now: datetime) -> Candidate:
    return Candidate(
        memory_id=memory_id,
        content=memory_id,
        occurred_at=now - timedelta(days=age_days),
        metadata={},
        importance=importance,
        score=1.0,
    )


def test_adjust_halves_the_score_per_half_life_and_boosts_importance():
    now = datetime(2025, 1, 1, tzinfo=UTC)
    old, new, key = (
        _candidate("old", 30, None, now),
        _candidate("new", 0, None, now),
        _candidate("key", 30, 1.0, now),
    )
    ranked = {c.memory_id: c.score for c in adjust([old, new, key], now, half_life_days=30, importance_weight=1.0)}
    assert ranked == {"old": pytest.approx(0.5), "new": pytest.approx(1.0), "key": pytest.approx(1.0)}
    assert [c.score for c in adjust([old], now, half_life_days=None, importance_weight=0)] == [1.0]


def test_adjust_with_no_half_life_and_no_importance_weight_keeps_every_score_and_sorts():
    now = datetime(2025, 1, 1, tzinfo=UTC)
    pool = [
        _candidate("b", 400, 1.0, now).model_copy(update={"score": 0.25}),
        _candidate("a", 1, None, now).model_copy(update={"score": 0.5}),
        _candidate("c", 3, 0.2, now).model_copy(update={"score": 0.25}),
    ]
    ranked = adjust(pool, now, half_life_days=None, importance_weight=0.0)
    assert [(c.memory_id, c.score) for c in ranked] == [("a", 0.5), ("b", 0.25), ("c", 0.25)]
    assert ranked == adjust(pool, now, half_life_days=None, importance_weight=0.0)
