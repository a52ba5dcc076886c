"""The LongMemEval time-expression loop: its conversations and scores (inline data, no server)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from evals.longmemeval_data import load
from evals.longmemeval_time import as_conversation, score


def _question(tmp_path: Path):
    sessions = {f"s_{n}": [{"role": "user", "content": f"note {n}", "has_answer": n in (1, 3)}] for n in range(8)}
    instance = {
        "question_id": "q1", "question_type": "temporal-reasoning", "question": "What did I note last week?",
        "answer": "x", "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": list(sessions), "haystack_dates": [f"2023/05/0{n + 1} (Mon) 09:00" for n in range(8)],
        "haystack_sessions": list(sessions.values()), "answer_session_ids": ["s_1", "s_3"],
    }
    path = tmp_path / "lme.json"
    path.write_text(json.dumps([instance]))
    return load(path)[0]


def test_turns_are_stored_as_said_under_their_turn_ids(tmp_path: Path) -> None:
    conversation = as_conversation(_question(tmp_path), "oracle")
    assert conversation.sample_id == "lme-oracle-q1" and conversation.session_count == 8
    assert [(d.content, d.dia_ids) for d in conversation.documents][:2] == [("note 0", ("s_0:0",)), ("note 1", ("s_1:0",))]


def test_session_recall_all_needs_every_gold_session_among_the_first_k_sessions(tmp_path: Path) -> None:
    question = _question(tmp_path)
    ranked = [("s_1:0",), ("s_0:0",), ("s_0:0",), ("s_2:0",), ("s_4:0",), ("s_5:0",), ("s_3:0",)]
    scored = score(question, ranked)
    assert (scored.all5, scored.all10, scored.turn10) == (0.0, 1.0, 1.0)  # s_3 is the 6th distinct session
    assert score(question, [("s_1:0",), ("s_3:0",)]).all5 == 1.0
    assert score(question, [("s_1:0",)]).turn10 == 0.5
