"""evals.longmemeval_halves: a question's half is fixed by its id, and a report is re-scored per half."""

from __future__ import annotations

import pytest

from evals.longmemeval_halves import half, halves_table


def _row(question_id: str, hit: bool) -> dict:
    ranked = [["g:0"] if hit else ["x:0"], ["y:0"]]
    return {"question_id": question_id, "type": "MS", "gold_sessions": ["g"], "gold_turns": ["g:0"], "ranked": ranked}


def test_a_questions_half_is_the_parity_of_the_hash_of_its_id():
    assert [half(q) for q in ("q0", "q1", "q2", "q3")] == [half(q) for q in ("q0", "q1", "q2", "q3")]
    assert {half(f"q{i}") for i in range(20)} == {"A", "B"}


def test_the_table_gives_each_retriever_half_a_half_b_and_all():
    ids = [f"q{i}" for i in range(8)]
    rows = [_row(q, hit=half(q) == "A") for q in ids]
    n_a = sum(half(q) == "A" for q in ids)
    report = {"settings": {"ks": [1, 5]}, "retrievers": {"default": {"per_question": rows}}}
    table = halves_table(report)
    assert table[0] == "| type | n (A / B) | default |"
    assert f"| MS | {n_a} / {8 - n_a} | 100.0 / 0.0 / {100 * n_a / 8:.1f} |" in table
    with pytest.raises(SystemExit, match="--per-question"):
        halves_table({"settings": {"ks": [5]}, "retrievers": {"bm25": {}}})
