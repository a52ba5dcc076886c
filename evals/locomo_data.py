"""Load LoCoMo conversations and questions, with the evidence ids cleaned.

Source: Maharana et al., "Evaluating Very Long-Term Conversational Memory of LLM Agents", ACL 2024,
file ``locomo10.json`` (CC BY-NC 4.0; never copied into this repository). The clean-up rules follow
``shared/data/PROTOCOL.md``: split evidence strings on ``;`` and whitespace, repair ``D:11:26`` ->
``D11:26`` and ``D30:05`` -> ``D30:5``, drop ids absent from the conversation and the bare ``D``.

Failure policy: a file that does not have LoCoMo's shape raises ``ValueError`` naming the key or
value; bad evidence ids are never an error, they are dropped and counted in ``EvidenceStats``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property
from pathlib import Path
from typing import Any

CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo category numbers and names (PROTOCOL.md; many published tables get this mapping wrong)."""

TIMES = ("real", "spaced")
"""Turn times: the session's own date-time on every turn (as the data gives it), or that plus the
turn's index in seconds (what the eval used before: it orders turns by time alone)."""

_MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "january", "february", "march", "april", "may", "june",
            "july", "august", "september", "october", "november", "december",
        ),
        start=1,
    )
}
_DATE_TIME = re.compile(
    r"^\s*(?P<hour>\d{1,2}):(?P<minute>\d{2})\s*(?P<half>am|pm)\s+on\s+"
    r"(?P<day>\d{1,2})\s+(?P<month>[a-z]+),?\s+(?P<year>\d{4})\s*$",
    re.IGNORECASE,
)
_SESSION_KEY = re.compile(r"^session_(\d+)$")
_DIA_ID = re.compile(r"^D:?(\d+):(\d+)$")
_EVIDENCE_SEPARATOR = re.compile(r"[;\s]+")


def parse_session_datetime(text: str) -> datetime:
    """Parse a LoCoMo session time such as ``"1:56 pm on 8 May, 2023"``.

    Every ``session_<n>_date_time`` in locomo10.json has the shape
    ``H:MM am|pm on D Month, YYYY`` (checked over all 272 sessions).

    Args:
        text: the free-text session time.

    Returns:
        A naive datetime (no zone; the evaluation treats it as UTC), seconds zero.

    Raises:
        ValueError: the text is not in that shape or names an impossible date.
    """
    match = _DATE_TIME.match(text)
    if match is None:
        raise ValueError(f"session time {text!r} is not like '1:56 pm on 8 May, 2023'")
    month = _MONTHS.get(match["month"].lower())
    if month is None:
        raise ValueError(f"session time {text!r} has an unknown month name {match['month']!r}")
    hour = int(match["hour"])
    if not 1 <= hour <= 12:
        raise ValueError(f"session time {text!r} has hour {hour}; expected 1-12 with am/pm")
    hour = hour % 12 + (12 if match["half"].lower() == "pm" else 0)
    return datetime(int(match["year"]), month, int(match["day"]), hour, int(match["minute"]))


@dataclass(frozen=True)
class Turn:
    """One utterance of a conversation.

    Attributes:
        dia_id: ``D<session>:<turn>``, the id evidence refers to.
        session: the session number n of ``session_<n>``.
        turn_index: position in the session, from 0.
        speaker: the speaker's name.
        text: what was said.
        blip_caption: caption of a shared image, or None.
        occurred_at: the session's date-time as the data gives it (``times="real"``), or that plus
            ``turn_index`` seconds (``times="spaced"``, which orders turns by time alone).
    """

    dia_id: str
    session: int
    turn_index: int
    speaker: str
    text: str
    blip_caption: str | None
    occurred_at: datetime

    @property
    def content(self) -> str:
        """The text stored and indexed: ``"{speaker}: {text}"`` plus the photo caption if any."""
        content = f"{self.speaker}: {self.text}"
        if self.blip_caption:
            content += f" [shares a photo: {self.blip_caption}]"
        return content

    @property
    def metadata(self) -> dict[str, str]:
        """The metadata stored with the turn: its ``dia_id`` and ``speaker``."""
        return {"dia_id": self.dia_id, "speaker": self.speaker}


@dataclass(frozen=True)
class Document:
    """One distinct turn content of a conversation and every turn that carries it.

    mcp-memory de-duplicates identical content within a session, so retrievers index documents,
    not turns; a retrieved document stands for all of its dia_ids.

    Attributes:
        content: the stored text.
        dia_ids: the turns with this content, in conversation order (length >= 1).
    """

    content: str
    dia_ids: tuple[str, ...]


@dataclass(frozen=True)
class Question:
    """One LoCoMo question.

    Attributes:
        sample_id: the conversation, e.g. ``conv-26``.
        qa_index: position in the conversation's ``qa`` list, from 0.
        category: 1-5, see ``CATEGORY_NAMES``.
        question: the raw question, used as the query.
        answer: ``answer`` (or ``adversarial_answer`` for category 5) as text, or None.
        evidence: cleaned, de-duplicated dia_ids, in the order given; may be empty.
    """

    sample_id: str
    qa_index: int
    category: int
    question: str
    answer: str | None
    evidence: tuple[str, ...]


