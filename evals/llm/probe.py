"""A bounded check of mcp-memory's LLM paths against a real server (not the 100-question evaluation).

1. ``format_check``: one small request per structured-output mode, sent as it is over HTTP, to
   record what the server answers to each ``response_format`` (status, seconds, body's start).
2. ``answer_probe``: mcp-memory in process with the server as planner and answer model; the first
   ``sessions`` LoCoMo sessions of one conversation stored in one session, then the first question
   of each category whose evidence lies in them asked through ``recall_memory``. Per question: the
   answer against the gold one (normalised exact match, token F1), the cited turns against the
   evidence, the planner's queries, the modes that answered and the modes refused (from the
   audit), and seconds.
3. ``supersede_probe``: mcp-memory with the server as supersede model; two pairs of an old fact
   and the fact that replaced it are stored, and each decision's audit row is kept.

Usage totals (``usage_stats``) are read at the end of each part.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import httpx
from mcp import Client

from evals.llm.answers import call
from evals.llm.scoring import citation_scores, exact_match, token_f1
from evals.locomo_data import Conversation

__all__ = ["answer_probe", "format_check", "supersede_probe"]

logger = logging.getLogger(__name__)

_CHECK_SYSTEM = 'Reply with JSON only: {"colour": "<the colour named>", "sure": true|false}.'
_CHECK_SCHEMA = {"type": "object", "properties": {"colour": {"type": "string"}, "sure": {"type": "boolean"}},
                 "required": ["colour", "sure"]}
SUPERSEDE_PAIRS = (
    ("Alice lives in Berlin, in a flat in Kreuzberg.", "Alice moved from Berlin to Lisbon; she lives in Lisbon now."),
    ("Bob's team meeting is on Mondays at 10:00.", "Bob's team meeting moved from Mondays to Thursdays at 15:00."),
)


def format_check(base_url: str, model: str, timeout_s: float = 300.0) -> list[dict[str, Any]]:
    """What the server answers to each structured-output mode, in ladder order."""
    from mcp_memory.llm.formats import LADDER, response_format

    results = []
    with httpx.Client(timeout=timeout_s) as http:
        for mode in LADDER:
            body: dict[str, Any] = {"model": model, "temperature": 0, "max_tokens": 40, "messages": [
                {"role": "system", "content": _CHECK_SYSTEM}, {"role": "user", "content": "The sky is blue."}]}
            fmt = response_format(mode, "colour_check", _CHECK_SCHEMA)
            if fmt is not None:
                body["response_format"] = fmt
            started = time.perf_counter()
            try:
                response = http.post(f"{base_url}/chat/completions", json=body)
            except httpx.HTTPError as exc:  # the server died or timed out: say so and stop asking
                results.append({"mode": mode, "status": None, "error": f"{type(exc).__name__}: {exc}"})
                break
            seconds = round(time.perf_counter() - started, 2)
            try:
                content = response.json()["choices"][0]["message"]["content"]
            except (ValueError, KeyError, IndexError, TypeError):
                content = None
            results.append({"mode": mode, "status": response.status_code, "seconds": seconds,
                            "content": content, "body_start": None if content is not None else response.text[:400]})
            logger.info("format check %s: HTTP %d in %.1f s", mode, response.status_code, seconds)
    return results


async def _fresh(client: Client, session: str) -> None:
    result = await client.call_tool("delete_memory", {"session": session, "all": True, "confirm": session})
    if result.is_error:
        logger.info("emptying %s: %s", session, result.content[0])


async def _last_audit(client: Client, session: str, kind: str) -> dict[str, Any]:
    audits = await call(client, "list_audits", {"session": session, "limit": 1, "kind": kind})
    return audits["audits"][0]["detail"]


def pick_questions(conversation: Conversation, sessions: int) -> list[Any]:
    """The first question of each category (1-5) whose evidence lies in the first ``sessions`` sessions."""
    picked: dict[int, Any] = {}
    for question in conversation.questions:
        in_range = question.evidence and all(int(e[1:].split(":")[0]) <= sessions for e in question.evidence)
        if in_range and question.category not in picked:
            picked[question.category] = question
    return [picked[category] for category in sorted(picked)]


async def answer_probe(client: Client, conversation: Conversation, sessions: int) -> dict[str, Any]:
    """Store the first ``sessions`` sessions, ask one question per category, and score each."""
    session = f"probe-{conversation.sample_id}"
    await _fresh(client, session)
    turns_of: dict[str, list[str]] = {}
    started = time.perf_counter()
    turns = [turn for turn in conversation.turns if turn.session <= sessions]
    for turn in turns:
        stored = await call(client, "store_memory", {"session": session, "content": turn.content,
                                                      "occurred_at": turn.occurred_at.isoformat()})
        turns_of.setdefault(stored["memory_id"], []).append(turn.dia_id)
    store_s = round(time.perf_counter() - started, 1)
    rows = []
    for question in pick_questions(conversation, sessions):
        asked = time.perf_counter()
        result = await call(client, "recall_memory", {"session": session, "query": question.question})
        seconds = round(time.perf_counter() - asked, 1)
        audit = await _last_audit(client, session, "recall")
        cited = [dia for memory in result["memories"] for dia in turns_of.get(memory["memory_id"], [])]
        answer = result["answer"] or ""
        gold = question.answer or ""
        precision, recall = citation_scores(cited, question.evidence) if result["answer"] is not None else (None, None)
        rows.append({
            "qa_index": question.qa_index, "category": question.category, "question": question.question,
            "gold": gold, "answer": result["answer"], "answerable": result["answerable"],
            "exact_match": exact_match(answer, gold), "token_f1": round(token_f1(answer, gold), 3),
            "cited_turns": cited, "evidence": list(question.evidence),
            "citation_precision": precision, "citation_recall": recall,
            "queries": audit["queries"], "plan_notes": audit["plan_notes"], "answer_note": audit["answer_note"],
            "llm_modes": audit.get("llm_modes"), "llm_fallbacks": audit.get("llm_fallbacks"), "seconds": seconds,
        })
        logger.info("q%d (category %d) in %.1f s: %r (gold %r)", question.qa_index, question.category, seconds,
                    result["answer"], gold)
    usage = await call(client, "usage_stats", {})
    return {"session": session, "turns_stored": len(turns), "store_seconds": store_s, "questions": rows,
            "usage": usage["operations"]}


async def supersede_probe(client: Client) -> dict[str, Any]:
    """Store each pair (old, then new) in a session of its own; the supersede decisions' audit rows."""
    decisions = []
    for index, (old, new) in enumerate(SUPERSEDE_PAIRS):
        session = f"probe-supersede-{index}"
        await _fresh(client, session)
        old_id = (await call(client, "store_memory", {"session": session, "content": old,
                                                       "occurred_at": "2024-01-10"}))["memory_id"]
        started = time.perf_counter()
        stored = await call(client, "store_memory", {"session": session, "content": new, "occurred_at": "2025-03-01"})
        seconds = round(time.perf_counter() - started, 1)
        audit = await _last_audit(client, session, "supersede")
        decisions.append({"old": old, "new": new, "expected": [old_id], "superseded": stored["superseded"],
                          "correct": stored["superseded"] == [old_id], "seconds": seconds,
                          "mode": audit.get("mode"), "fallbacks": audit.get("fallbacks"), "note": audit.get("note"),
                          "reason": audit.get("reason")})
        logger.info("supersede pair %d in %.1f s: %s", index, seconds, "right" if decisions[-1]["correct"] else "wrong")
    usage = await call(client, "usage_stats", {})
    return {"decisions": decisions, "usage": usage["operations"]}


def write(path: Path | None, report: dict[str, Any], echo: bool = True) -> None:
    """Print ``report`` as JSON (unless ``echo`` is false), and write it to ``path`` when given."""
    text = json.dumps(report, indent=2, ensure_ascii=False)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")
    if echo:
        print(text)
