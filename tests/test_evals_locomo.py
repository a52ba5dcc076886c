"""Tests of the LoCoMo evaluation's pure parts: date parsing, evidence clean-up, metrics, BM25.

Inline fixtures only; the one test that reads locomo10.json skips when the file is absent.
"""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # evals/ is not an installed package
    sys.path.insert(0, str(REPO_ROOT))

from evals.locomo_data import (  # noqa: E402
    EvidenceStats,
    clean_evidence,
    load_locomo,
    parse_conversation,
    parse_session_datetime,
)
from evals.metrics import score_question, summarize  # noqa: E402
from evals.retrievers import Bm25Retriever  # noqa: E402

LOCOMO_PATH = REPO_ROOT.parent / "shared" / "data" / "locomo10.json"


def _sample() -> dict[str, Any]:
    """A two-session conversation shaped like locomo10.json, with the file's evidence defects."""
    return {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy called Rex."},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "Look!", "blip_caption": "a photo of a red kite"},
                {"speaker": "Ann", "dia_id": "D1:3", "text": "See you!"},
            ],
            "session_2_date_time": "10:04 am on 19 December, 2023",
            "session_2": [
                {"speaker": "Bob", "dia_id": "D2:1", "text": "I started learning the violin."},
                {"speaker": "Ann", "dia_id": "D2:2", "text": "See you!"},
            ],
            "session_3_date_time": "9:00 am on 1 January, 2024",
        },
        "qa": [
            {"question": "What is the puppy called?", "answer": "Rex", "evidence": ["D1:1"], "category": 4},
            {"question": "Q2", "answer": 2023, "evidence": ["D1:1; D2:1", "D:1:2", "D2:01"], "category": 1},
            {"question": "Q3", "answer": "x", "evidence": ["D9:9", "D"], "category": 3},
            {"question": "Q4", "adversarial_answer": "y", "answer": "z", "evidence": ["D2:1"], "category": 5},
        ],
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("10:04 am on 19 December, 2023", datetime(2023, 12, 19, 10, 4)),
        ("9:55 am on 22 October, 2023", datetime(2023, 10, 22, 9, 55)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9)),
        ("12:30 pm on 1 June, 2022", datetime(2022, 6, 1, 12, 30)),
    ],
)
def test_session_time_parses_every_shape_in_locomo(text: str, expected: datetime) -> None:
    assert parse_session_datetime(text) == expected


@pytest.mark.parametrize("text", ["2023-05-08", "13:56 pm on 8 May, 2023", "1:56 pm on 8 Mai, 2023"])
def test_session_time_rejects_other_shapes(text: str) -> None:
    with pytest.raises(ValueError, match="session time"):
        parse_session_datetime(text)


def test_evidence_is_split_repaired_and_unknown_ids_dropped() -> None:
    stats = EvidenceStats()
    known = {"D1:1", "D1:2", "D2:1", "D11:26", "D30:5"}
    cleaned = clean_evidence(["D1:1; D2:1", "D:11:26", "D30:05", "D1:1", "D", "D10:19"], known, "c", stats)
    assert cleaned == ("D1:1", "D2:1", "D11:26", "D30:5")
    assert stats.split == 1
    assert stats.repaired == [("c", "D:11:26", "D11:26"), ("c", "D30:05", "D30:5")]
    assert stats.dropped == [("c", "D"), ("c", "D10:19")]


