"""Tests of the mixed suite's generator and of the runner's pure scoring; no server is started."""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # evals/ is not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from evals.generate_mixed import DEFAULT_SEED, KINDS, day_en, day_zh, generate, render  # noqa: E402
from evals.mixed import score  # noqa: E402

CJK = re.compile(r"[\u4e00-\u9fff]")
DATE_ANSWER = re.compile(r"^(\d{1,2} [A-Z][a-z]+ \d{4}|\d{4}年\d{1,2}月\d{1,2}日)$")


@pytest.fixture(scope="module")
def cases() -> dict[str, Any]:
    return generate(DEFAULT_SEED)


def test_same_seed_gives_a_byte_identical_file_and_another_seed_does_not() -> None:
    assert render(generate(7)) == render(generate(7))
    assert render(generate(7)) != render(generate(8))


def test_committed_case_file_is_what_the_default_seed_generates(cases: dict[str, Any]) -> None:
    committed = (REPO_ROOT / "evals" / "cases" / "mixed.json").read_text(encoding="utf-8")
    assert committed == render(cases), "regenerate: python -m evals.generate_mixed --output evals/cases/mixed.json"


@pytest.mark.parametrize("seed", [DEFAULT_SEED, 1, 2])
def test_every_seed_gives_1000_memories_and_154_questions_with_a_third_in_chinese(seed: int) -> None:
    generated = generate(seed)
    memories, questions = generated["memories"], generated["questions"]
    assert (len(memories), len(questions)) == (1000, 154)
    assert sum(m["language"] == "zh" for m in memories) >= 200
    assert sum(q["language"] == "zh" for q in questions) >= 20
    kinds = Counter(q["kind"] for q in questions)
    assert set(kinds) == set(KINDS) and min(kinds.values()) >= 10
    assert generated["counts"]["memories_zh"] == sum(m["language"] == "zh" for m in memories)


def test_sessions_cover_users_projects_and_agents(cases: dict[str, Any]) -> None:
    sessions = {m["session"] for m in cases["memories"]}
    assert {s.split(":")[0] for s in sessions} == {"user", "project", "agent"}
    assert {q["session"] for q in cases["questions"]} == sessions


def test_language_labels_match_the_text(cases: dict[str, Any]) -> None:
    for item in cases["memories"]:
        assert bool(CJK.search(item["content"])) == (item["language"] == "zh"), item
    for item in cases["questions"]:
        assert bool(CJK.search(item["query"])) == (item["language"] == "zh"), item


def test_ids_are_sequential_and_every_evidence_id_names_a_memory_of_the_question_session(
    cases: dict[str, Any],
) -> None:
    memories = {m["id"]: m for m in cases["memories"]}
    assert list(memories) == [f"m{i:04d}" for i in range(1, 1001)]
    assert [q["id"] for q in cases["questions"]] == [f"q{i:03d}" for i in range(1, 155)]
    for question in cases["questions"]:
        assert question["evidence"]
        for case_id in question["evidence"] + question.get("superseded", []):
            assert memories[case_id]["session"] == question["session"], question["id"]


def test_updates_name_older_superseded_memories(cases: dict[str, Any]) -> None:
    memories = {m["id"]: m for m in cases["memories"]}
    updates = [q for q in cases["questions"] if q["kind"] == "update"]
    assert updates and all(q.get("superseded") for q in updates)
    for question in (q for q in cases["questions"] if q.get("superseded")):
        newest = datetime.fromisoformat(memories[question["evidence"][0]]["occurred_at"])
        for case_id in question["superseded"]:
            assert datetime.fromisoformat(memories[case_id]["occurred_at"]) < newest, question["id"]


def test_supersedes_names_an_older_memory_of_the_same_session(cases: dict[str, Any]) -> None:
    memories = {m["id"]: m for m in cases["memories"]}
    marked = [m for m in cases["memories"] if m.get("supersedes")]
    assert len(marked) == cases["counts"]["supersessions"] == 46
    for memory in marked:
        for old_id in memory["supersedes"]:
            old = memories[old_id]
            assert old["session"] == memory["session"], memory["id"]
            assert datetime.fromisoformat(old["occurred_at"]) < datetime.fromisoformat(memory["occurred_at"])


