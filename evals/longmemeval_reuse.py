"""Reuse an earlier LongMemEval ingest (``python -m evals.longmemeval --reuse-ingest``).

Storing the full S split takes about 50 minutes; asking its questions a few. With
``--reuse-ingest`` nothing is stored: the memories of each question's session are read back
through the server's export (``Repository.export_memories``, what ``mcp-memory export`` streams;
no tool is added or widened), and the retriever's memory_id -> turn ids map is rebuilt from them.
Each stored memory's metadata names the turn it was stored for (``session_id``, ``turn``); the
server stores identical content in a session once, so a memory stands for every turn of the
question's haystack with that turn's content (``Question.documents``), as it did at ingest.

Failure policy: a question whose session is missing, or holds a memory whose metadata names no
turn of the question's haystack, raises ``ValueError`` (the ingest is of other data or settings).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evals.longmemeval_data import Question

logger = logging.getLogger(__name__)


def turn_map(question: Question, memories: Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """memory_id -> the turn ids it stands for, from one question's stored memories.

    Args:
        question: the question (its turns as fitted for the run, ``fit_turns``).
        memories: the memories of its session, each with ``memory_id`` and ``metadata``
            ``{"session_id", "turn"}``.

    Raises:
        ValueError: a memory's metadata names no turn of the question's haystack.
    """
    content_of = {turn.turn_id: turn.content for turn in question.turns}
    turns_with = {document.content: list(document.dia_ids) for document in question.documents}
    mapped: dict[str, list[str]] = {}
    for memory in memories:
        metadata = memory.get("metadata") or {}
        turn_id = f"{metadata.get('session_id')}:{metadata.get('turn')}"
        if turn_id not in content_of:
            raise ValueError(f"question {question.question_id}: memory {memory['memory_id']} names turn "
                             f"{turn_id!r}, which its haystack lacks; ingest again without --reuse-ingest")
        mapped[str(memory["memory_id"])] = turns_with[content_of[turn_id]]
    return mapped


async def read_ingest(
    questions: Sequence[Question], session_prefix: str, data_dir: Path | None, database_url: str | None
) -> dict[str, dict[str, list[str]]]:
    """Read back what an earlier run stored: session -> memory_id -> turn ids, for every question.

    Starts the server's resources over the database (as ``mcp-memory export`` does), streams the
    questions' sessions, and closes them again before the modes' servers open.

    Raises:
        ValueError: a question's session holds no memory, or a memory names no turn of its haystack.
    """
    from mcp_memory.access.scope import SessionScope
    from mcp_memory.deps import Deps
    from mcp_memory.settings import Settings

    by_session = {f"{session_prefix}{question.sample_id}": question for question in questions}
    stored: dict[str, list[dict[str, Any]]] = {session: [] for session in by_session}
    deps = Deps(Settings(**({"database_url": database_url} if database_url else {"data_dir": data_dir})))
    try:
        await deps.start()
        ready = await deps.ready()
        async for memory in ready.repository.export_memories(SessionScope.parse(by_session)):
            stored[memory["session"]].append(memory)
    finally:
        await deps.close()
    empty = [session for session, memories in stored.items() if not memories]
    if empty:
        raise ValueError(f"--reuse-ingest: {len(empty)} sessions hold no memory (e.g. {empty[0]}); "
                         "ingest them first, without --reuse-ingest")
    ingested = {session: turn_map(by_session[session], memories) for session, memories in stored.items()}
    unlike = [session for session, question in by_session.items()
              if len(ingested[session]) != len(question.documents)]
    if unlike:
        logger.warning("--reuse-ingest: %d sessions hold another number of memories than distinct turns "
                       "(e.g. %s: %d memories, %d distinct turns)", len(unlike), unlike[0],
                       len(ingested[unlike[0]]), len(by_session[unlike[0]].documents))
    logger.info("reused the ingest of %d questions (%d memories)", len(ingested),
                sum(len(memories) for memories in ingested.values()))
    return ingested
