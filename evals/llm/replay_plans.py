"""Recorded plans replayed at several rewrite weights: ``python -m evals.llm.replay_plans REPORT``.

The answer evaluation (``python -m evals.llm``) records, for every question, the queries and time
window its planner gave (``rows[].queries``, ``rows[].time_window``). This replays them without
the model: a scripted OpenAI-compatible server (``tests.fake_openai``) answers each planning
request with the recorded plan of that question, and real ``mcp-memory serve --transport http``
processes (one embedded PostgreSQL, the sample's conversations stored once, no answer model) are
asked every question with ``top_k`` 10 at each ``recall.rewrite_weight`` given, plus once with no
plan model. Scored: recall@10 of the evidence turns per LoCoMo category, and per weight how many
questions got better or worse than weight 1 (or than unplanned when 1 is not among the weights).

A real model's plans cost about 2 s each here; a replay costs milliseconds, so fusion settings can
be compared on the plans a real model gave, all in one run. The stored data, the embedding model
and the fusion are the product's own; only the planner's replies are played back.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

import anyio
from mcp import Client

from benchmarks.harness import ServerProcess
from evals.llm.answers import call, ingest, recall_at
from evals.llm.evaluate import free_port
from evals.locomo import default_data_path
from evals.locomo_data import CATEGORY_NAMES, load_locomo
from tests.fake_openai import ChatReply, FakeOpenAI

__all__ = ["replay"]

logger = logging.getLogger(__name__)

PLANNER = "replayed-planner"


class ReplayedPlanner:
    """A scripted planner: the recorded plan of each question, looked up by the question's text."""

    def __init__(self, rows: Sequence[dict[str, Any]]) -> None:
        self._plans: dict[str, dict[str, Any]] = {}
        for row in rows:
            plan = {"queries": row["queries"][1:], "time_window": row["time_window"]}
            if self._plans.setdefault(row["question"], plan) != plan:
                raise ValueError(f"two recorded plans for one question: {row['question']!r}")
        self._fake = FakeOpenAI()
        self._fake.set_chat_handler(self._reply)
        self.unknown = 0

    def __enter__(self) -> Self:
        self._fake.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._fake.stop()

    @property
    def base_url(self) -> str:
        return self._fake.base_url

    def _reply(self, body: dict[str, Any]) -> ChatReply:
        question = next((m.get("content", "") for m in body.get("messages", []) if m.get("role") == "user"), "")
        plan = self._plans.get(question)
        if plan is None:
            self.unknown += 1
            return ChatReply(status=400)
        return ChatReply(json.dumps(plan), model=PLANNER)


async def _ask(port: int, rows: Sequence[dict[str, Any]], turns_of: dict[str, dict[str, list[str]]]
               ) -> list[float]:
    scores = []
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        for row in rows:
            result = await call(client, "recall_memory", {"session": row["sample_id"], "query": row["question"],
                                                          "top_k": 10})
            ids = [memory["memory_id"] for memory in result["memories"]]
            scores.append(recall_at(ids, turns_of[row["sample_id"]], row["evidence"], 10))
    return scores


def _summary(rows: Sequence[dict[str, Any]], scores: Sequence[float], base: Sequence[float]) -> dict[str, Any]:
    groups: dict[str, Any] = {}
    for key in [*sorted({str(r["category"]) for r in rows}), "all"]:
        picked = [i for i, r in enumerate(rows) if key == "all" or str(r["category"]) == key]
        groups[key] = {"n": len(picked), "recall_at_10": round(100 * statistics.fmean(scores[i] for i in picked), 1),
                       "better": sum(scores[i] > base[i] for i in picked),
                       "worse": sum(scores[i] < base[i] for i in picked)}
    return groups


async def replay(report: dict[str, Any], arm: str, weights: Sequence[float], data_file: Path, data_dir: Path
                 ) -> dict[str, Any]:
    """Store the report's conversations, replay its arm's plans at each weight; the per-category table."""
    rows = report["arms"][arm]["rows"]
    conversations, _ = load_locomo(data_file, report["conversations"])
    shutil.rmtree(data_dir, ignore_errors=True)
    data_dir.mkdir(parents=True)
    with ServerProcess(data_dir, free_port()) as plain:
        async with Client(f"http://127.0.0.1:{plain.port}/mcp") as client:
            turns_of = (await ingest(client, conversations))["turns_of"]
        unplanned = await _ask(plain.port, rows, turns_of)
    scores: dict[str, list[float]] = {"unplanned": unplanned}
    with ReplayedPlanner(rows) as planner:
        for weight in weights:
            env = {"MCP_MEMORY_LLM__BASE_URL": planner.base_url, "MCP_MEMORY_LLM__API_KEY": "replay",
                   "MCP_MEMORY_LLM__PLAN_MODEL": PLANNER, "MCP_MEMORY_LLM__MAX_RETRIES": "0",
                   "MCP_MEMORY_RECALL__REWRITE_WEIGHT": str(weight)}
            with ServerProcess(data_dir, free_port(), env=env) as server:
                scores[f"rewrite_weight {weight:g}"] = await _ask(server.port, rows, turns_of)
        if planner.unknown:
            raise RuntimeError(f"{planner.unknown} planning request(s) asked a question with no recorded plan")
    baseline = "rewrite_weight 1" if "rewrite_weight 1" in scores else "unplanned"
    base = scores[baseline]
    return {"source": report.get("server_env", {}), "arm": arm, "questions": len(rows),
            "baseline": baseline, "results": {name: _summary(rows, values, base) for name, values in scores.items()}}


def markdown(result: dict[str, Any]) -> str:
    """One row per weight: recall@10 per category and over all, and better/worse than the baseline."""
    categories = [k for k in next(iter(result["results"].values())) if k != "all"]
    head = " | ".join(f"{k} {CATEGORY_NAMES[int(k)]}" for k in categories)
    baseline = "weight 1" if result["baseline"] == "rewrite_weight 1" else "unplanned"
    lines = [f"| plans | {head} | all | better / worse than {baseline} |", "|---" * (len(categories) + 3) + "|"]
    for name, groups in result["results"].items():
        cells = " | ".join(str(groups[k]["recall_at_10"]) for k in categories)
        lines.append(f"| {name} | {cells} | {groups['all']['recall_at_10']} | "
                     f"{groups['all']['better']} / {groups['all']['worse']} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.llm.replay_plans", description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="an answer evaluation's JSON report")
    parser.add_argument("--arm", default="main", help="the arm whose plans are replayed")
    parser.add_argument("--weights", default="1,0.5,0.25,0", help="recall.rewrite_weight values, comma-separated")
    parser.add_argument("--data", type=Path, default=None, help="locomo10.json (default: as evals.locomo)")
    parser.add_argument("--data-dir", type=Path, required=True, help="emptied, then holds the embedded PostgreSQL")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON result here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s")
    report = json.loads(args.report.read_text(encoding="utf-8"))
    weights = [float(w) for w in args.weights.split(",")]
    result = anyio.run(replay, report, args.arm, weights, args.data or default_data_path(), args.data_dir)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
