"""Where a recall's milliseconds go, in process: each stage, the parts of fuse, the audit write, and the
query embedding alone beside the embedding inside a recall.

Usage::

    python -m benchmarks.floor --data-dir /tmp/mcpm-floor ...      # once: stores the session floor-2000
    python -m benchmarks.recall_stages --data-dir /tmp/mcpm-floor --memories 2000 --requests 300

No MCP, no HTTP: ``pipeline.recall.trace`` is called directly on the session ``benchmarks.floor``
stores (LoCoMo's first 2,000 turns at their real times), with that benchmark's questions and the
server's default settings. Per question, in this order: the query embedding alone (the question's first
window, as recall embeds it), ``trace`` (its audit row's stage times), then the audit row written
(``pipeline.audit.record``, one INSERT and its commit) and, for the parts of fuse, the pool's rows
fetched again (``Repository.fetch``, one round trip) and the no-LLM update rule run again on the pool
(``order_updates``, in-process CPU). Reported: p50 and mean of each, in milliseconds, with the load
average before and after; ``embed_inside_minus_alone`` is what the lists running beside the model cost
the embedding. The audit rows written land in the session like any recall's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks.floor import conversations
from mcp_memory.deps import Deps
from mcp_memory.pipeline.audit import record
from mcp_memory.pipeline.implicit_updates import order_updates
from mcp_memory.pipeline.recall import trace
from mcp_memory.settings import Settings


def _summary(values: list[float]) -> dict[str, float]:
    return {"p50": round(statistics.median(values), 3), "mean": round(statistics.mean(values), 3)}


async def main(args: argparse.Namespace) -> dict[str, Any]:
    deps = Deps(Settings(data_dir=args.data_dir))
    await deps.start()
    try:
        ready = await deps.ready()
        session = f"floor-{args.memories}"
        held = (await ready.repository.session_version(session)).memories
        if held == 0:
            raise SystemExit(f"{session} is empty in {args.data_dir}: run benchmarks.floor on it first")
        _, asked = conversations(args.memories)
        asked = asked[:: max(1, len(asked) // args.requests)][: args.requests]
        embedder = ready.embedder
        report: dict[str, Any] = {"session": session, "memories": held, "questions": len(asked),
                                  "load_before": os.getloadavg()}
        for question in asked[:20]:  # warm-up: model, pool, the vector copy, dateparser
            await trace(ready, session, question)
        times: dict[str, list[float]] = {}

        def add(name: str, ms: float) -> None:
            times.setdefault(name, []).append(ms)

        for question in asked:
            started = time.perf_counter()
            await embedder.embed_batch([embedder.windows(question)[0]])
            add("embed_alone", (time.perf_counter() - started) * 1000)
            result, detail = await trace(ready, session, question)
            for stage, ms in detail["latency_ms"].items():
                add(f"trace.{stage}", ms)
            started = time.perf_counter()
            await record(ready.repository, session, "recall", detail)
            add("audit_write", (time.perf_counter() - started) * 1000)
            add("audit_chars", len(json.dumps(detail, default=str)))
            pool_ids = [entry["memory_id"] for entry in detail["fused"]]
            started = time.perf_counter()
            rows = await ready.repository.fetch(session, pool_ids)
            add("fuse.fetch", (time.perf_counter() - started) * 1000)
            candidates = [rows[memory_id] for memory_id in pool_ids if memory_id in rows]
            started = time.perf_counter()
            await order_updates(ready, session, question, candidates)
            add("fuse.order_updates", (time.perf_counter() - started) * 1000)
        report["load_after"] = os.getloadavg()
        report["ms"] = {name: _summary(values) for name, values in times.items()}
        inside, alone = report["ms"]["trace.embed"]["p50"], report["ms"]["embed_alone"]["p50"]
        report["embed_inside_minus_alone"] = round(inside - alone, 3)
        return report
    finally:
        await deps.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/mcpm-floor"))
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    return parser


if __name__ == "__main__":
    arguments = _parser().parse_args()
    result = anyio.run(main, arguments)
    text = json.dumps(result, indent=2)
    print(text)
    if arguments.json:
        arguments.json.write_text(text + "\n")