def test_update_questions_supersede_along_the_recorded_chain_and_history_asks_for_the_memory_replaced(
    cases: dict[str, Any],
) -> None:
    memories = {m["id"]: m for m in cases["memories"]}
    superseded_by = {old: m["id"] for m in cases["memories"] for old in m.get("supersedes", [])}
    for question in cases["questions"]:
        if question["kind"] == "update":
            chain, current = [], question["evidence"][0]
            while memories[current].get("supersedes"):
                current = memories[current]["supersedes"][0]
                chain.append(current)
            assert sorted(chain) == sorted(question["superseded"]), question["id"]
        elif question["kind"] == "historical":
            assert len(question["evidence"]) == 1 and question["evidence"][0] in superseded_by, question["id"]
            assert "superseded" not in question
        elif question["kind"] == "unrelated":
            (evidence,) = question["evidence"]
            assert evidence not in superseded_by and not memories[evidence].get("supersedes"), question["id"]
    kinds = Counter(q["kind"] for q in cases["questions"])
    assert (kinds["update"], kinds["historical"], kinds["unrelated"]) == (30, 32, 16)


def test_expected_answers_come_from_the_evidence(cases: dict[str, Any]) -> None:
    memories = {m["id"]: m for m in cases["memories"]}
    for question in cases["questions"]:
        evidence = [memories[case_id] for case_id in question["evidence"]]
        if DATE_ANSWER.match(question["expected_answer"]) and question["kind"] == "temporal":
            when = datetime.fromisoformat(evidence[0]["occurred_at"])
            assert question["expected_answer"] in (day_en(when), day_zh(when)), question["id"]
        elif question["kind"] != "temporal":
            assert any(question["expected_answer"] in m["content"] for m in evidence), question["id"]


def test_contents_are_unique_per_session_and_some_repeat_across_sessions(cases: dict[str, Any]) -> None:
    per_session = Counter((m["session"], m["content"]) for m in cases["memories"])
    assert max(per_session.values()) == 1
    across = Counter(m["content"] for m in cases["memories"])
    assert any(count > 1 for count in across.values())


def test_occurred_at_is_iso_8601_with_a_zone_and_memories_keep_two_hours_apart(cases: dict[str, Any]) -> None:
    by_session: dict[str, list[datetime]] = {}
    for memory in cases["memories"]:
        when = datetime.fromisoformat(memory["occurred_at"])
        assert when.tzinfo is not None and re.search(r"[+-]\d\d:\d\d$", memory["occurred_at"])
        by_session.setdefault(memory["session"], []).append(when)
    for times in by_session.values():
        times.sort()
        assert min(later - earlier for earlier, later in zip(times, times[1:])).total_seconds() > 3600


QUESTION = {"session": "s", "evidence": ["m2"], "superseded": ["m1"]}


def test_score_counts_an_older_fact_ranked_first_as_a_hit_but_not_a_selection_or_ordering() -> None:
    result = score(QUESTION, ["m1", "m2", "m3"], ["s", "s", "s"], answered=False)
    assert (result.hit, result.selected, result.ordered, result.reciprocal_rank) == (True, False, False, 0.5)
    assert (result.recall, result.superseded_returned, result.leaks) == (1.0, 1, 0)


def test_score_selects_from_the_cited_set_when_the_server_answered() -> None:
    assert score(QUESTION, ["m3", "m2"], ["s", "s"], answered=True).selected
    assert not score(QUESTION, [], [], answered=True).selected


def test_score_counts_newer_first_when_the_superseded_fact_is_not_returned() -> None:
    assert score(QUESTION, ["m3", "m2"], ["s", "s"], answered=False).ordered is True
    assert score(QUESTION, ["m3", "m1"], ["s", "s"], answered=False).ordered is False
    assert score({"session": "s", "evidence": ["m2"]}, ["m2"], ["s"], answered=False).ordered is None


def test_score_counts_memories_of_other_sessions_as_leaks_and_unknown_ones_as_unmapped() -> None:
    result = score(QUESTION, ["m2", "x9", None], ["s", "other", None], answered=False)
    assert (result.leaks, result.unmapped) == (1, 1)


