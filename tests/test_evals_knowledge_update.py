"""The knowledge-update evaluation's pure parts: which turns are latest and earlier evidence, and the figures."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from evals.knowledge_update import judge_cases
from evals.knowledge_update_score import best_rank, evidence, half, score_question, summarize
from evals.longmemeval_data import Question, Turn

T0 = datetime(2023, 5, 1, 10, 0)


def _question(question: str = "How many Korean restaurants have I tried?") -> Question:
    turns = (
        Turn("answer_1", 0, "I've tried three Korean restaurants.", T0, True),
        Turn("answer_1", 2, "Any tips for kimchi?", T0 + timedelta(seconds=2), False),
        Turn("noise", 0, "Plan my trip to Rome.", T0 + timedelta(days=10), False),
        Turn("answer_2", 0, "That makes four Korean restaurants now.", T0 + timedelta(days=40), True),
        Turn("answer_2", 2, "Still four, by the way.", T0 + timedelta(days=40, seconds=2), True),
    )
    return Question("q1", "knowledge-update", question, "four", T0 + timedelta(days=50), turns,
                    frozenset({"answer_1", "answer_2"}), frozenset(t.turn_id for t in turns if t.has_answer))


def test_the_latest_evidence_is_the_latest_gold_sessions_marked_turns_and_the_earlier_the_rest() -> None:
    split = evidence(_question())
    assert split.latest == {"answer_2:0", "answer_2:2"}
    assert split.earlier == {"answer_1:0"}


def test_newer_first_counts_a_missing_turn_as_last_and_two_missing_as_not_newer_first() -> None:
    question = _question()
    assert score_question(question, [("answer_2:0",), ("answer_1:0",)], past=False)["newer_first"] is True
    assert score_question(question, [("answer_1:0",), ("answer_2:2",)], past=False)["newer_first"] is False
    assert score_question(question, [("answer_2:2",)], past=False)["newer_first"] is True  # earlier missing
    assert score_question(question, [("noise:0",)], past=False)["newer_first"] is False
    assert best_rank([("noise:0",)], frozenset({"answer_1:0"})) == math.inf


def test_the_summary_gives_newer_first_latest_at_k_and_recall_per_type() -> None:
    question = _question()
    rows = [score_question(question, [("noise:0",), ("answer_2:0", "answer_2:2"), ("answer_1:0",)], past=False)]
    figures = summarize(rows)
    assert figures["ku"] == {"n": 1, "newer_first": 1.0, "latest@5": 1.0, "latest@10": 1.0}
    assert figures["recall_KU"]["recall@5"] == 1.0 and figures["recall_other"]["n"] == 0
    assert figures[f"ku_{half('q1')}"]["n"] == 1 and sum(figures[f"ku_{h}"]["n"] for h in "AB") == 1


def test_questions_fall_in_two_fixed_halves_by_a_hash_of_their_id() -> None:
    halves = [half(f"q{i}") for i in range(200)]
    assert set(halves) == {"A", "B"} and 80 <= halves.count("A") <= 120
    assert half("gpt4_2f91af09") == half("gpt4_2f91af09")  # the same id, the same half in every run


def test_the_scripted_judges_cases_have_the_latest_evidence_supersede_the_earlier() -> None:
    cases = {case["id"]: case for case in judge_cases([_question()])}
    assert cases["q1|answer_2:0"]["supersedes"] == ["q1|answer_1:0"]
    assert "supersedes" not in cases["q1|answer_1:0"] and "supersedes" not in cases["q1|noise:0"]
