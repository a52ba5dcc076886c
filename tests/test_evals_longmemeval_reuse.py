"""evals.longmemeval --reuse-ingest: a run over an earlier ingest stores nothing and ranks every question
as the run that stored it did, a memory standing for every turn with its content; the memory map comes
from the stored metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_evals_longmemeval import REPLY, _instance, _user

from evals.longmemeval import build_parser, run
from evals.longmemeval_data import load
from evals.longmemeval_reuse import turn_map
from evals.longmemeval_select import scored_questions

SAME = "Remind me to water the ficus on Sundays."


def _haystack(tmp_path: Path) -> Path:
    """Two scored questions; one says the same thing in two sessions (stored once by the server)."""
    questions = [
        _instance("q-ms", "multi-session", "How many plants do I water each week?", {
            "s_a": [_user(SAME), REPLY, _user("I bought a second monstera yesterday.", gold=True), REPLY],
            "s_b": [_user("What is a good recipe for lentil soup?"), REPLY],
            "answer_c": [_user("My basil on the balcony needs water daily.", gold=True), REPLY, _user(SAME)],
        }, ["s_a", "answer_c"]),
        _instance("q-ssu", "single-session-user", "What breed is my dog Biscuit?", {
            "answer_d": [_user("Biscuit, my beagle, chewed my running shoes again.", gold=True), REPLY],
            "s_e": [_user("Explain how compound interest works."), REPLY],
        }, ["answer_d"]),
    ]
    path = tmp_path / "haystack.json"
    path.write_text(json.dumps(questions), encoding="utf-8")
    return path


def test_a_memory_stands_for_every_turn_with_the_content_of_the_turn_its_metadata_names(tmp_path: Path) -> None:
    question = scored_questions(load(_haystack(tmp_path)))[0][0]
    memories = [{"memory_id": "m1", "metadata": {"session_id": "s_a", "turn": 0}},
                {"memory_id": "m2", "metadata": {"session_id": "answer_c", "turn": 0}}]
    assert turn_map(question, memories) == {"m1": ["s_a:0", "answer_c:2"], "m2": ["answer_c:0"]}
    with pytest.raises(ValueError, match="names turn 's_x:0'"):
        turn_map(question, [{"memory_id": "m3", "metadata": {"session_id": "s_x", "turn": 0}}])


@pytest.mark.anyio
async def test_a_reused_ingest_stores_nothing_and_ranks_as_the_run_that_stored_it(
    tmp_path, pg_url, work_dir, empty_tables
):
    data = _haystack(tmp_path)
    reports = {}
    for name, reuse in (("stored", []), ("reused", ["--reuse-ingest"])):
        reports[name] = tmp_path / f"{name}.json"
        args = build_parser().parse_args(["--data", str(data), "--database-url", pg_url, "--data-dir", str(work_dir),
                                          "--report", str(reports[name]), "--top-k", "5", "--per-question", *reuse])
        assert await run(args) == 0
    stored, reused = (json.loads(path.read_text())["retrievers"]["default"] for path in reports.values())
    assert stored["extra"]["stored"] == 7 and stored["extra"]["deduplicated"] == 1
    assert reused["extra"]["stored"] == 0
    assert reused["per_question"] == stored["per_question"]
    assert ["s_a:0", "answer_c:2"] in stored["per_question"][0]["ranked"]


@pytest.mark.anyio
async def test_reusing_an_ingest_that_lacks_a_question_is_refused_naming_the_option(
    tmp_path, pg_url, work_dir, empty_tables
):
    args = build_parser().parse_args(["--data", str(_haystack(tmp_path)), "--database-url", pg_url,
                                      "--data-dir", str(work_dir), "--report", str(tmp_path / "r.json"),
                                      "--reuse-ingest"])
    with pytest.raises(ValueError, match="--reuse-ingest: 2 sessions hold no memory"):
        await run(args)
