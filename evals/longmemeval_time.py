"""Time expressions on LongMemEval: recall with ``recall.time_expressions`` off and on, BM25 beside.

``python -m evals.longmemeval_time [--oracle PATH] [--sample PATH] [--data-dir DIR] [--report PATH]``

A small loop until ``evals/longmemeval.py`` exists (then point ``rank_question`` at it). Each question's
user turns (``evals.longmemeval_data``) are stored in a session of their own through ``store_memory``,
one after the other in date order, by the first mode's server; every mode then asks the raw question
with ``recall_memory(top_k=50, as_of=question_date)``. BM25 (``evals.retrievers``) indexes the same turns.

Figures per question type, ``_abs`` questions left out: session recall_all@5 and @10 (every gold
session among the first k distinct sessions of the ranked turns) and turn recall@10 (share of gold
turns in the top 10). "windowed" is the subset whose question the rule gives a window.

Failure policy: a tool error raises (``McpToolError``); nothing is retried.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path

import anyio

from evals.locomo_data import Conversation
from evals.locomo_data import Turn as LocomoTurn
from evals.longmemeval_data import ORACLE, QUESTION_TYPES, SAMPLE_S, Question, load
from evals.mcp_retriever import McpMemoryRetriever, open_client
from evals.modes import LEVERS, MODES
from evals.retrievers import Bm25Retriever
from mcp_memory.pipeline.time_expressions import expression_window

logger = logging.getLogger("evals.longmemeval_time")

TOP_K = 50
MODE_NAMES = ("no-time-expressions", "default")  # the rule off, on (the default since 2026-12-04)


class _Turn(LocomoTurn):
    """A LongMemEval user turn in the LoCoMo retrievers' shape, stored as said (no speaker prefix)."""

    @property
    def content(self) -> str:
        return self.text


def as_conversation(question: Question, split: str) -> Conversation:
    """The question's haystack as one conversation whose dia_ids are LongMemEval turn ids."""
    turns = tuple(
        _Turn(turn.turn_id, 0, turn.index, "user", turn.content, None, turn.occurred_at) for turn in question.turns
    )
    return Conversation(f"lme-{split}-{question.question_id}", turns, (), len({t.session_id for t in question.turns}))


@dataclass(frozen=True)
class Score:
    """One question's figures: session recall_all at 5 and 10, turn recall at 10 (0..1)."""

    all5: float
    all10: float
    turn10: float


def score(question: Question, ranked: Sequence[tuple[str, ...]]) -> Score:
    """Score ranked groups of turn ids (``<session_id>:<index>``) against the question's gold."""
    sessions: list[str] = []
    for group in ranked:
        for turn_id in group:
            session = turn_id.rsplit(":", 1)[0]
            if session not in sessions:
                sessions.append(session)
    top10 = {turn_id for group in ranked[:10] for turn_id in group}
    turns = len(question.gold_turns & top10) / len(question.gold_turns) if question.gold_turns else 0.0
    return Score(float(question.gold_sessions <= set(sessions[:5])), float(question.gold_sessions <= set(sessions[:10])),
                 turns)


async def run(args: argparse.Namespace) -> dict[str, object]:
    """Ingest, ask every mode and BM25, and return the report."""
    splits = {"oracle": load(args.oracle), "s50": load(args.sample)}
    questions = {split: [q for q in qs if not q.abstention and q.gold_sessions][: args.limit] for split, qs in splits.items()}
    conversations = {(split, q.question_id): as_conversation(q, split) for split, qs in questions.items() for q in qs}
    windowed = {(split, q.question_id) for split, qs in questions.items() for q in qs
                if expression_window(q.question, q.asked_at.replace(tzinfo=UTC)) is not None}
    scores: dict[str, dict[tuple[str, str], Score]] = {}
    latency: dict[str, list[float]] = {}

    bm25 = Bm25Retriever()
    scores["bm25"] = {}
    for split, qs in questions.items():
        for q in qs:
            conversation = conversations[(split, q.question_id)]
            await bm25.prepare(conversation)
            scores["bm25"][(split, q.question_id)] = score(q, await bm25.rank(conversation, q.question, TOP_K))

    ingested = None
    for name in MODE_NAMES:
        mode = MODES[name] if name in MODES else LEVERS[name]
        async with open_client("inprocess", None, args.data_dir, args.database_url, mode) as (client, server):
            retriever = McpMemoryRetriever(client, server, concurrency=args.concurrency, name=name, ingested=ingested)
            await retriever.wait_ready()
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for conversation in conversations.values():
                    group.start_soon(retriever.prepare, conversation)
            logger.info("%s: prepared %d sessions in %.1f s", name, len(conversations), time.perf_counter() - started)
            ingested = retriever.ingested
            scores[name], latency[name] = {}, []
            for split, qs in questions.items():
                for q in qs:
                    began = time.perf_counter()
                    ranked = await retriever.rank(conversations[(split, q.question_id)], q.question, TOP_K,
                                                  as_of=q.asked_at.replace(tzinfo=UTC))
                    latency[name].append((time.perf_counter() - began) * 1000)
                    scores[name][(split, q.question_id)] = score(q, ranked)
    return _report(questions, scores, windowed, latency)


