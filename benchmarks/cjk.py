"""A Chinese session for recall A/Bs: the mixed suite's Chinese memories, bulk-loaded.

Usage::

    python -m benchmarks.cjk --data-dir /tmp/mcpm-zh --size 10000
    # store_memory of the Chinese texts: a baseline copy of the package (A) against the working tree (B)
    python -m benchmarks.cjk --data-dir /tmp/mcpm-zh-store --store --baseline /tmp/mcpm-base
    python -m benchmarks.compare --data-dir /tmp/mcpm-zh --sessions bench-zh-10000 --questions zh \
        --concurrency 1,10 "--a-args=--config=/tmp/bigrams-only.toml"

The mixed suite (``evals/cases/mixed.json``) holds a few hundred Chinese memories and 52 Chinese
questions. ``--size`` memories of session ``bench-zh-<size>`` cycle through those texts as
``benchmarks.load`` does with English ones (each text embedded once with the server's model, later
uses with N(0, 0.01^2) noise; one minute apart), with the indexes dropped and rebuilt around the
load. ``questions()`` gives the Chinese questions to ``benchmarks.compare --questions zh``. Every
recall of them runs the CJK list (bigrams and single characters), which English questions never do.

``--store`` instead stores each text ``--rounds`` times through each of two servers, alternating A
and B (A: the package under ``--baseline``), each on its own database under ``--data-dir`` (``a/``,
``b/``) so that B's migrations stay out of A's, and prints client-side milliseconds per store.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import anyio
import numpy as np

from benchmarks.harness import McpHttp, ServerProcess, percentiles
from benchmarks.load import connect, drop_indexes, fill, rebuild_indexes
from mcp_memory.embedding.embed import load_embedder
from mcp_memory.settings import Settings

__all__ = ["questions", "texts"]

CASES = Path(__file__).resolve().parent.parent / "evals" / "cases" / "mixed.json"


def texts() -> list[str]:
    """The mixed suite's Chinese memories, each once, in file order."""
    memories = json.loads(CASES.read_text(encoding="utf-8"))["memories"]
    return list(dict.fromkeys(m["content"] for m in memories if m["language"] == "zh"))


def questions(limit: int) -> list[str]:
    """The mixed suite's Chinese questions, cycled up to ``limit``."""
    asked = [q["query"] for q in json.loads(CASES.read_text(encoding="utf-8"))["questions"] if q["language"] == "zh"]
    return [asked[i % len(asked)] for i in range(limit)]


async def store(args: argparse.Namespace) -> None:
    """Each Chinese text stored through A and B in turn; milliseconds per store_memory call."""
    for side in ("a", "b"):  # a database each: B's migrations (and triggers) must not reach A
        (args.data_dir / side).mkdir(parents=True, exist_ok=True)
    times: dict[str, list[float]] = {"A": [], "B": []}
    with ServerProcess(args.data_dir / "a", args.port, env={"PYTHONPATH": str(args.baseline)}), \
            ServerProcess(args.data_dir / "b", args.port + 1):
        async with McpHttp(args.port) as a, McpHttp(args.port + 1) as b:
            for round_ in range(args.rounds):
                for text in texts():
                    for name, client in (("A", a), ("B", b)):
                        _, ms = await client.call("store_memory", {"session": f"store-{name.lower()}",
                                                                   "content": f"{text}（{round_}）"})
                        times[name].append(ms)
    report = {name: percentiles(values) for name, values in times.items()}
    report["p50_B_minus_A_ms"] = round(report["B"]["p50"] - report["A"]["p50"], 2)
    print(json.dumps(report))


async def main(args: argparse.Namespace) -> None:
    if args.store:
        await store(args)
        return
    settings = Settings(data_dir=args.data_dir)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    pool = await connect(settings)
    session = f"bench-zh-{args.size}"
    try:
        if await pool.fetchval("SELECT n FROM memory_stats WHERE session = $1", session) == args.size:
            print(json.dumps({"session": session, "loaded": "already"}))
            return
        contents = texts()
        embedder = await load_embedder(settings.embedding, settings.data_dir / "models")
        vectors = np.stack(await embedder.embed_batch(contents)).astype(np.float32)
        await drop_indexes(pool)
        await pool.execute("DELETE FROM memories WHERE session = $1", session)
        seconds = await fill(pool, session, args.size, contents, vectors)
        built = await rebuild_indexes(pool)
        print(json.dumps({"session": session, "texts": len(contents), "copy_s": round(seconds, 1), "build_s": built}))
    finally:
        await pool.close()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--size", type=int, default=10_000, help="memories in session bench-zh-<size>")
    parser.add_argument("--store", action="store_true", help="time store_memory of the texts, A against B")
    parser.add_argument("--baseline", type=Path, help="with --store: folder holding the baseline mcp_memory/")
    parser.add_argument("--rounds", type=int, default=2, help="with --store: times each text is stored")
    parser.add_argument("--port", type=int, default=18761)
    return parser


if __name__ == "__main__":
    anyio.run(main, _parser().parse_args())