@dataclass
class EvidenceStats:
    """What evidence clean-up changed, over all loaded conversations.

    Attributes:
        repaired: (sample_id, raw id, repaired id) for each id rewritten to ``D<s>:<t>``.
        dropped: (sample_id, raw id) for each id dropped (unknown in the conversation, or bare ``D``).
        split: number of evidence strings that held more than one id.
        no_evidence: (sample_id, qa_index) of questions left with no evidence.
    """

    repaired: list[tuple[str, str, str]] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    split: int = 0
    no_evidence: list[tuple[str, int]] = field(default_factory=list)


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo conversation.

    Attributes:
        sample_id: e.g. ``conv-26``.
        turns: every turn, in session then turn order.
        questions: every question, in file order.
        session_count: sessions that have turns (date keys without turns are ignored).
    """

    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    session_count: int

    @cached_property
    def documents(self) -> tuple[Document, ...]:
        """Turns grouped by identical content, in order of first occurrence (computed once)."""
        groups: dict[str, list[str]] = {}
        for turn in self.turns:
            groups.setdefault(turn.content, []).append(turn.dia_id)
        return tuple(Document(content, tuple(dia_ids)) for content, dia_ids in groups.items())


def clean_evidence(
    raw: Iterable[str], known_ids: set[str], sample_id: str, stats: EvidenceStats
) -> tuple[str, ...]:
    """Clean one question's evidence list (PROTOCOL.md rules).

    Args:
        raw: evidence strings as in the file, e.g. ``["D8:6; D9:17", "D:11:26"]``.
        known_ids: the dia_ids of the conversation's turns.
        sample_id: the conversation, for the record in ``stats``.
        stats: updated in place with repairs, drops and splits.

    Returns:
        Known dia_ids in the order given, each once.
    """
    cleaned: list[str] = []
    for text in raw:
        tokens = [token for token in _EVIDENCE_SEPARATOR.split(text) if token]
        if len(tokens) > 1:
            stats.split += 1
        for token in tokens:
            match = _DIA_ID.match(token)
            if match is None:
                stats.dropped.append((sample_id, token))
                continue
            dia_id = f"D{int(match[1])}:{int(match[2])}"
            if dia_id != token:
                stats.repaired.append((sample_id, token, dia_id))
            if dia_id not in known_ids:
                stats.dropped.append((sample_id, token))
            elif dia_id not in cleaned:
                cleaned.append(dia_id)
    return tuple(cleaned)


def parse_conversation(sample: Mapping[str, Any], stats: EvidenceStats, times: str = "real") -> Conversation:
    """Build a ``Conversation`` from one element of locomo10.json.

    Args:
        sample: a dict with ``sample_id``, ``conversation`` and ``qa``.
        stats: evidence clean-up counters, updated in place.
        times: ``"real"``: every turn of a session gets the session's own date-time (as the data
            gives it, so a session's turns share one time); ``"spaced"``: turn i gets that plus i seconds.

    Raises:
        ValueError: a session with turns has no date time, a required key is missing, or
            ``times`` is neither ``"real"`` nor ``"spaced"``.
    """
    if times not in TIMES:
        raise ValueError(f"times={times!r}: use one of {', '.join(TIMES)}")
    try:
        sample_id = str(sample["sample_id"])
        body: Mapping[str, Any] = sample["conversation"]
        qa: Sequence[Mapping[str, Any]] = sample["qa"]
    except KeyError as error:
        raise ValueError(f"LoCoMo sample lacks key {error}; expected sample_id, conversation, qa") from error
    sessions = sorted(
        (int(match[1]), value)
        for key, value in body.items()
        if (match := _SESSION_KEY.match(key)) and value
    )
    turns: list[Turn] = []
    for session, raw_turns in sessions:
        date_key = f"session_{session}_date_time"
        if date_key not in body:
            raise ValueError(f"{sample_id}: session_{session} has turns but no {date_key}")
        start = parse_session_datetime(body[date_key])
        for turn_index, raw in enumerate(raw_turns):
            turns.append(
                Turn(
                    dia_id=str(raw["dia_id"]),
                    session=session,
                    turn_index=turn_index,
                    speaker=str(raw["speaker"]),
                    text=str(raw["text"]),
                    blip_caption=raw.get("blip_caption") or None,
                    occurred_at=start + timedelta(seconds=turn_index if times == "spaced" else 0),
                )
            )
    known_ids = {turn.dia_id for turn in turns}
    questions: list[Question] = []
    for qa_index, item in enumerate(qa):
        category = int(item["category"])
        answer_key = "adversarial_answer" if category == 5 and "adversarial_answer" in item else "answer"
        answer = item.get(answer_key)
        evidence = clean_evidence(item.get("evidence", []), known_ids, sample_id, stats)
        if not evidence:
            stats.no_evidence.append((sample_id, qa_index))
        questions.append(
            Question(
                sample_id=sample_id,
                qa_index=qa_index,
                category=category,
                question=str(item["question"]),
                answer=None if answer is None else str(answer),
                evidence=evidence,
            )
        )
    return Conversation(sample_id, tuple(turns), tuple(questions), len(sessions))


def load_locomo(
    path: Path, sample_ids: Sequence[str] | None = None, times: str = "real"
) -> tuple[list[Conversation], EvidenceStats]:
    """Read locomo10.json and parse the chosen conversations.

    Args:
        path: the JSON file (a list of samples).
        sample_ids: conversations to keep, e.g. ``["conv-26"]``; None keeps all, in file order.
        times: turn times, ``"real"`` or ``"spaced"`` (see ``parse_conversation``).

    Returns:
        The conversations (in file order) and the evidence clean-up counters.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: the file is not LoCoMo-shaped, or a requested sample_id is not in it.
    """
    samples = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(samples, list):
        raise ValueError(f"{path} holds a {type(samples).__name__}; expected a list of LoCoMo samples")
    if sample_ids is not None:
        present = {str(sample.get("sample_id")) for sample in samples}
        missing = [sample_id for sample_id in sample_ids if sample_id not in present]
        if missing:
            raise ValueError(f"conversations {missing} are not in {path}; it has {sorted(present)}")
        samples = [sample for sample in samples if str(sample.get("sample_id")) in set(sample_ids)]
    stats = EvidenceStats()
    return [parse_conversation(sample, stats, times) for sample in samples], stats