def _mean(values: list[float]) -> float | None:
    return round(100 * statistics.fmean(values), 1) if values else None


def _report(questions: dict[str, list[Question]], scores: dict[str, dict[tuple[str, str], Score]],
            windowed: set[tuple[str, str]], latency: dict[str, list[float]]) -> dict[str, object]:
    groups: dict[str, list[tuple[str, str]]] = {}
    for split, qs in questions.items():
        for q in qs:
            key = (split, q.question_id)
            for group in (f"{split} all", f"{split} {q.short_type}", *((f"{split} windowed",) if key in windowed else ())):
                groups.setdefault(group, []).append(key)
    table = {
        retriever: {
            group: {"n": len(keys), **{metric: _mean([getattr(by_key[key], metric) for key in keys])
                                        for metric in ("all5", "all10", "turn10")}}
            for group, keys in groups.items()
        }
        for retriever, by_key in scores.items()
    }
    changed = {
        metric: {"better": sum(getattr(scores[MODE_NAMES[1]][k], metric) > getattr(scores[MODE_NAMES[0]][k], metric)
                               for k in scores[MODE_NAMES[0]]),
                 "worse": sum(getattr(scores[MODE_NAMES[1]][k], metric) < getattr(scores[MODE_NAMES[0]][k], metric)
                              for k in scores[MODE_NAMES[0]])}
        for metric in ("all5", "all10", "turn10")
    }
    p50 = {name: round(statistics.median(values), 1) for name, values in latency.items()}
    return {"table": table, "changed_on_vs_off": changed, "recall_p50_ms": p50,
            "windowed": sorted(f"{split}:{qid}" for split, qid in windowed)}


def print_table(report: dict[str, object]) -> None:
    """One line per group and retriever: n, session recall_all@5, @10, turn recall@10."""
    table: dict[str, dict[str, dict[str, object]]] = report["table"]  # type: ignore[assignment]
    order = ["all", "windowed", *QUESTION_TYPES.values()]
    groups = sorted(next(iter(table.values())), key=lambda g: (g.split()[0], order.index(g.split()[1])))
    print(f"{'group':<16}{'retriever':<18}{'n':>4}{'all@5':>8}{'all@10':>8}{'turn@10':>9}")
    for group in groups:
        for retriever, rows in table.items():
            row = rows[group]
            print(f"{group:<16}{retriever:<18}{row['n']:>4}{row['all5']:>8}{row['all10']:>8}{row['turn10']:>9}")
    print("on vs off, questions better/worse:", report["changed_on_vs_off"])
    print("recall p50 ms:", report["recall_p50_ms"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--oracle", type=Path, default=ORACLE)
    parser.add_argument("--sample", type=Path, default=SAMPLE_S)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/longmemeval-time"))
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--report", type=Path, default=None)
    parser.add_argument("--limit", type=int, default=None, help="at most this many questions per split (a smoke run)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("mcp_memory").setLevel(logging.WARNING)
    logging.getLogger("evals.mcp_retriever").setLevel(logging.WARNING)
    report = anyio.run(run, args)
    print_table(report)
    if args.report:
        args.report.write_text(json.dumps(report, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
