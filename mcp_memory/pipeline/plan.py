"""Planning: the optional LLM rewrites a question into retrieval queries and a time window.

Failure policy: with no plan model, or when the model fails, times out or answers nonsense,
recall goes on with the original query alone and ``Plan.notes`` says why (it lands in the
audit). The original query is always the first retrieval query.

A time window is kept only when the question itself names a time (``names_time``): a small local
model gives one for every question, mostly "today" (Qwen2.5-0.5B on 60 of 60 LoCoMo questions,
evals/README.md), and in a live session such a window would pull the day's memories into every
recall. Without a window from the model, ``recall.time_expressions`` reads one from the question
itself (``time_expressions.py``); the model's window wins.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, time
from typing import Any

from mcp_memory.errors import ChatError, InvalidInput
from mcp_memory.llm.client import LlmClient
from mcp_memory.models import Plan, TimeWindow
from mcp_memory.pipeline.time_expressions import MAY, TIME_WORDS, expression_window
from mcp_memory.pipeline.validate import parse_occurred_at

__all__ = ["PLAN_SCHEMA", "names_time", "plan_query"]

logger = logging.getLogger(__name__)

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "queries": {"type": "array", "items": {"type": "string"}},
        "time_window": {
            "anyOf": [
                {
                    "type": "object",
                    "properties": {
                        "start": {"type": "string"},
                        "end": {"type": "string"},
                    },
                    "required": ["start", "end"],
                },
                {"type": "null"},
            ]
        },
    },
    "required": ["queries"],
}

_SYSTEM = (
    "You plan searches over a person's stored memories. Rewrite the question into at most {n} short search "
    "queries that would match the memories that answer it: use synonyms, resolve pronouns, and name the entity "
    "and the time the question is about. A question that needs several facts (a list, a comparison, things "
    'that happened at different times or to different people) gets one query per fact. If the question names a period ("last May", "two weeks before the '
    'trip"), give it as time_window with ISO 8601 start and end; otherwise time_window is null. Today is {today}. '
    'Reply with JSON only: {{"queries": [...], "time_window": {{"start": "...", "end": "..."}} | null}}.'
)


def names_time(question: str) -> bool:
    """Whether ``question`` names a date or period ("last May", "in 2023", "yesterday", "3/14")."""
    return bool(TIME_WORDS.search(question) or MAY.search(question))


def _window(raw: Any, notes: list[str], question: str) -> TimeWindow | None:
    if raw is None:
        return None
    if not names_time(question):
        notes.append("time window discarded: the question names no date or period")
        return None
    if not isinstance(raw, dict):
        notes.append("time window discarded: not an object")
        return None
    try:
        start = parse_occurred_at(str(raw.get("start")))
        end = parse_occurred_at(str(raw.get("end")))
    except InvalidInput:
        notes.append(
            f"time window discarded: unparseable start/end {raw.get('start')!r}..{raw.get('end')!r} (need ISO 8601)"
        )
        return None
    if end < start:
        start, end = end, start
    if len(str(raw.get("end"))) == 10 or end.time() == time(0, 0):
        # A bare end date, or an end at midnight ("2023-08-11T00:00:00Z" for "on 11 August"), includes that day.
        end = end.replace(hour=23, minute=59, second=59)
    return TimeWindow(start=start, end=end)


async def plan_query(
    query: str,
    llm: LlmClient,
    max_queries: int,
    now: datetime | None = None,
    *,
    session: str,
    time_expressions: bool = False,
) -> Plan:
    """Plan the retrieval queries for ``query``, and the time window it names.

    The LLM planner's window wins; without one (no plan model, a failure, or a plan without a
    window) and with ``time_expressions``, a time expression in the question becomes the window
    (``time_expressions.expression_window``). ``Plan.time_window_source`` says which.

    Args:
        now: the moment the question is asked (recall's ``as_of``); default now. "Today" for
            the planner, and what "yesterday" or "last week" count back from.
        session: the session recalled from; the planner's token usage is counted there.
        time_expressions: read a window from the question when the planner gave none.

    Returns:
        A Plan whose first query is ``query`` itself, followed by up to ``max_queries``
        distinct rewrites, with a time window when the model gave a parseable one or the
        question names a period.
    """
    as_of = now or datetime.now(UTC)
    plan = await _llm_plan(query, llm, max_queries, as_of, session)
    if plan.time_window is not None:
        return plan.model_copy(update={"time_window_source": "llm"})
    if not time_expressions:
        return plan
    try:
        window = expression_window(query, as_of)
    except Exception as exc:  # noqa: BLE001 - a parser bug costs the window, never the recall
        note = f"time expression not read: {type(exc).__name__}"  # not its message, which may quote the question
        logger.warning(note)
        return plan.model_copy(update={"notes": [*plan.notes, note]})
    if window is not None:
        return plan.model_copy(update={"time_window": window, "time_window_source": "expression"})
    return plan


async def _llm_plan(query: str, llm: LlmClient, max_queries: int, now: datetime, session: str) -> Plan:
    """The LLM planner's plan; the literal query alone when there is no plan model or it fails."""
    if llm.model_for("plan") is None:
        return Plan(queries=[query], notes=["no plan model configured"])
    today = now.date().isoformat()
    try:
        reply = await llm.complete_json(
            "plan",
            _SYSTEM.format(n=max_queries, today=today),
            query,
            "retrieval_plan",
            PLAN_SCHEMA,
            session=session,
        )
    except ChatError as exc:
        logger.warning(
            "planning fell back to the literal query: %s", exc
        )  # the endpoint is down or misconfigured
        return Plan(
            queries=[query], notes=[f"planner failed, literal query used: {exc}"]
        )
    notes: list[str] = []
    queries = [query]
    raw_queries = reply.value.get("queries")
    if not isinstance(raw_queries, list):
        notes.append("planner reply had no queries list")
        raw_queries = []
    for item in raw_queries:
        if (
            isinstance(item, str)
            and item.strip()
            and "\x00" not in item
            and item not in queries
        ):
            queries.append(item.strip()[:1000])
        if len(queries) > max_queries:
            break
    window = _window(reply.value.get("time_window"), notes, query)
    return Plan(
        queries=queries,
        time_window=window,
        notes=notes,
        mode=reply.mode,
        fallbacks=reply.fallbacks,
    )
