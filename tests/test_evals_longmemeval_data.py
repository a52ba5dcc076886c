"""The LongMemEval loader: user turns only, session dates in order, gold marks per PROTOCOL.md.

Inline fixtures; the test that reads the shared oracle skips when the file is absent."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from evals.longmemeval_data import ORACLE, load, parse_date


def _instance(**overrides) -> dict:
    instance = {
        "question_id": "q1",
        "question_type": "knowledge-update",
        "question": "Where do I work now?",
        "answer": "Acme",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["answer_2", "s_1"],
        "haystack_dates": ["2023/05/02 (Tue) 09:00", "2023/05/01 (Mon) 09:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "I moved to Acme.", "has_answer": True},
             {"role": "assistant", "content": "Congrats!"}],
            [{"role": "user", "content": "I work at Initech."}, {"role": "assistant", "content": "Nice."}],
        ],
        "answer_session_ids": ["answer_2"],
    }
    return instance | overrides


def test_dates_parse_and_other_shapes_are_refused() -> None:
    assert parse_date("2023/05/30 (Tue) 23:40") == datetime(2023, 5, 30, 23, 40)
    with pytest.raises(ValueError, match="is not like"):
        parse_date("30 May 2023")


def test_questions_hold_user_turns_in_date_order_with_gold_marks(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([_instance()]))
    (question,) = load(path)
    assert [t.turn_id for t in question.turns] == ["s_1:0", "answer_2:0"]
    assert question.gold_sessions == {"answer_2"} and question.gold_turns == {"answer_2:0"}
    assert question.asked_at == datetime(2023, 6, 1, 10) and question.short_type == "KU"
    assert load(path, types=["TR"]) == []


def test_a_missing_key_is_named(tmp_path: Path) -> None:
    path = tmp_path / "lme.json"
    instance = _instance()
    del instance["answer_session_ids"]
    path.write_text(json.dumps([instance]))
    with pytest.raises(ValueError, match="answer_session_ids"):
        load(path)


@pytest.mark.skipif(not ORACLE.exists(), reason="shared/data/longmemeval_oracle.json is absent")
def test_the_oracle_has_the_official_type_counts() -> None:
    counts: dict[str, int] = {}
    for question in load(ORACLE):
        counts[question.short_type] = counts.get(question.short_type, 0) + 1
    assert counts == {"SSU": 70, "SSA": 56, "SSP": 30, "MS": 133, "KU": 78, "TR": 133}