def test_score_gives_partial_recall_for_multi_evidence_questions() -> None:
    result = score({"session": "s", "evidence": ["a", "b"]}, ["c", "b"], ["s", "s"], answered=False)
    assert (result.recall, result.reciprocal_rank, result.selected) == (0.5, 0.5, False)


def test_mixed_runner_refuses_a_bad_top_k_or_a_missing_case_file_before_ingest(tmp_path, capsys, caplog) -> None:
    from evals.mixed import main

    with pytest.raises(SystemExit):
        main(["--top-k", "0"])
    assert "must be 1..100; got 0" in capsys.readouterr().err
    assert main(["--cases", str(tmp_path / "none.json"), "--data-dir", str(tmp_path)]) == 2
    assert "case file not found" in caplog.text


def test_store_waves_store_every_memory_after_the_ones_it_supersedes() -> None:
    from evals.mixed_configs import store_waves

    memories = [{"id": "c", "supersedes": ["b"]}, {"id": "a"}, {"id": "b", "supersedes": ["a"]}, {"id": "x"}]
    assert [[m["id"] for m in wave] for wave in store_waves(memories)] == [["a", "x"], ["b"], ["c"]]
    with pytest.raises(ValueError, match="cycle"):
        store_waves([{"id": "a", "supersedes": ["b"]}, {"id": "b", "supersedes": ["a"]}])


def test_supersession_figures_take_newer_first_from_updates_and_history_from_historical_hits() -> None:
    from evals.mixed_score import supersession_figures

    questions = [{"id": "u1", "kind": "update", "session": "s", "evidence": ["n"], "superseded": ["o"]},
                 {"id": "u2", "kind": "update", "session": "s", "evidence": ["n2"], "superseded": ["o2"]},
                 {"id": "h1", "kind": "historical", "session": "s", "evidence": ["o"]},
                 {"id": "r1", "kind": "unrelated", "session": "s", "evidence": ["z"]}]
    returned = [["n", "o"], ["o2", "n2"], ["n"], ["z"]]
    scores = [score(q, r, ["s"] * len(r), answered=False) for q, r in zip(questions, returned, strict=True)]
    figures = supersession_figures(questions, scores, {"h1": True})
    assert (figures["newer_first"], figures["history_found"], figures["history_found_included"]) == (0.5, 0.0, 1.0)
    assert figures["newer_first_found"] == 0.5
    assert (figures["unrelated_hit"], figures["rest_hit"], figures["all_hit"]) == (1.0, 1.0, 0.75)


def test_scripted_judge_replies_the_candidates_the_case_file_says_the_new_memory_supersedes() -> None:
    import httpx

    from evals.mixed_configs import ScriptedJudge

    memories = [{"id": "m1", "content": "Alice lives in Berlin."}, {"id": "m2", "content": "Bob lives in Rome."},
                {"id": "m3", "content": "Alice moved to Lisbon & Porto.", "supersedes": ["m1"]}]
    with ScriptedJudge(memories) as judge:
        prompt = ('<new_memory occurred_at="Tue 2 January 2024 00:00 UTC">Alice moved to Lisbon &amp; Porto.'
                  '</new_memory>\n<memory id="1" occurred_at="Sun 1 January 2023 00:00 UTC">Bob lives in Rome.</memory>'
                  '\n<memory id="2" occurred_at="Sun 1 January 2023 00:00 UTC">Alice lives in Berlin.</memory>')
        body = {"model": "scripted-judge", "messages": [{"role": "user", "content": prompt}]}
        reply = httpx.post(f"{judge.base_url}/chat/completions", json=body, timeout=10).json()
        other = httpx.post(f"{judge.base_url}/chat/completions", timeout=10,
                           json={"messages": [{"role": "user", "content": "plan this query"}]})
    assert json.loads(reply["choices"][0]["message"]["content"])["superseded"] == [
        {"id": "2", "old": "Alice lives in Berlin.", "new": "Alice moved to Lisbon & Porto."}]
    assert other.status_code == 400
    assert (judge.requests, judge.marked, judge.missed, judge.unexpected) == (1, 1, 0, 1)
