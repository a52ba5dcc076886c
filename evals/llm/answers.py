"""The answer evaluation: LoCoMo questions through mcp-memory's tools over HTTP, a real model planning and answering.

1. A stratified sample (``sample``): ``per_category`` questions of each LoCoMo category, drawn with a
   seeded ``random.Random`` from the questions that have evidence.
2. Every conversation the sample touches is stored, one MCP session per conversation, through
   ``store_memory`` on a server with no LLM (``mcp-memory serve --transport http`` on 127.0.0.1, an
   embedded PostgreSQL in a fresh data dir); turns in conversation order, conversations concurrently.
3. **Without planning**: each question asked on that server with ``top_k`` 10 (no LLM): recall@10.
4. **Each arm** (a server started from an installed package or a source folder on ``PYTHONPATH``,
   the same data dir, ``llm.plan_model`` = ``llm.answer_model`` = the local model): each question asked
   once with ``recall_memory`` (the arm's ``top_k``, else the default). Scored per question: normalised exact match and
   token F1 of the answer against the gold one (categories 1-4; a refusal scores 0), refusal,
   citation precision and recall against the evidence turns, recall@10 of the candidates the answer
   model was shown (the audit's ``fused`` list, i.e. *with* planning; recall@top_k for an arm shown
   fewer than 10), seconds, and the audit's
   planner queries and output modes. ``usage_stats`` before and after gives tokens per question.
5. **Deleted evidence**: the evidence memories of ``deleted`` sampled questions of categories 1, 2
   and 4 are deleted (``delete_memory``), and each arm is asked those questions again: the share
   refused. Another turn may still hold the answer (LoCoMo repeats facts), so this is a lower bound
   on a right refusal rate, not a target of 100%.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from evals.llm.scoring import citation_scores, exact_match, token_f1
from evals.locomo_data import Conversation, Question

__all__ = ["Arm", "ask_arm", "deleted_pass", "ingest", "plain_pass", "recall_at", "sample"]

logger = logging.getLogger(__name__)

ANSWERED_CATEGORIES = (1, 2, 3, 4)  # scored by EM and F1; category 5 (adversarial) by refusal


@dataclass(frozen=True)
class Arm:
    """One server configuration under test: ``source`` None runs the installed package, else the
    folder holding the ``mcp_memory/`` to run (put first on ``PYTHONPATH``); ``top_k`` the recall's
    ``top_k`` (how many candidates the answer model is shown), None for the server's default."""

    name: str
    source: Path | None = None
    top_k: int | None = None


def sample(conversations: Sequence[Conversation], per_category: int, seed: int) -> list[Question]:
    """``per_category`` questions with evidence of each category 1-5 (fewer when a category has
    fewer), drawn with ``random.Random(seed)``, in (category, conversation, qa_index) order."""
    rng = random.Random(seed)
    picked: list[Question] = []
    for category in (1, 2, 3, 4, 5):
        pool = [q for c in conversations for q in c.questions if q.category == category and q.evidence]
        picked.extend(sorted(rng.sample(pool, min(per_category, len(pool))), key=lambda q: (q.sample_id, q.qa_index)))
    return picked


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A tool call's structured result; a tool error raises RuntimeError with its text."""
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {' '.join(getattr(b, 'text', '') for b in result.content)}")
    return result.structured_content


async def ingest(client: Client, conversations: Sequence[Conversation], concurrency: int = 10) -> dict[str, Any]:
    """Store each conversation's turns in its own session; the memory_id -> dia_ids map per session."""
    turns_of: dict[str, dict[str, list[str]]] = {c.sample_id: {} for c in conversations}
    limiter = anyio.CapacityLimiter(concurrency)
    started = time.perf_counter()

    async def store(conversation: Conversation) -> None:
        async with limiter:
            session = conversation.sample_id
            await call(client, "delete_memory", {"session": session, "all": True, "confirm": session})
            for turn in conversation.turns:
                stored = await call(client, "store_memory", {"session": session, "content": turn.content,
                                                             "occurred_at": turn.occurred_at.isoformat()})
                turns_of[session].setdefault(stored["memory_id"], []).append(turn.dia_id)

    async with anyio.create_task_group() as tasks:
        for conversation in conversations:
            tasks.start_soon(store, conversation)
    seconds = round(time.perf_counter() - started, 1)
    logger.info("stored %d turns of %d conversations in %.1f s", sum(len(c.turns) for c in conversations),
                len(conversations), seconds)
    return {"turns_of": turns_of, "seconds": seconds, "turns": sum(len(c.turns) for c in conversations)}


def recall_at(ranked_ids: Sequence[str], turns_of: dict[str, list[str]], evidence: Sequence[str], k: int) -> float:
    found = {dia for memory_id in ranked_ids[:k] for dia in turns_of.get(memory_id, [])}
    return len(found & set(evidence)) / len(evidence)


async def plain_pass(client: Client, questions: Sequence[Question], turns_of: dict[str, dict[str, list[str]]]
                     ) -> dict[tuple[str, int], float]:
    """recall@10 of each question with no LLM (the raw question as the only query)."""
    scores = {}
    for question in questions:
        result = await call(client, "recall_memory", {"session": question.sample_id, "query": question.question,
                                                      "top_k": 10})
        ids = [memory["memory_id"] for memory in result["memories"]]
        scores[(question.sample_id, question.qa_index)] = recall_at(ids, turns_of[question.sample_id],
                                                                     question.evidence, 10)
    return scores


