"""evals.longmemeval: the scoring (session and turn level) on inline rankings, which questions are scored,
the S-split rebuild from a tiny git repository, and one run end to end through the real server on two
tiny inline questions."""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
from pathlib import Path

import asyncpg
import pytest

from evals.longmemeval import build_parser, miss, run
from evals.longmemeval_data import load
from evals.longmemeval_merge import merge
from evals.longmemeval_metrics import score_level, score_question, session_ranking, summarize
from evals.longmemeval_rebuild import rebuild
from evals.longmemeval_select import first_per_type, fit_turns, scored_questions


def _instance(question_id: str, question_type: str, question: str, sessions: dict[str, list[dict]],
              answer_sessions: list[str]) -> dict:
    ids = list(sessions)
    return {
        "question_id": question_id, "question_type": question_type, "question": question, "answer": "x",
        "question_date": "2023/06/01 (Thu) 10:00", "haystack_session_ids": ids,
        "haystack_dates": [f"2023/05/{day:02d} (Mon) 09:00" for day in range(1, len(ids) + 1)],
        "haystack_sessions": list(sessions.values()), "answer_session_ids": answer_sessions,
    }


def _user(text: str, gold: bool = False) -> dict:
    return {"role": "user", "content": text, **({"has_answer": True} if gold else {})}


REPLY = {"role": "assistant", "content": "Noted."}


def test_sessions_rank_by_the_best_rank_of_any_of_their_turns() -> None:
    ranked = [("s2:0",), ("s1:2", "s3:0"), ("s2:4",), ("s4:0",)]
    assert session_ranking(ranked) == [("s2",), ("s1",), ("s3",), ("s4",)]


def test_a_question_is_scored_at_session_and_turn_level() -> None:
    # gold sessions s1 and s3; gold turns s1:2 and s3:0 (one result stands for both) and s3:2
    ranked = [("s2:0",), ("s2:2",), ("s1:2", "s3:0"), ("s5:0",), ("s3:2",)]
    score = score_question("MS", {"s1", "s3"}, {"s1:2", "s3:0", "s3:2"}, ranked, (1, 2, 5))
    # sessions: s2, s1, s3, s5
    assert score.sessions_ranked == 4
    assert score.session.recall_all == {1: 0.0, 2: 0.0, 5: 1.0}
    assert score.session.recall_any == {1: 0.0, 2: 1.0, 5: 1.0}
    assert score.session.ndcg[5] == pytest.approx((1 + 1 / math.log2(3)) / 2)  # ranks 2 and 3; ideal 1 + 1
    assert score.turn.recall == {1: 0.0, 2: 0.0, 5: 1.0}
    assert score.turn.recall[5] == 1.0 and score.turn.recall_all == {1: 0.0, 2: 0.0, 5: 1.0}
    # turn NDCG: relevant results at ranks 3 and 5, ideal of three gold turns at ranks 1-3
    assert score.turn.ndcg[5] == pytest.approx((1 / math.log2(3) + 1 / math.log2(5)) / (2 + 1 / math.log2(3)))


def test_a_gold_item_beyond_the_returned_results_is_missed_and_empty_gold_is_refused() -> None:
    level = score_level({"a"}, [("b",), ("c",)], (1, 10))
    assert (level.recall_all, level.recall_any, level.ndcg) == ({1: 0.0, 10: 0.0}, {1: 0.0, 10: 0.0}, {1: 0.0, 10: 0.0})
    with pytest.raises(ValueError, match="gold is empty"):
        score_level(set(), [("a",)], (1,))


def test_summaries_are_per_type_and_overall_and_count_short_session_rankings() -> None:
    hit = score_question("KU", {"s1"}, {"s1:0"}, [("s1:0",)], (1, 5))
    miss = score_question("TR", {"s9"}, {"s9:0"}, [("s1:0",), ("s2:0",), ("s3:0",), ("s4:0",), ("s5:0",)], (1, 5))
    summary = summarize([hit, miss], (1, 5))
    assert list(summary) == ["SSU", "SSA", "SSP", "MS", "KU", "TR", "all"]
    assert (summary["KU"].n, summary["KU"].session.recall_all[5]) == (1, 1.0)
    assert (summary["all"].n, summary["all"].session.recall_all[5]) == (2, 0.5)
    assert summary["all"].short_session_rankings == 1  # the hit reached 1 session, fewer than 5
    assert summary["SSA"].n == 0