def test_conversation_ignores_empty_sessions_and_gives_each_turn_its_sessions_real_time() -> None:
    stats = EvidenceStats()
    conversation = parse_conversation(_sample(), stats)
    assert conversation.session_count == 2
    assert [turn.occurred_at.isoformat() for turn in conversation.turns] == [
        "2023-05-08T13:56:00", "2023-05-08T13:56:00", "2023-05-08T13:56:00",
        "2023-12-19T10:04:00", "2023-12-19T10:04:00",
    ]
    assert [turn.dia_id for turn in conversation.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert conversation.turns[1].content == "Bob: Look! [shares a photo: a photo of a red kite]"
    assert [q.evidence for q in conversation.questions] == [("D1:1",), ("D1:1", "D2:1", "D1:2"), (), ("D2:1",)]
    assert stats.no_evidence == [("conv-x", 2)]
    assert conversation.questions[1].answer == "2023"
    assert conversation.questions[3].answer == "y"


def test_spaced_times_add_the_turn_index_in_seconds() -> None:
    conversation = parse_conversation(_sample(), EvidenceStats(), times="spaced")
    assert [turn.occurred_at.isoformat() for turn in conversation.turns] == [
        "2023-05-08T13:56:00", "2023-05-08T13:56:01", "2023-05-08T13:56:02",
        "2023-12-19T10:04:00", "2023-12-19T10:04:01",
    ]


def test_unknown_times_are_refused() -> None:
    with pytest.raises(ValueError, match="times='shifted'"):
        parse_conversation(_sample(), EvidenceStats(), times="shifted")


def test_times_option_defaults_to_real_and_refuses_others(capsys) -> None:
    from evals.locomo import build_parser

    assert build_parser().parse_args([]).times == "real"
    assert build_parser().parse_args(["--times", "spaced"]).times == "spaced"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--times", "shifted"])
    assert "--times: invalid choice: 'shifted'" in capsys.readouterr().err


def test_identical_turns_become_one_document_with_every_dia_id() -> None:
    conversation = parse_conversation(_sample(), EvidenceStats())
    assert len(conversation.documents) == 4
    assert ("D1:3", "D2:2") in [document.dia_ids for document in conversation.documents]


def test_recall_counts_evidence_within_k_results_and_groups_count_once() -> None:
    ranked = [("D5:1",), ("D1:1", "D1:2"), ("D3:3",), ("D2:2",)]
    score = score_question(1, ["D1:2", "D2:2"], ranked, (1, 2, 4))
    assert score.recall == {1: 0.0, 2: 0.5, 4: 1.0}
    assert score.hit == {1: 0.0, 2: 1.0, 4: 1.0}
    assert score.reciprocal_rank == 0.5


def test_reciprocal_rank_is_zero_when_evidence_is_beyond_max_k() -> None:
    score = score_question(2, ["D9:9"], [("D1:1",), ("D9:9",)], (1,))
    assert score.recall == {1: 0.0}
    assert score.reciprocal_rank == 0.0


def test_question_without_evidence_is_refused() -> None:
    with pytest.raises(ValueError, match="evidence is empty"):
        score_question(3, [], [("D1:1",)], (5,))


def test_summary_averages_per_category_overall_and_without_adversarial() -> None:
    scores = [
        score_question(1, ["A"], [("A",)], (1,)),
        score_question(4, ["A"], [("B",)], (1,)),
        score_question(5, ["A"], [("A",)], (1,)),
    ]
    summary = summarize(scores, (1,))
    assert (summary["1"].n, summary["1"].recall[1]) == (1, 1.0)
    assert (summary["2"].n, summary["2"].recall[1]) == (0, 0.0)
    assert (summary["all"].n, summary["all"].recall[1]) == (3, pytest.approx(2 / 3))
    assert (summary["1-4"].n, summary["1-4"].recall[1]) == (2, 0.5)


@pytest.mark.anyio
async def test_bm25_ranks_the_keyword_match_first_and_maps_groups() -> None:
    conversation = parse_conversation(_sample(), EvidenceStats())
    retriever = Bm25Retriever()
    await retriever.prepare(conversation)
    assert (await retriever.rank(conversation, "Who is learning the violin?", 10))[0] == ("D2:1",)
    assert len(await retriever.rank(conversation, "puppy", 10)) == 4


def test_locomo10_parses_and_matches_the_protocol_counts() -> None:
    if not LOCOMO_PATH.is_file():
        pytest.skip(f"{LOCOMO_PATH} is absent (LoCoMo is not shipped with the repository)")
    conversations, stats = load_locomo(LOCOMO_PATH)
    questions = [q for conversation in conversations for q in conversation.questions]
    assert sum(len(c.turns) for c in conversations) == 5882
    assert sum(c.session_count for c in conversations) == 272
    assert [sum(1 for q in questions if q.category == c) for c in range(1, 6)] == [282, 321, 96, 841, 446]
    assert len(stats.no_evidence) == 4
    assert sorted(raw for _, raw in stats.dropped) == ["D", "D10:19", "D4:36"]


# --- retrieval modes, stage deltas and folds -------------------------------------------------------


def _result(name: str, recall_at_10: dict[str, float], recall: dict[str, object] | None = None) -> Any:
    """A RetrieverResult with the given recall@10 per summary key (other figures zero)."""
    from evals.metrics import GroupSummary
    from evals.report import RetrieverResult

    summary = {key: GroupSummary(1, {10: value}, {10: 0.0}, 0.0) for key, value in recall_at_10.items()}
    return RetrieverResult(name, summary, {"settings": {"recall": recall or {}}}, {})


def test_every_mode_names_real_recall_settings_and_validates() -> None:
    from evals.modes import MODES, mode_recall_settings
    from mcp_memory.settings import RecallSettings

    assert list(MODES) == ["vector", "keyword", "hybrid-rrf60", "hybrid", "hybrid+supplement", "no-updates", "default"]
    base = RecallSettings()
    for mode in MODES.values():
        assert set(mode.overrides) <= set(RecallSettings.model_fields), mode.name
        settings = mode_recall_settings(mode, base)
        for key, value in mode.overrides.items():
            assert getattr(settings, key) == value
    assert mode_recall_settings(MODES["default"], base) == base


def test_modes_switch_the_lists_the_issue_describes() -> None:
    from evals.modes import MODES, mode_recall_settings
    from mcp_memory.settings import RecallSettings

    base = RecallSettings()

    def of(name: str) -> RecallSettings:
        return mode_recall_settings(MODES[name], base)

    vector = of("vector")
    assert vector.vector_weight > 0
    assert (vector.keyword_weight, vector.trigram_weight, vector.bigram_weight) == (0, 0, 0)
    keyword = of("keyword")
    assert keyword.vector_weight == 0 and keyword.keyword_weight == base.keyword_weight
    assert (keyword.trigram_weight, keyword.bigram_weight) == (base.trigram_weight, base.bigram_weight)
    assert (of("hybrid-rrf60").rrf_k, of("hybrid-rrf60").keyword_weight) == (60, 1)
    assert (of("hybrid").rrf_k, of("hybrid").keyword_weight) == (base.rrf_k, base.keyword_weight)
    for name in ("vector", "keyword", "hybrid-rrf60", "hybrid", "hybrid+supplement"):
        assert of(name).neighbor_weight == 0, name
    for name in ("vector", "keyword", "hybrid-rrf60", "hybrid"):
        assert of(name).recent_weight == 0, name
    assert of("hybrid+supplement").recent_weight == base.recent_weight
    for name in ("vector", "keyword", "hybrid-rrf60", "hybrid", "hybrid+supplement", "no-updates"):
        assert of(name).implicit_updates is False, name
    assert of("default").implicit_updates is True


def test_mode_with_an_unknown_field_is_refused() -> None:
    from evals.modes import Mode, mode_recall_settings
    from mcp_memory.settings import RecallSettings

    with pytest.raises(ValueError, match="no field neighbour_weight"):
        mode_recall_settings(Mode("bad", {"neighbour_weight": 0}, "", ""), RecallSettings())


def test_modes_parse_in_stage_order() -> None:
    import argparse

    from evals.locomo import parse_folds, parse_modes

    assert parse_modes("all")[0] == "vector" and parse_modes("all")[-1] == "default"
    assert parse_modes("default, vector,hybrid") == ("vector", "hybrid", "default")
    with pytest.raises(argparse.ArgumentTypeError, match="unknown bm25"):
        parse_modes("bm25")
    assert (parse_folds("0"), parse_folds("2")) == (0, 2)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_folds("1")


def test_http_urls_parse_into_named_retrievers() -> None:
    import argparse

    from evals.locomo import parse_urls

    assert parse_urls("http://127.0.0.1:8020/mcp") == (("mcp-memory", "http://127.0.0.1:8020/mcp"),)
    assert parse_urls("default=http://h:1/mcp, vector=http://h:2/mcp") == (
        ("default", "http://h:1/mcp"), ("vector", "http://h:2/mcp"),
    )
    with pytest.raises(argparse.ArgumentTypeError, match="repeat"):
        parse_urls("a=http://h:1/mcp,a=http://h:2/mcp")
    with pytest.raises(argparse.ArgumentTypeError, match="no http"):
        parse_urls("vector=")
    with pytest.raises(argparse.ArgumentTypeError, match="no http"):
        parse_urls("default=http://h:1/mcp,vector")
    with pytest.raises(argparse.ArgumentTypeError, match="empty retriever name"):
        parse_urls("=http://h:1/mcp")


def test_runner_arguments_out_of_range_are_refused_before_anything_runs(capsys, caplog) -> None:
    from evals.locomo import build_parser, main

    for bad in (["--concurrency", "0"], ["--concurrency", "-3"]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(bad)
        assert "must be >= 1" in capsys.readouterr().err
    assert main(["--url", "http://127.0.0.1:1/mcp", "--data", __file__]) == 2
    assert "--url needs --transport http" in caplog.text


def test_stage_deltas_subtract_consecutive_modes() -> None:
    from evals.report import deltas_table, stage_deltas

    results = [
        _result("vector", {"1": 0.2, "all": 0.4, "1-4": 0.3}),
        _result("keyword", {"1": 0.3, "all": 0.6, "1-4": 0.5}),
        _result("hybrid", {"1": 0.35, "all": 0.7, "1-4": 0.5}),
    ]
    deltas = stage_deltas(results, 10, {"keyword": "keyword lists"})
    assert [(d.before, d.after, d.step) for d in deltas] == [
        ("vector", "keyword", "keyword lists"),
        ("keyword", "hybrid", "keyword -> hybrid"),
    ]
    assert deltas[0].delta == pytest.approx({"1": 0.1, "all": 0.2, "1-4": 0.2})
    assert deltas[1].delta == pytest.approx({"1": 0.05, "all": 0.1, "1-4": 0.0})
    assert stage_deltas(results[:1]) == []
    table = deltas_table(deltas)
    assert "| vector | keyword | keyword lists | +20.0 | +20.0 | +10.0 |" in table
    assert "+0.0" in table


def test_stage_steps_name_neighbours_or_the_changed_settings() -> None:
    from evals.locomo import stage_steps
    from evals.modes import MODES

    results = [
        _result("vector", {}, {"rrf_k": 3, "keyword_weight": 0.0}),
        _result("keyword", {}, {"rrf_k": 3, "keyword_weight": 2.0}),
        _result("default", {}, {"rrf_k": 3, "keyword_weight": 2.0, "neighbor_weight": 0.5}),
    ]
    results[2].settings["settings"]["recall"]["vector_weight"] = 1.0  # type: ignore[index]
    steps = stage_steps(results)
    assert steps["keyword"] == MODES["keyword"].step
    assert steps["default"] == "neighbor_weight None -> 0.5; vector_weight None -> 1.0"


def test_settings_changes_lists_only_differences() -> None:
    from evals.modes import settings_changes

    assert settings_changes({"a": 1, "b": 2}, {"a": 1, "b": 3, "c": 0}) == ["b 2 -> 3", "c None -> 0"]


def test_folds_alternate_conversations() -> None:
    from evals.locomo import fold_split

    ids = [f"conv-{n}" for n in range(10)]
    assert fold_split(ids, 2) == [tuple(ids[0::2]), tuple(ids[1::2])]
    assert fold_split(ids, 3)[2] == ("conv-2", "conv-5", "conv-8")
    assert fold_split(ids, 0) == []
    with pytest.raises(ValueError, match="cannot make 3 folds"):
        fold_split(ids[:2], 3)


def test_fold_summaries_average_each_folds_questions() -> None:
    from evals.locomo import fold_summaries

    scores = [
        ("a", score_question(1, ["X"], [("X",)], (10,))),
        ("b", score_question(1, ["X"], [("Y",)], (10,))),
        ("a", score_question(5, ["X"], [("Y",)], (10,))),
    ]
    first, second = fold_summaries(scores, [("a",), ("b",)], (10,))
    assert (first["all"].n, first["all"].recall[10], first["1-4"].recall[10]) == (2, 0.5, 1.0)
    assert (second["all"].n, second["all"].recall[10]) == (1, 0.0)


def test_reports_put_modes_side_by_side(tmp_path: Path) -> None:
    import json

    from evals.report import stage_deltas, write_reports

    results = [_result("vector", {"1": 0.2, "all": 0.4}), _result("bm25", {"1": 0.3, "all": 0.5})]
    for result in results:
        result.folds = [result.summary, result.summary]
    header = {"date": "d", "command": "python -m evals.locomo", "notes": ["n"],
              "modes": [{"name": "vector", "description": "vectors", "overrides": {"keyword_weight": 0}}]}
    markdown = write_reports(
        tmp_path / "r.json", header, results, (10,), stage_deltas(results[:1]), [("a",), ("b",)]
    ).read_text()
    assert "| category | n | vector | bm25 |" in markdown
    assert "| 1 multi-hop | 1 | 20.0 | 30.0 |" in markdown
    assert "| vector | vectors | keyword_weight=0 |" in markdown
    assert "- fold 2: b" in markdown
    body = json.loads((tmp_path / "r.json").read_text())
    assert body["retrievers"]["bm25"]["folds"][1]["conversations"] == ["b"]
    assert "scores" not in body["retrievers"]["bm25"]


@pytest.mark.anyio
async def test_modes_are_refused_over_http_before_anything_runs() -> None:
    from evals.locomo import build_parser, run

    args = build_parser().parse_args(["--transport", "http", "--url", "http://127.0.0.1:9/mcp", "--modes", "vector"])
    assert await run(args) == 2


def test_every_lever_names_real_recall_settings_and_parses_with_the_default() -> None:
    from evals.locomo import parse_modes
    from evals.modes import LEVERS, mode_recall_settings
    from mcp_memory.settings import RecallSettings

    base = RecallSettings()
    for lever in LEVERS.values():
        changed = mode_recall_settings(lever, base)
        assert changed != base, lever.name
        assert {k for k, v in changed.model_dump().items() if base.model_dump()[k] != v} == set(lever.overrides)
    assert parse_modes("levers") == ("default", *LEVERS)
    assert parse_modes("prf3,default") == ("default", "prf3")


def test_cross_validation_picks_on_one_fold_and_scores_on_the_other() -> None:
    from evals.crossval import held_out

    folds = {"default": [0.70, 0.72], "a": [0.75, 0.71], "b": [0.69, 0.74]}
    # fold 1 held out: b is best on fold 2 and scores 0.69 on fold 1; fold 2 held out: a, 0.71
    assert held_out(folds) == [(1, "b", 0.69, 0.70), (2, "a", 0.71, 0.72)]
    assert held_out({"x": [0.7, 0.7], "default": [0.7, 0.7]}) == [(1, "default", 0.7, 0.7), (2, "default", 0.7, 0.7)]
