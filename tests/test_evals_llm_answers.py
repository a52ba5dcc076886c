"""evals.llm's answer evaluation: the stratified sample, recall@10 over de-duplicated turns, the
usage difference, the per-category summary, the arms of the command line and the plan replay's
scripted planner (the run itself needs
a real model and is in evals/README.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from evals.llm.__main__ import _arms
from evals.llm.answers import Arm, pick_deleted, recall_at, sample, usage_delta
from evals.llm.evaluate import markdown, summarise
from evals.llm.replay_plans import ReplayedPlanner
from evals.llm.replay_plans import markdown as replay_table
from evals.locomo_data import Conversation, Question, Turn


def _conversation(sample_id: str, per_category: int) -> Conversation:
    turn = Turn("D1:1", 1, 0, "Ann", "hello", None, datetime(2023, 5, 8, tzinfo=UTC))
    questions = tuple(
        Question(sample_id, index, category, f"q{index}?", "gold", ("D1:1",) if index % 7 else ())
        for index, category in enumerate(c for c in (1, 2, 3, 4, 5) for _ in range(per_category))
    )
    return Conversation(sample_id, (turn,), questions, 1)


def test_the_sample_takes_n_questions_with_evidence_per_category_the_same_for_a_seed():
    conversations = [_conversation("conv-a", 6), _conversation("conv-b", 6)]
    picked = sample(conversations, 4, seed=13)
    assert [sum(q.category == c for q in picked) for c in (1, 2, 3, 4, 5)] == [4, 4, 4, 4, 4]
    assert all(q.evidence for q in picked)
    assert [(q.sample_id, q.qa_index) for q in picked] == [(q.sample_id, q.qa_index) for q in sample(conversations, 4, 13)]
    assert len(sample(conversations, 50, 13)) == sum(1 for c in conversations for q in c.questions if q.evidence)


def test_recall_at_10_counts_every_turn_a_deduplicated_memory_stands_for():
    turns_of = {"m1": ["D1:1", "D3:4"], "m2": ["D2:2"], "m3": ["D9:9"]}
    assert recall_at(["m3", "m1"], turns_of, ("D3:4", "D2:2"), 10) == 0.5
    assert recall_at(["m3", "m1", "m2"], turns_of, ("D3:4", "D2:2"), 2) == 0.5
    assert recall_at(["m2", "m1"], turns_of, ("D3:4", "D2:2"), 10) == 1.0


def test_usage_is_the_difference_of_each_counter_per_operation():
    before = {"operations": [{"operation": "plan", "calls": 2, "prompt_tokens": 300, "cache_hit_rate": 0.0}]}
    after = {"operations": [{"operation": "plan", "calls": 5, "prompt_tokens": 900, "cache_hit_rate": 0.5},
                            {"operation": "answer", "calls": 3, "prompt_tokens": 4000, "cache_hit_rate": 0.0}]}
    assert usage_delta(before, after) == {"plan": {"calls": 3, "prompt_tokens": 600},
                                          "answer": {"calls": 3, "prompt_tokens": 4000}}


def test_deleted_evidence_questions_come_from_categories_1_2_and_4():
    picked = pick_deleted(sample([_conversation("conv-a", 6)], 5, 13), 100, seed=13)
    assert {q.category for q in picked} == {1, 2, 4} and len(picked) == 15


def _row(category: int, refused: bool, em: bool | None, f1: float | None, seconds: float) -> dict:
    return {"category": category, "refused": refused, "exact_match": em, "token_f1": f1,
            "citation_precision": None if refused else 0.5, "citation_recall": None if refused else 1.0,
            "recall_at_10_planned": 1.0, "recall_at_10_unplanned": 0.5, "seconds": seconds}


def test_the_summary_gives_percent_per_category_and_tokens_per_question():
    arm = {"rows": [_row(1, False, True, 1.0, 10.0), _row(1, True, False, 0.0, 20.0), _row(5, True, None, None, 30.0)],
           "usage": {"answer": {"calls": 3, "prompt_tokens": 4500, "completion_tokens": 300, "errors": 0}},
           "deleted_evidence": [{"refused": True}, {"refused": False}], "seconds": 60.0}
    summary = summarise(arm)
    one, adversarial, all_five = summary["groups"]["1"], summary["groups"]["5"], summary["groups"]["1-5"]
    assert (one["n"], one["exact_match"], one["token_f1"], one["refused"]) == (2, 50.0, 50.0, 50.0)
    assert (one["citation_precision"], one["citation_recall"], one["seconds_mean"]) == (50.0, 100.0, 15.0)
    assert (adversarial["refused"], adversarial["exact_match"], adversarial["token_f1"]) == (100.0, None, None)
    assert (all_five["n"], all_five["recall_at_10_planned"], all_five["recall_at_10_unplanned"]) == (3, 100.0, 50.0)
    assert summary["per_question_usage"] == {"answer": {"calls": 1.0, "prompt_tokens": 1500.0,
                                                        "completion_tokens": 100.0, "errors": 0.0}}
    assert (summary["deleted_evidence_refused"], summary["deleted_n"]) == (50.0, 2)
    arm["summary"] = summary
    table = markdown({"arms": {"main": arm}})
    assert "| main | 1 multi-hop | 2 | 50.0 | 50.0 | 50.0 | 50.0 | 100.0 | 100.0 | 50.0 | 15.0 |" in table
    assert "| main | 5 adversarial | 1 | - | - | 100.0 |" in table


def test_arms_default_to_the_installed_package_and_take_a_source_folder(tmp_path):
    assert _arms([]) == [Arm("main", None)]
    assert _arms(["old=" + str(tmp_path), "new"]) == [Arm("old", Path(tmp_path).resolve()), Arm("new", None)]


def test_an_arm_can_set_the_top_k_its_questions_are_asked_with(tmp_path):
    assert _arms(["top5@5", f"old={tmp_path}@8"]) == [Arm("top5", None, 5), Arm("old", Path(tmp_path).resolve(), 8)]


def test_a_replayed_planner_answers_each_question_with_its_recorded_plan():

    rows = [{"question": "Where did Bob go?", "queries": ["Where did Bob go?", "Bob trip", "Bob travel"],
             "time_window": None}]
    with ReplayedPlanner(rows) as planner:
        def ask(question: str) -> httpx.Response:
            body = {"model": "m", "messages": [{"role": "system", "content": "plan"},
                                               {"role": "user", "content": question}]}
            return httpx.post(f"{planner.base_url}/chat/completions", json=body, timeout=5)

        reply = ask("Where did Bob go?")
        assert json.loads(reply.json()["choices"][0]["message"]["content"]) == {
            "queries": ["Bob trip", "Bob travel"], "time_window": None}
        assert ask("Who is Bob?").status_code == 400
        assert planner.unknown == 1


def test_two_recorded_plans_for_one_question_are_refused():
    rows = [{"question": "q?", "queries": ["q?", "a"], "time_window": None},
            {"question": "q?", "queries": ["q?", "b"], "time_window": None}]
    with pytest.raises(ValueError, match="two recorded plans"):
        ReplayedPlanner(rows)


def test_the_replay_table_names_the_baseline_its_counts_compare_with():
    groups = {"1": {"n": 1, "recall_at_10": 50.0, "better": 1, "worse": 0},
              "all": {"n": 1, "recall_at_10": 50.0, "better": 1, "worse": 0}}
    only_half = replay_table({"baseline": "unplanned", "results": {"unplanned": groups, "rewrite_weight 0.5": groups}})
    assert "better / worse than unplanned |" in only_half
    assert "| rewrite_weight 0.5 | 50.0 | 50.0 | 1 / 0 |" in only_half
    assert "than weight 1 |" in replay_table({"baseline": "rewrite_weight 1", "results": {"rewrite_weight 1": groups}})