def _tiny(tmp_path: Path) -> Path:
    """Two scored questions, an _abs one and one whose evidence is only in an assistant turn."""
    questions = [
        _instance("q-ku", "knowledge-update", "Which city does my sister Ines live in now?", {
            "s_a": [_user("I am planning a trip to Norway and need a packing list."), REPLY],
            "answer_b": [_user("My sister Ines moved to Porto last month.", gold=True), REPLY,
                         _user("Can you suggest a housewarming gift?"), REPLY],
            "s_c": [_user("What is a good recipe for lentil soup?"), REPLY],
        }, ["answer_b"]),
        _instance("q-ssu", "single-session-user", "What breed is my dog Biscuit?", {
            "answer_d": [_user("Biscuit, my beagle, chewed my running shoes again.", gold=True), REPLY],
            "s_e": [_user("Explain how compound interest works."), REPLY],
        }, ["answer_d"]),
        _instance("q-abs_abs", "single-session-user", "What is my cat called?", {
            "s_f": [_user("I like jazz."), REPLY]}, []),
        _instance("q-ssa", "single-session-assistant", "What did you recommend?", {
            "answer_g": [_user("Recommend a book."), {"role": "assistant", "content": "Dune.", "has_answer": True}]},
            ["answer_g"]),
    ]
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(questions), encoding="utf-8")
    return path


def test_abstention_and_assistant_only_evidence_are_left_out(tmp_path: Path) -> None:
    scored, left_out = scored_questions(load(_tiny(tmp_path)))
    assert [q.question_id for q in scored] == ["q-ku", "q-ssu"]
    assert [q.question_id for q in left_out] == ["q-abs_abs", "q-ssa"]


def test_a_miss_names_where_each_gold_session_ranks(tmp_path: Path) -> None:
    question = scored_questions(load(_tiny(tmp_path)))[0][0]
    assert miss(question, [("s_a:0",), ("s_c:0",), ("answer_b:0",)]) == {
        "question_id": "q-ku", "type": "KU", "question": "Which city does my sister Ines live in now?",
        "gold_session_ranks": {"answer_b": 3}, "first_gold_turn": 3}
    assert miss(question, [("s_a:0",)])["gold_session_ranks"] == {"answer_b": None}


def test_turns_above_the_servers_content_limit_are_cut_for_every_retriever(tmp_path: Path) -> None:
    scored, _ = scored_questions(load(_tiny(tmp_path)))
    fitted, cut, dropped = fit_turns(scored, 20)
    assert cut == ["q-ku/s_a:0", "q-ku/answer_b:0", "q-ku/answer_b:2", "q-ku/s_c:0", "q-ssu/answer_d:0", "q-ssu/s_e:0"]
    assert {len(document.content) for question in fitted for document in question.documents} == {20}
    assert fitted[0].gold_turns == scored[0].gold_turns and dropped == []
    assert fit_turns(scored, 1000) == (scored, [], [])


def test_empty_turns_are_dropped_for_every_retriever(tmp_path: Path) -> None:
    path = _tiny(tmp_path)
    questions = json.loads(path.read_text())
    questions[1]["haystack_sessions"][1].insert(0, _user("  "))
    path.write_text(json.dumps(questions))
    scored, _ = scored_questions(load(path))
    fitted, cut, dropped = fit_turns(scored, 1000)
    assert (cut, dropped) == ([], ["q-ssu/s_e:0"])
    assert [turn.turn_id for turn in fitted[1].turns] == ["answer_d:0", "s_e:1"]


def test_the_rebuild_takes_s_files_only_and_checks_the_count(tmp_path: Path) -> None:
    repo = tmp_path / "memoria"
    folder = repo / "evaluations" / "data" / "lme_jsons"
    folder.mkdir(parents=True)
    (repo / "evaluations" / "lme_jsons_verified").mkdir()
    for sessions, question_id in ((1, "oracle1"), (38, "s1"), (62, "s2"), (460, "m1")):
        (folder / f"{sessions}_{question_id}.json").write_text(
            json.dumps({"question_id": question_id, "haystack_sessions": [[]] * sessions}))
    (repo / "evaluations" / "lme_jsons_verified" / "40_v.json").write_text(json.dumps({"question_id": "v"}))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "add", "."], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
                   check=True)
    assert [i["question_id"] for i in rebuild(repo / ".git", expect=2)] == ["s1", "s2"]
    with pytest.raises(SystemExit, match="found 2 S questions"):
        rebuild(repo / ".git")


