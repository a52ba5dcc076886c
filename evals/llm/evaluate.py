"""Runs the answer evaluation (``evals.llm.answers``) end to end and summarises it per category.

Servers are real ``mcp-memory serve --transport http`` processes on 127.0.0.1 (``benchmarks.harness``)
over one embedded PostgreSQL in ``data_dir`` (emptied first): a plain one (no LLM) for storing,
recall without planning and deleting, and one per arm, started in turn, with the local model as
planner and answer model. Every arm is asked the same sample in the same run.
"""

from __future__ import annotations

import logging
import shutil
import socket
import statistics
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp import Client

from benchmarks.harness import ServerProcess
from evals.llm.answers import (
    Arm,
    ask_arm,
    base_env,
    delete_evidence,
    deleted_pass,
    ingest,
    pick_deleted,
    plain_pass,
    sample,
)
from evals.locomo_data import CATEGORY_NAMES, Conversation

__all__ = ["evaluate", "markdown", "summarise"]

logger = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _revision(arm: Arm) -> str | None:
    """The source folder's commit (``+dirty`` when it has uncommitted changes), read as the arm starts."""
    if arm.source is None:
        return None
    head = subprocess.run(["git", "-C", str(arm.source), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(arm.source), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return head + ("+dirty" if dirty else "")


def _server(data_dir: Path, env: dict[str, str], arm: Arm | None = None) -> ServerProcess:
    extra = {**env, **({"PYTHONPATH": str(arm.source)} if arm and arm.source else {})}
    return ServerProcess(data_dir, free_port(), env=extra)


async def evaluate(conversations: Sequence[Conversation], arms: Sequence[Arm], base_url: str, model: str,
                   data_dir: Path, per_category: int = 20, deleted: int = 20, seed: int = 13) -> dict[str, Any]:
    """The whole run; returns the report (per-question rows, per-category summaries, timings)."""
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    questions = sample(conversations, per_category, seed)
    used = sorted({q.sample_id for q in questions})
    stored_conversations = [c for c in conversations if c.sample_id in used]
    report: dict[str, Any] = {"questions": len(questions), "per_category": per_category, "seed": seed,
                              "conversations": used, "arms": {}}
    with _server(data_dir, {}) as plain:
        async with Client(f"http://127.0.0.1:{plain.port}/mcp") as client:
            stored = await ingest(client, stored_conversations)
            turns_of = stored["turns_of"]
            report["ingest"] = {"turns": stored["turns"], "seconds": stored["seconds"]}
            unplanned = await plain_pass(client, questions, turns_of)
    env = base_env(base_url, model, data_dir)
    report["server_env"] = {k: v for k, v in env.items() if k != "MCP_MEMORY_DATA_DIR"}
    for arm in arms:
        revision = _revision(arm)
        with _server(data_dir, env, arm) as server:
            async with Client(f"http://127.0.0.1:{server.port}/mcp") as client:
                logger.info("arm %s at %s: %d questions", arm.name, revision, len(questions))
                asked = await ask_arm(client, questions, turns_of, arm.top_k)
        for row in asked["rows"]:
            row["recall_at_10_unplanned"] = unplanned[(row["sample_id"], row["qa_index"])]
        report["arms"][arm.name] = {"source": str(arm.source) if arm.source else "installed", "revision": revision,
                                    "top_k": arm.top_k, **asked}
    gone = pick_deleted(questions, deleted, seed)
    with _server(data_dir, {}) as plain:
        async with Client(f"http://127.0.0.1:{plain.port}/mcp") as client:
            report["deleted_memories"] = await delete_evidence(client, gone, turns_of)
    for arm in arms:
        with _server(data_dir, env, arm) as server:
            async with Client(f"http://127.0.0.1:{server.port}/mcp") as client:
                report["arms"][arm.name]["deleted_evidence"] = await deleted_pass(client, gone, arm.top_k)
    for arm_report in report["arms"].values():
        arm_report["summary"] = summarise(arm_report)
    return report


def _mean(values: Sequence[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return round(100 * statistics.fmean(present), 1) if present else None


def _group(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    answered = [r for r in rows if not r["refused"]]
    seconds = [r["seconds"] for r in rows]
    return {
        "n": len(rows),
        "exact_match": _mean([None if r["exact_match"] is None else float(r["exact_match"]) for r in rows]),
        "token_f1": _mean([r["token_f1"] for r in rows]),
        "refused": _mean([float(r["refused"]) for r in rows]),
        "citation_precision": _mean([r["citation_precision"] for r in answered]),
        "citation_recall": _mean([r["citation_recall"] for r in answered]),
        "recall_at_10_planned": _mean([r["recall_at_10_planned"] for r in rows]),
        "recall_at_10_unplanned": _mean([r["recall_at_10_unplanned"] for r in rows]),
        "seconds_mean": round(statistics.fmean(seconds), 1) if seconds else None,
        "seconds_p50": round(statistics.median(seconds), 1) if seconds else None,
    }


def summarise(arm_report: dict[str, Any]) -> dict[str, Any]:
    """Per category and over 1-4 and 1-5: the means in percent, refusals, seconds, tokens per question."""
    rows = arm_report["rows"]
    groups = {str(c): _group([r for r in rows if r["category"] == c]) for c in sorted({r["category"] for r in rows})}
    groups["1-4"] = _group([r for r in rows if r["category"] != 5])
    groups["1-5"] = _group(rows)
    n = len(rows) or 1
    tokens = {op: {k: round(v / n, 1) for k, v in counters.items() if k.endswith("tokens") or k in ("calls", "errors")}
              for op, counters in arm_report["usage"].items()}
    deleted = arm_report.get("deleted_evidence", [])
    return {"groups": groups, "per_question_usage": tokens,
            "deleted_evidence_refused": _mean([float(r["refused"]) for r in deleted]), "deleted_n": len(deleted)}


def markdown(report: dict[str, Any]) -> str:
    """The per-category table of every arm, then tokens per question and the deleted-evidence refusals."""
    lines = ["| arm | category | n | EM | F1 | refused | cite P | cite R | R@10 planned | R@10 unplanned | s/question |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, arm in report["arms"].items():
        for key, g in arm["summary"]["groups"].items():
            label = f"{key} {CATEGORY_NAMES[int(key)]}" if key.isdigit() else key
            cells = [g[k] for k in ("n", "exact_match", "token_f1", "refused", "citation_precision", "citation_recall",
                                    "recall_at_10_planned", "recall_at_10_unplanned", "seconds_mean")]
            lines.append(f"| {name} | {label} | " + " | ".join("-" if c is None else str(c) for c in cells) + " |")
    lines.append("")
    for name, arm in report["arms"].items():
        summary = arm["summary"]
        usage = "; ".join(f"{op}: {c.get('calls', 0)} calls, {c.get('prompt_tokens', 0)} prompt + "
                          f"{c.get('completion_tokens', 0)} completion tokens"
                          for op, c in summary["per_question_usage"].items())
        shown = f"; top_k {arm['top_k']} (R@10 planned is recall of those)" if arm.get("top_k") else ""
        lines.append(f"- {name}: per question {usage}; deleted evidence refused "
                     f"{summary['deleted_evidence_refused']}% of {summary['deleted_n']}; run {arm['seconds']} s{shown}")
    return "\n".join(lines) + "\n"