def _usage(stats: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {row["operation"]: {k: v for k, v in row.items() if isinstance(v, int)} for row in stats["operations"]}


def usage_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per operation, each integer counter of ``usage_stats`` after minus before."""
    old, new = _usage(before), _usage(after)
    return {op: {k: v - old.get(op, {}).get(k, 0) for k, v in counters.items()} for op, counters in new.items()}


def _ask(question: Question, top_k: int | None) -> dict[str, Any]:
    return {"session": question.sample_id, "query": question.question, **({"top_k": top_k} if top_k else {})}


async def ask_arm(client: Client, questions: Sequence[Question], turns_of: dict[str, dict[str, list[str]]],
                  top_k: int | None = None) -> dict[str, Any]:
    """Ask every question once on an arm's server (with ``top_k`` when given); per-question rows and
    the usage they cost."""
    before = await call(client, "usage_stats", {})
    rows = []
    started = time.perf_counter()
    for number, question in enumerate(questions, 1):
        session, mapping = question.sample_id, turns_of[question.sample_id]
        asked = time.perf_counter()
        result = await call(client, "recall_memory", _ask(question, top_k))
        seconds = round(time.perf_counter() - asked, 2)
        audit = (await call(client, "list_audits", {"session": session, "limit": 1, "kind": "recall"}))["audits"][0]
        detail = audit["detail"]
        refused = result["answerable"] is False
        answer = "" if refused or result["answer"] is None else result["answer"]
        gold = question.answer or ""
        cited = [dia for memory in result["memories"] for dia in mapping.get(memory["memory_id"], [])]
        precision, recall = citation_scores(cited, question.evidence) if not refused else (None, None)
        shown = [row["memory_id"] for row in detail["fused"]]
        rows.append({
            "sample_id": session, "qa_index": question.qa_index, "category": question.category,
            "question": question.question, "gold": gold, "answer": result["answer"],
            "answered": result["answer"] is not None, "refused": refused,
            "exact_match": exact_match(answer, gold) if question.category in ANSWERED_CATEGORIES else None,
            "token_f1": round(token_f1(answer, gold), 4) if question.category in ANSWERED_CATEGORIES else None,
            "cited_turns": cited, "evidence": list(question.evidence),
            "citation_precision": precision, "citation_recall": recall,
            "recall_at_10_planned": recall_at(shown, mapping, question.evidence, 10),
            "queries": detail["queries"], "time_window": detail["time_window"], "plan_notes": detail["plan_notes"],
            "answer_note": detail["answer_note"], "llm_modes": detail.get("llm_modes"),
            "llm_fallbacks": detail.get("llm_fallbacks"), "latency_ms": detail["latency_ms"], "seconds": seconds,
        })
        logger.info("%d/%d %s q%d (category %d) %.1f s: %s", number, len(questions), session, question.qa_index,
                    question.category, seconds, "refused" if refused else "answered")
        logger.info("row %s", json.dumps(rows[-1]))  # a run stopped early can still be scored from its log
    after = await call(client, "usage_stats", {})
    return {"rows": rows, "seconds": round(time.perf_counter() - started, 1), "usage": usage_delta(before, after)}


def pick_deleted(questions: Sequence[Question], count: int, seed: int) -> list[Question]:
    """``count`` sampled questions of categories 1, 2 and 4 (seeded), whose evidence gets deleted."""
    pool = [q for q in questions if q.category in (1, 2, 4)]
    return sorted(random.Random(seed).sample(pool, min(count, len(pool))), key=lambda q: (q.sample_id, q.qa_index))


async def delete_evidence(client: Client, questions: Sequence[Question],
                          turns_of: dict[str, dict[str, list[str]]]) -> int:
    """Delete every memory holding an evidence turn of ``questions``; how many were deleted."""
    deleted = 0
    for question in questions:
        mapping = turns_of[question.sample_id]
        for memory_id, dia_ids in mapping.items():
            if set(dia_ids) & set(question.evidence):
                result = await call(client, "delete_memory", {"session": question.sample_id, "memory_id": memory_id})
                deleted += result["count"]
    return deleted


async def deleted_pass(client: Client, questions: Sequence[Question], top_k: int | None = None
                       ) -> list[dict[str, Any]]:
    """Ask each question whose evidence was deleted; whether it was refused, and what was answered."""
    rows = []
    for question in questions:
        result = await call(client, "recall_memory", _ask(question, top_k))
        rows.append({"sample_id": question.sample_id, "qa_index": question.qa_index, "category": question.category,
                     "refused": result["answerable"] is False, "answer": result["answer"], "gold": question.answer})
    return rows


def base_env(base_url: str, model: str, data_dir: Path, max_output_tokens: int = 512) -> dict[str, str]:
    """The environment of an arm's server: the local model plans and answers; nothing retried; a reply
    capped at ``max_output_tokens`` (a looping reply costs its cap / about 15 tokens/s here)."""
    return {"MCP_MEMORY_DATA_DIR": str(data_dir), "MCP_MEMORY_LLM__BASE_URL": base_url,
            "MCP_MEMORY_LLM__API_KEY": "local", "MCP_MEMORY_LLM__PLAN_MODEL": model,
            "MCP_MEMORY_LLM__ANSWER_MODEL": model, "MCP_MEMORY_LLM__TIMEOUT_S": "600",
            "MCP_MEMORY_LLM__MAX_RETRIES": "0", "MCP_MEMORY_LLM__MAX_OUTPUT_TOKENS": str(max_output_tokens)}
