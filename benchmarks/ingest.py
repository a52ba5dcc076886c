"""Ingest through the store_memory tool over HTTP, one at a time and concurrently.

Usage::

    python -m benchmarks.ingest --data-dir /tmp/mcpm-bench --port 18732 --count 600 --concurrency 1,10,50

Texts are LoCoMo turns (chat-turn length, median about 100 characters), each stored once per
run in a fresh session. Same-run baselines: the embedding model called one text at a time vs
in batches of 64 in this process (no server), showing what the server's Coalescer can gain.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks.harness import McpHttp, ServerProcess, percentiles, run_load
from benchmarks.load import DATA
from mcp_memory.embedding.embed import load_embedder
from mcp_memory.settings import Settings


def turns() -> list[str]:
    found: dict[str, None] = {}
    for sample in json.loads((DATA / "locomo10.json").read_text()):
        for key, value in sample["conversation"].items():
            if key.startswith("session_") and isinstance(value, list):
                for turn in value:
                    found[f"{turn['speaker']}: {turn['text']}"] = None
    return list(found)


async def embedding_baseline(settings: Settings, texts: list[str]) -> dict[str, Any]:
    embedder = load_embedder(settings.embedding, settings.data_dir / "models")
    model = await embedder
    await model.embed_batch(texts[:8])
    started = time.perf_counter()
    for text in texts:
        await model.embed_batch([text])
    one = time.perf_counter() - started
    started = time.perf_counter()
    for start in range(0, len(texts), 64):
        await model.embed_batch(texts[start : start + 64])
    batched = time.perf_counter() - started
    return {"texts": len(texts), "one_at_a_time_per_s": round(len(texts) / one, 1),
            "batched_64_per_s": round(len(texts) / batched, 1)}


async def main(args: argparse.Namespace) -> None:
    settings = Settings(data_dir=args.data_dir)
    texts = turns()
    report: dict[str, Any] = {"runs": []}
    report["embedding_baseline"] = await embedding_baseline(settings, texts[: min(args.count, 400)])
    print(json.dumps(report["embedding_baseline"]), flush=True)
    with ServerProcess(args.data_dir, args.port) as server:
        async with McpHttp(args.port) as client:
            await client.call("store_memory", {"session": "ingest-warmup", "content": "warm-up"})
            for round_no, concurrency in enumerate(args.concurrency):
                session = f"ingest-{int(time.time())}-{concurrency}"
                offset = (round_no * args.count) % max(1, len(texts) - args.count)

                async def one(i: int, session: str = session, offset: int = offset) -> float:
                    _, ms = await client.call("store_memory", {"session": session, "content": texts[offset + i]})
                    return ms

                latencies, wall = await run_load(one, concurrency, args.count)
                run = {"concurrency": concurrency, "stored": args.count, "per_s": round(args.count / wall, 1),
                       **percentiles(latencies), "peak_rss_mb": round(server.peak_rss / 2**20, 1)}
                report["runs"].append(run)
                print(json.dumps(run), flush=True)
                await client.call("delete_memory", {"session": session, "all": True, "confirm": session})
            await client.call("delete_memory", {"session": "ingest-warmup", "all": True, "confirm": "ingest-warmup"})
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--port", type=int, default=18732)
    parser.add_argument("--count", type=int, default=600)
    parser.add_argument("--concurrency", type=lambda s: [int(x) for x in s.split(",")], default=[1, 10, 50])
    parser.add_argument("--json", type=Path)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())
