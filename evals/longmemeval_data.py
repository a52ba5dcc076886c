"""Load LongMemEval questions and their haystacks as turns with times and gold marks.

Source: Wu et al., "LongMemEval: Benchmarking Chat Assistants on Long-Term Interactive Memory",
ICLR 2025, cleaned release (MIT), rebuilt as ``shared/data/README.md`` says. The protocol
(``shared/data/PROTOCOL.md``): index user turns only; gold sessions are the ``answer_session_ids``
with a user turn marked ``has_answer``; gold turns are user turns with ``has_answer: true``;
``_abs`` questions (abstention) have no gold and are left out of recall figures.

Times: a haystack date such as ``2023/05/30 (Tue) 23:40`` is naive (the evaluation treats it as
UTC); turn ``i`` of a session gets that time plus ``i`` seconds, so storage time orders the turns
of a session. ``question_date`` is the moment the question is asked (an eval's ``as_of``).

Failure policy: a file without LongMemEval's shape raises ``ValueError`` naming the key or value.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

from evals.locomo_data import Document

QUESTION_TYPES: dict[str, str] = {
    "single-session-user": "SSU",
    "single-session-assistant": "SSA",
    "single-session-preference": "SSP",
    "multi-session": "MS",
    "knowledge-update": "KU",
    "temporal-reasoning": "TR",
}
"""LongMemEval question types and the short names used in tables (the data's own order)."""

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
ORACLE = SHARED_DATA / "longmemeval_oracle.json"
SAMPLE_S = SHARED_DATA / "longmemeval_s_cleaned.sample50.json"

_DATE = re.compile(r"^(\d{4})/(\d{2})/(\d{2}) \([A-Za-z]{3}\) (\d{2}):(\d{2})$")
_KEYS = (
    "question_id", "question_type", "question", "answer", "question_date",
    "haystack_dates", "haystack_session_ids", "haystack_sessions", "answer_session_ids",
)


def parse_date(text: str) -> datetime:
    """Parse a LongMemEval date such as ``"2023/05/30 (Tue) 23:40"`` into a naive datetime.

    Raises:
        ValueError: the text is not in that shape or names an impossible date.
    """
    match = _DATE.match(text.strip())
    if match is None:
        raise ValueError(f"date {text!r} is not like '2023/05/30 (Tue) 23:40'")
    year, month, day, hour, minute = (int(part) for part in match.groups())
    return datetime(year, month, day, hour, minute)


@dataclass(frozen=True)
class Turn:
    """One user turn of a haystack session.

    Attributes:
        session_id: the haystack session's id (``answer_...`` for evidence sessions).
        index: position of the turn in its session, counting every role, from 0.
        content: what the user said.
        occurred_at: the session's date plus ``index`` seconds.
        has_answer: marked as evidence by the data.
    """

    session_id: str
    index: int
    content: str
    occurred_at: datetime
    has_answer: bool

    @property
    def turn_id(self) -> str:
        """``<session_id>:<index>``, unique within a question."""
        return f"{self.session_id}:{self.index}"

    @property
    def dia_id(self) -> str:
        """The ``turn_id`` under the name the retrievers of ``evals`` map results to."""
        return self.turn_id

    @property
    def metadata(self) -> dict[str, str | int]:
        """The metadata stored with the turn: its haystack ``session_id`` and ``turn`` index."""
        return {"session_id": self.session_id, "turn": self.index}


@dataclass(frozen=True)
class Question:
    """One LongMemEval question with its haystack's user turns.

    Attributes:
        question_id: the data's id; ``_abs`` suffix = abstention.
        question_type: one of ``QUESTION_TYPES``.
        question: the raw question, used as the query.
        answer: the reference answer (text; numbers are given as strings).
        asked_at: ``question_date``.
        turns: every user turn of every haystack session, sessions in date order.
        gold_sessions: answer sessions holding a user turn marked ``has_answer``.
        gold_turns: ``turn_id`` of every user turn marked ``has_answer``.
    """

    question_id: str
    question_type: str
    question: str
    answer: str
    asked_at: datetime
    turns: tuple[Turn, ...]
    gold_sessions: frozenset[str]
    gold_turns: frozenset[str]

    @property
    def abstention(self) -> bool:
        return self.question_id.endswith("_abs")

    @property
    def short_type(self) -> str:
        return QUESTION_TYPES[self.question_type]

    @property
    def sample_id(self) -> str:
        """The ``question_id``: each question is its own haystack, as a LoCoMo conversation is."""
        return self.question_id

    @cached_property
    def documents(self) -> tuple[Document, ...]:
        """User turns grouped by identical content, in order of first occurrence (computed once).

        mcp-memory stores identical content in a session once, so a result stands for every turn
        carrying it (``dia_ids`` are ``turn_id`` values, possibly of several haystack sessions).
        """
        groups: dict[str, list[str]] = {}
        for turn in self.turns:
            groups.setdefault(turn.content, []).append(turn.turn_id)
        return tuple(Document(content, tuple(ids)) for content, ids in groups.items())


def _question(raw: dict[str, Any]) -> Question:
    missing = [key for key in _KEYS if key not in raw]
    if missing:
        raise ValueError(f"question {raw.get('question_id', '?')!r} lacks key(s) {', '.join(missing)}")
    question_id = str(raw["question_id"])
    if raw["question_type"] not in QUESTION_TYPES:
        raise ValueError(f"question {question_id!r} has unknown question_type {raw['question_type']!r}")
    sessions = list(zip(raw["haystack_session_ids"], raw["haystack_dates"], raw["haystack_sessions"], strict=True))
    dated = sorted(((parse_date(date), sid, turns) for sid, date, turns in sessions), key=lambda item: item[0])
    answer_sessions = set(raw["answer_session_ids"])
    turns: list[Turn] = []
    for start, session_id, session_turns in dated:
        for index, turn in enumerate(session_turns):
            if turn.get("role") != "user":
                continue
            turns.append(Turn(session_id, index, str(turn["content"]), start + timedelta(seconds=index),
                              bool(turn.get("has_answer", False))))
    gold_turns = frozenset(turn.turn_id for turn in turns if turn.has_answer)
    gold_sessions = frozenset(t.session_id for t in turns if t.has_answer and t.session_id in answer_sessions)
    return Question(question_id, raw["question_type"], str(raw["question"]), str(raw["answer"]),
                    parse_date(raw["question_date"]), tuple(turns), gold_sessions, gold_turns)


def load(path: Path, types: Sequence[str] | None = None) -> list[Question]:
    """Read a LongMemEval file (a JSON list of instances) into questions, in file order.

    Args:
        path: e.g. ``ORACLE`` or ``SAMPLE_S``.
        types: keep only these ``question_type`` values (long or short names); None keeps all.

    Raises:
        ValueError: the file is not a list of LongMemEval instances.
    """
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a JSON list of LongMemEval instances")  # noqa: TRY004
    wanted = None if types is None else {QUESTION_TYPES.get(t, t) for t in types}
    questions = [_question(item) for item in raw]
    return [q for q in questions if wanted is None or q.short_type in wanted]