@pytest.mark.anyio
async def test_a_run_stores_user_turns_through_the_tools_and_scores_them(tmp_path, pg_url, work_dir, empty_tables):
    report_path = tmp_path / "report.json"
    args = build_parser().parse_args(["--data", str(_tiny(tmp_path)), "--database-url", pg_url,
                                      "--data-dir", str(work_dir), "--report", str(report_path), "--top-k", "5"])
    assert await run(args) == 0
    report = json.loads(report_path.read_text())
    assert report["data"]["scored_questions"] == 2 and report["data"]["scored_user_turns"] == 6
    left_out = {"abstention": ["q-abs_abs"], "no_gold_user_turn": ["q-ssa"], "not_selected": []}
    assert report["data"]["left_out"] == left_out
    default, bm25 = report["retrievers"]["default"], report["retrievers"]["bm25"]
    assert default["extra"]["stored"] == 6 and default["extra"]["occurred_at_mismatches"] == 0
    for retriever in (default, bm25):
        overall = retriever["summary"]["all"]
        assert overall["n"] == 2 and overall["session"]["recall_all"]["5"] == 1.0
    assert default["extra"]["session_misses_at_5"] == [] and bm25["extra"]["session_misses_at_5"] == []
    assert default["summary"]["all"]["turn"]["recall"]["1"] == 1.0  # each question finds its gold turn first
    assert report_path.with_suffix(".md").read_text().count("| default |") >= 3
    connection = await asyncpg.connect(pg_url)
    try:
        stored = await connection.fetch(
            "SELECT session, metadata, occurred_at FROM memories ORDER BY session, occurred_at")
    finally:
        await connection.close()
    assert [(row["session"], json.loads(row["metadata"]), row["occurred_at"].isoformat()) for row in stored][:3] == [
        ("lme-q-ku", {"session_id": "s_a", "turn": 0}, "2023-05-01T09:00:00+00:00"),
        ("lme-q-ku", {"session_id": "answer_b", "turn": 0}, "2023-05-02T09:00:00+00:00"),
        ("lme-q-ku", {"session_id": "answer_b", "turn": 2}, "2023-05-02T09:00:02+00:00"),
    ]
    assert {row["session"] for row in stored} == {"lme-q-ku", "lme-q-ssu"}


def test_shards_are_i_of_n_and_a_bad_shard_is_refused_naming_the_option(capsys) -> None:
    assert build_parser().parse_args(["--shard", "1/3"]).shard == (1, 3)
    for bad in ("3/3", "x/3"):
        with pytest.raises(SystemExit):
            build_parser().parse_args(["--shard", bad])
        assert "--shard" in capsys.readouterr().err


def test_a_per_type_subset_is_the_first_n_of_each_type_by_hash_whatever_the_file_order(tmp_path: Path) -> None:
    instances = [_instance(f"q{i}", kind, "Where?", {f"answer_{i}": [_user("Here.", gold=True), REPLY]},
                           [f"answer_{i}"]) for i, kind in enumerate(["multi-session"] * 5 + ["temporal-reasoning"] * 2)]
    picked = []
    for order in (instances, instances[::-1]):
        path = tmp_path / "q.json"
        path.write_text(json.dumps(order), encoding="utf-8")
        chosen, rest = first_per_type(load(path), 3)
        assert len(rest) == 2 and {q.short_type for q in rest} == {"MS"}
        picked.append(sorted(q.question_id for q in chosen))
    by_hash = sorted([f"q{i}" for i in range(5)], key=lambda q: hashlib.sha256(q.encode()).hexdigest())[:3]
    assert picked[0] == picked[1] == sorted(by_hash + ["q5", "q6"])
    assert build_parser().parse_args(["--per-type", "3"]).per_type == 3


def _shard_report(question_id: str, hit: bool) -> dict:
    ranked = [["g:0"] if hit else ["x:0"], ["y:0"]]
    row = {"question_id": question_id, "type": "MS", "gold_sessions": ["g"], "gold_turns": ["g:0"], "ranked": ranked}
    retriever = {"settings": {}, "timing": {"prepare_s": 2.0, "turns_per_s": 10.0, "latency_ms_p50": 5.0},
                 "extra": {"session_misses_at_5": []},
                 "per_question": [row]}
    return {"settings": {"ks": [1, 5]}, "data": {"left_out": {"not_selected": ["q1", "q2"]}, "scored_user_turns": 3},
            "retrievers": {"default": retriever, "bm25": retriever}}


def test_shard_reports_merge_by_rescoring_every_question_and_overlaps_are_refused() -> None:
    header, results, ks = merge([_shard_report("q1", hit=True), _shard_report("q2", hit=False)])
    assert ks == (1, 5) and [result.name for result in results] == ["default", "bm25"]
    overall = results[0].summary["all"]
    assert (overall.n, overall.session.recall_all[1], overall.session.recall_any[5]) == (2, 0.5, 0.5)
    assert results[0].timing == {"prepare_s": 4.0, "turns_per_s": 10.0}
    assert header["data"]["left_out"]["not_selected"] == [] and header["data"]["scored_user_turns"] == 6
    with pytest.raises(SystemExit, match="questions in two reports"):
        merge([_shard_report("q1", hit=True), _shard_report("q1", hit=False)])
