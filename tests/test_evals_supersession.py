"""evals.llm.supersession: which memories a run stores how, the pair scores, the arguments, and one run
end to end against the scripted OpenAI-compatible server answering as llama-cpp-python does."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fake_openai import ChatReply, FakeOpenAI

from evals.llm.supersession import parse, print_report, run
from evals.llm.supersession_score import Slice, distribution, expected_links, parse_slices, score_pairs, select

SIZES = {"user:a": 4, "user:b": 3}


def _memory(case_id: str, session: str, day: int, supersedes: list[str] | None = None) -> dict[str, Any]:
    memory = {"id": case_id, "session": session, "content": f"content of {case_id}",
              "occurred_at": f"2024-01-{day:02d}T08:00:00+00:00"}
    return {**memory, "supersedes": supersedes} if supersedes else memory


# a1 -> a2 -> a4 is a chain (a4 implies a1); the file lists a4 before a3, but a3 happened first.
MEMORIES = [_memory("a1", "user:a", 1), _memory("a2", "user:a", 2, ["a1"]), _memory("a4", "user:a", 9, ["a2"]),
            _memory("a3", "user:a", 3), _memory("b1", "user:b", 1), _memory("b2", "user:b", 2, ["b1"]),
            _memory("b3", "user:b", 3)]


def test_sessions_are_read_in_the_order_given_with_an_optional_count_of_context_memories():
    assert parse_slices("user:b@2, user:a", SIZES) == [Slice("user:b", 2), Slice("user:a", 0)]


@pytest.mark.parametrize(("text", "message"), [
    ("user:c", "unknown session 'user:c'"), ("user:a@4", "context of user:a must be an integer 0..3; got '4'"),
    ("user:a@x", "got 'x'"), ("user:a@", "got ''"), ("user:a,user:a@1", "user:a is given twice"),
    (" , ", "name at least one session"),
])
def test_a_bad_session_list_is_refused_naming_what_is_wrong(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_slices(text, SIZES)


def test_memories_are_stored_in_time_order_per_session_and_context_comes_before_the_judged_stores():
    context, judged = select(MEMORIES, [Slice("user:b", 1), Slice("user:a", 2)])
    assert [m["id"] for m in context] == ["b1", "a1", "a2"]
    assert [m["id"] for m in judged] == ["b2", "b3", "a3", "a4"]
    limited = select(MEMORIES, [Slice("user:b", 1), Slice("user:a", 2)], limit=3)[1]
    assert [m["id"] for m in limited] == ["b2", "b3", "a3"]


def test_a_memory_that_supersedes_a_later_one_is_refused():
    broken = [_memory("x1", "user:a", 5), _memory("x2", "user:a", 4, ["x1"])]
    with pytest.raises(ValueError, match=r"x2 supersedes \['x1'\], which do not happen before it"):
        select(broken, [Slice("user:a")])


def test_expected_links_are_the_judged_memories_supersedes_and_chains_imply_the_rest():
    direct, implied = expected_links(MEMORIES, ["a3", "a4", "b2"])
    assert direct == {("a2", "a4"), ("b1", "b2")}
    assert implied == {("a1", "a4")}


def test_precision_counts_implied_pairs_as_right_and_recall_counts_only_direct_links():
    direct = {("a2", "a4"), ("b1", "b2"), ("c1", "c2")}
    marked = {("a1", "a4"), ("b1", "b2"), ("b1", "b3"), ("c0", "c2")}
    figures = score_pairs(direct, {("a1", "a4")}, marked, shown={("b1", "b2"), ("c1", "c2")})
    assert figures == {"expected": 3, "marked": 4, "true_positives": 1, "implied_marked": 1,
                       "false_positives": [("b1", "b3"), ("c0", "c2")], "precision": 0.5, "recall": 1 / 3,
                       "missed": [("a2", "a4"), ("c1", "c2")], "shown": 2, "recall_of_shown": 0.5}


def test_nothing_marked_and_nothing_expected_give_no_ratio_rather_than_zero():
    figures = score_pairs(set(), set(), set(), shown=set())
    assert (figures["precision"], figures["recall"], figures["recall_of_shown"]) == (None, None, None)


def test_durations_are_summarised_as_mean_median_and_nearest_rank_p95():
    assert distribution([4.0, 1.0, 2.0, 3.0]) == {"n": 4, "mean": 2.5, "p50": 2.5, "p95": 3.0}
    assert distribution([]) == {"n": 0, "mean": None, "p50": None, "p95": None}


@pytest.mark.parametrize(("extra", "message"), [
    (["--judge-url", "127.0.0.1:8080/v1"], "--judge-url must be an http(s) URL"),
    (["--timeout-s", "0"], "--timeout-s must be > 0"),
    (["--limit", "0"], "must be >= 1; got 0"),
    (["--sessions", "user:nobody"], "unknown session 'user:nobody'"),
])
def test_bad_arguments_exit_2_before_anything_is_stored(extra, message, capsys):
    argv = ["--judge-url", "http://127.0.0.1:9/v1", "--judge-model", "m", "--sessions", "user:alice", *extra]
    with pytest.raises(SystemExit) as exited:
        parse(argv)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


# The end-to-end run: similarities from the real model (MiniLM) put BERLIN alone near LISBON, MONDAY alone
# near THURSDAY (0.88), both meeting memories near WEEKLY (0.87, 0.84), and nothing near INVOICE. The runs
# show the vector candidates only (supersede.keyword_candidates 0: "Alice" alone would show BERLIN to MONDAY).
BERLIN = "Alice lives in Berlin, in a flat in Kreuzberg."
MONDAY = "Alice's team meeting is on Mondays at 10:00."
LISBON = "Alice moved from Berlin to Lisbon; she lives in Lisbon now."
THURSDAY = "Alice's team meeting moved from Mondays to Thursdays at 15:00."
INVOICE = "The invoice INV-2291 for the printer toner was paid by bank transfer."
WEEKLY = "Alice's weekly team meeting is now held on Thursdays instead of Mondays."
# What the scripted model marks: right for LISBON, nothing for THURSDAY (a miss), MONDAY for WEEKLY (a pair
# the case file does not name: a false positive).
PICKS = {LISBON: [BERLIN], THURSDAY: [], WEEKLY: [MONDAY]}
_NEW = re.compile(r'<new_memory occurred_at="[^"]+">(.*?)</new_memory>')
_CANDIDATE = re.compile(r'<memory id="([^"]+)" occurred_at="[^"]+">(.*?)</memory>')


def _judge(body: dict[str, Any]) -> ChatReply:
    user = body["messages"][-1]["content"]
    new = _NEW.search(user).group(1)
    chosen = [{"id": ref, "old": text, "new": new} for ref, text in _CANDIDATE.findall(user) if text in PICKS[new]]
    return ChatReply(json.dumps({"superseded": chosen, "reason": "scripted"}), prompt_tokens=100, completion_tokens=20)


@pytest.fixture
def cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MCP_MEMORY_SUPERSEDE__KEYWORD_CANDIDATES", "0")
    contents = [BERLIN, MONDAY, LISBON, THURSDAY, INVOICE, WEEKLY]
    memories = [{"id": f"t{i}", "session": "user:test", "language": "en", "content": content,
                 "occurred_at": f"2024-0{i}-01T09:00:00+00:00"} for i, content in enumerate(contents, start=1)]
    memories[2]["supersedes"], memories[3]["supersedes"] = ["t1"], ["t2"]
    question = {"id": "q001", "session": "user:test", "kind": "update", "language": "en",
                "query": "Where does Alice live?", "expected_answer": "Lisbon", "evidence": ["t3"],
                "superseded": ["t1"]}
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"memories": memories, "questions": [question]}), encoding="utf-8")
    return path


@pytest.mark.anyio
async def test_a_run_scores_the_models_pairs_and_times_each_store(cases, pg_url, work_dir, empty_tables, capsys):
    with FakeOpenAI(profile="llama-cpp-python") as fake:
        fake.set_chat_handler(_judge)
        args = parse(["--judge-url", fake.base_url, "--judge-model", "local-0.5b", "--sessions", "user:test@1",
                      "--cases", str(cases), "--database-url", pg_url, "--data-dir", str(work_dir)])
        report = await run(args)
        requests = [r.body for r in fake.chat_requests()]
    assert {body["model"] for body in requests} == {"local-0.5b"}
    assert report["context"]["stores"] == 1 and report["stores"] == 5
    pairs = report["pairs"]
    assert (pairs["expected"], pairs["marked"], pairs["true_positives"], pairs["implied_marked"]) == (2, 2, 1, 0)
    assert (pairs["precision"], pairs["recall"], pairs["shown"], pairs["recall_of_shown"]) == (0.5, 0.5, 2, 0.5)
    assert pairs["false_positives"] == [{"old": "t2", "new": "t6", "old_content": MONDAY, "new_content": WEEKLY}]
    assert pairs["missed"] == [{"old": "t2", "new": "t4", "old_content": MONDAY, "new_content": THURSDAY,
                                "shown": True}]
    asked = {row["id"]: row["asked"] for row in report["per_store"]}
    assert asked == {"t2": False, "t3": True, "t4": True, "t5": False, "t6": True}
    seconds = report["seconds_per_store"]
    assert (seconds["all"]["n"], seconds["asked"]["n"], seconds["not_asked"]["n"]) == (5, 3, 2)
    model = report["model"]
    assert (model["asked"], model["failed"], model["modes"], model["fallbacks"]) == (
        3, 0, {"json_object+schema": 3}, {"json_schema": 1})
    assert model["usage"] == {"calls": 4, "errors": 1, "prompt_tokens": 300, "cached_prompt_tokens": 0,
                              "completion_tokens": 60, "reasoning_tokens": 0}
    without, with_model = report["questions_without_model"]["update"], report["questions"]["update"]
    assert (without["n"], without["recall_hit_rate"], without["superseded_returned_rate"]) == (1, 1.0, 1.0)
    assert (with_model["n"], with_model["recall_hit_rate"], with_model["superseded_returned_rate"]) == (1, 1.0, 0.0)
    assert report["questions"]["supersession"]["newer_first"] == 1.0
    print_report(report)
    printed = capsys.readouterr().out
    assert "| 2 | 2 | 1 | 0 | 1 | 50.0 | 50.0 | 2 | 50.0 |" in printed
    assert "model calls: 4 (1 errors) for 3 stores asked (0 failed)" in printed
    assert "with the model: 1 update questions, newer first 100.0, recall hit 100.0" in printed


@pytest.mark.anyio
async def test_a_limited_run_stops_after_the_limit_and_asks_no_questions(cases, pg_url, work_dir, empty_tables):
    with FakeOpenAI(profile="llama-cpp-python") as fake:
        fake.set_chat_handler(_judge)
        args = parse(["--judge-url", fake.base_url, "--judge-model", "local-0.5b", "--sessions", "user:test@1",
                      "--limit", "2", "--cases", str(cases), "--database-url", pg_url, "--data-dir", str(work_dir)])
        report = await run(args)
    assert [row["id"] for row in report["per_store"]] == ["t2", "t3"]
    assert (report["pairs"]["expected"], report["pairs"]["true_positives"], report["pairs"]["precision"]) == (1, 1, 1.0)
    assert "questions" not in report and "questions_without_model" not in report
